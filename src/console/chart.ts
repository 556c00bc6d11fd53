/**
 * Delivery outcomes over time as an inline SVG of stacked bars, drawn here (no chart library, no script). Each
 * bar has a <title>, so hovering shows its counts and screen readers can read them.
 */
import { html } from 'hono/html';
import type { OutcomeCounts } from '../ledger/delivery-stats.js';

export const CHART_SERIES: ReadonlyArray<{ outcome: keyof OutcomeCounts; label: string; colour: string }> = [
  { outcome: 'delivered', label: 'delivered', colour: '#2da44e' },
  { outcome: 'undelivered', label: 'undelivered', colour: '#d4a72c' },
  { outcome: 'failed', label: 'failed', colour: '#cf222e' },
  { outcome: 'delivery_unknown', label: 'unknown', colour: '#8c959f' },
];

const WIDTH = 720;
const HEIGHT = 180;
const LEFT = 48;
const BOTTOM = 22;

function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}

export function renderOutcomeChart(chart: { label: string; spanMs: number; buckets: Array<{ bucketStart: number; counts: OutcomeCounts }> }) {
  const totals = chart.buckets.map((b) => CHART_SERIES.reduce((sum, s) => sum + b.counts[s.outcome], 0));
  const max = Math.max(1, ...totals);
  const plotHeight = HEIGHT - BOTTOM - 6;
  const slot = (WIDTH - LEFT) / chart.buckets.length;
  const barWidth = Math.max(1, slot * 0.8);
  const labelEvery = Math.ceil(chart.buckets.length / 8);

  const bars = chart.buckets.map((bucket, i) => {
    let y = HEIGHT - BOTTOM;
    const x = LEFT + i * slot + (slot - barWidth) / 2;
    const parts = CHART_SERIES.filter((s) => bucket.counts[s.outcome] > 0).map((s) => {
      const h = (bucket.counts[s.outcome] / max) * plotHeight;
      y -= h;
      return html`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${h.toFixed(1)}" fill="${s.colour}"></rect>`;
    });
    const title = `${clock(bucket.bucketStart)} UTC: ${CHART_SERIES.map((s) => `${bucket.counts[s.outcome]} ${s.label}`).join(', ')}`;
    const tick = i % labelEvery === 0 ? html`<text x="${(x + barWidth / 2).toFixed(1)}" y="${HEIGHT - 6}" text-anchor="middle">${clock(bucket.bucketStart)}</text>` : '';
    return html`<g><title>${title}</title>${parts}<rect x="${x.toFixed(1)}" y="6" width="${barWidth.toFixed(1)}" height="${plotHeight}" fill="transparent"></rect></g>${tick}`;
  });

  return html`<figure>
<figcaption>${chart.label} (UTC) · <span class="legend">${CHART_SERIES.map((s) => html`<span><i class="swatch" style="background:${s.colour}"></i>${s.label}</span>`)}</span></figcaption>
<svg role="img" aria-label="${chart.label}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" font-size="10" fill="#5b6773">
<line x1="${LEFT}" y1="${HEIGHT - BOTTOM}" x2="${WIDTH}" y2="${HEIGHT - BOTTOM}" stroke="#d8dee4"></line>
<text x="${LEFT - 6}" y="12" text-anchor="end">${max}</text>
<text x="${LEFT - 6}" y="${HEIGHT - BOTTOM}" text-anchor="end">0</text>
${bars}
</svg>
</figure>`;
}
