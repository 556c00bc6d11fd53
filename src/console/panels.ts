/**
 * The console's at-a-glance panels beside the outcome charts: delivery rate per provider per hour (lines),
 * receipt latency p50/p95 per provider, refusals by reason (each outbox kind's panel is its area's: src/outbox/panel.ts).
 * Inline SVG and tables, no script.
 */
import { html } from 'hono/html';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import { clock, WIDTH } from './chart.js';
import type { ConsoleSummary } from './summary.js';

const LINE_COLOURS = ['#0b5cad', '#8250df', '#bc4c00', '#1a7f37', '#cf222e'];
const LEFT = 48;
const HEIGHT = 170;
const BOTTOM = 20;

/** "850 ms", "4.2 s", "3 min": a latency people read at once. */
export function duration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

export function renderRateChart(rates: ConsoleSummary['rates']) {
  const known = rates.flatMap((r) => r.points.map((p) => p.rate).filter((v): v is number => v !== null));
  // The axis starts at the lowest rate rounded down to 10 %, so 97 % and 99 % do not both sit on the top line.
  const floor = known.length ? Math.min(0.9, Math.floor(Math.min(...known) * 10) / 10) : 0;
  const plot = HEIGHT - BOTTOM - 8;
  const y = (rate: number) => 8 + (1 - (rate - floor) / (1 - floor)) * plot;
  const slot = (WIDTH - LEFT) / 24;
  const lines = rates.map((r, k) => {
    const colour = LINE_COLOURS[k % LINE_COLOURS.length]!;
    // A gap where an hour settled nothing: no line is drawn across it.
    const runs: string[][] = [[]];
    r.points.forEach((p, i) => {
      if (p.rate === null) runs.push([]);
      else runs[runs.length - 1]!.push(`${(LEFT + i * slot + slot / 2).toFixed(1)},${y(p.rate).toFixed(1)}`);
    });
    const dots = r.points.map((p, i) =>
      p.rate === null
        ? ''
        : html`<circle cx="${(LEFT + i * slot + slot / 2).toFixed(1)}" cy="${y(p.rate).toFixed(1)}" r="2.5" fill="${colour}"><title>${r.provider} ${clock(p.bucketStart)} UTC: ${(Math.floor(p.rate * 1000) / 10).toFixed(1)} % of ${p.settled}</title></circle>`,
    );
    return html`<g data-provider="${r.provider}">${runs.filter((run) => run.length > 1).map((run) => html`<polyline points="${run.join(' ')}" fill="none" stroke="${colour}" stroke-width="1.5"></polyline>`)}${dots}</g>`;
  });
  return html`<figure>
<figcaption>Delivery rate per provider, last 24 hours (UTC) · <span class="legend">${rates.map((r, k) => html`<span><i class="swatch" style="background:${LINE_COLOURS[k % LINE_COLOURS.length]}"></i>${r.provider}</span>`)}</span></figcaption>
<svg role="img" aria-label="Delivery rate per provider" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" font-size="10" fill="#5b6773">
<line x1="${LEFT}" y1="${HEIGHT - BOTTOM}" x2="${WIDTH}" y2="${HEIGHT - BOTTOM}" stroke="#d8dee4"></line>
<text x="${LEFT - 6}" y="12" text-anchor="end">100 %</text><text x="${LEFT - 6}" y="${HEIGHT - BOTTOM}" text-anchor="end">${Math.round(floor * 100)} %</text>
${rates[0]?.points.map((p, i) => (i % 4 === 0 ? html`<text x="${(LEFT + i * slot + slot / 2).toFixed(1)}" y="${HEIGHT - 4}" text-anchor="middle">${clock(p.bucketStart)}</text>` : ''))}
${lines}
</svg>
</figure>`;
}

export function renderLatency(latency: ConsoleSummary['latency']) {
  const max = Math.max(1, ...latency.map((l) => l.p95 ?? 0));
  const bar = (ms: number | null, colour: string) =>
    ms === null
      ? ''
      : html`<svg class="bar" viewBox="0 0 100 8" width="100" height="8" aria-hidden="true"><rect width="${Math.max(1, (ms / max) * 100).toFixed(1)}" height="8" fill="${colour}"></rect></svg> `;
  return html`<h3>Receipt latency, send to terminal receipt (last 24 hours)</h3>
<div class="scroll"><table data-table="latency"><thead><tr><th>provider</th><th class="num">p50</th><th class="num">p95</th><th class="num">receipts read</th></tr></thead>
<tbody>${latency.map((l) => html`<tr data-provider="${l.provider}"><td>${l.provider}</td><td class="num">${bar(l.p50, '#54aeff')}${duration(l.p50)}</td><td class="num">${bar(l.p95, '#0b5cad')}${duration(l.p95)}</td><td class="num">${l.n}</td></tr>`)}</tbody></table></div>`;
}

export function renderRefusals(refusals: ConsoleSummary['refusals']) {
  if (refusals.length === 0) return html`<h3>Refusals by reason (last 24 hours)</h3><p class="muted" data-table="refusals">No message was refused.</p>`;
  const max = Math.max(...refusals.map((r) => r.n));
  return html`<h3>Refusals by reason (last 24 hours)</h3>
<div class="scroll"><table data-table="refusals"><thead><tr><th>provider</th><th>reason</th><th class="num">messages</th></tr></thead>
<tbody>${refusals.map((r) => html`<tr><td>${r.provider}</td><td class="text">${maskPhoneNumbersIn(r.reason)}</td><td class="num"><svg class="bar" viewBox="0 0 100 8" width="100" height="8" aria-hidden="true"><rect width="${Math.max(1, (r.n / max) * 100).toFixed(1)}" height="8" fill="#cf222e"></rect></svg> ${r.n}</td></tr>`)}</tbody></table></div>
<p class="muted"><a href="/console?status=refused">The refused messages →</a></p>`;
}
