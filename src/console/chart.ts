/**
 * Delivery outcomes over time as inline SVG, drawn here (no chart library, no script): one row of bars per
 * outcome, each row on its own scale, so 77 failures show beside 67,677 deliveries instead of vanishing into one
 * linear axis. Each bar has a <title>, so hovering shows its count and screen readers can read it.
 */
import { html } from 'hono/html';
import type { OutcomeCounts } from '../ledger/delivery-stats.js';

export const CHART_SERIES: ReadonlyArray<{ outcome: keyof OutcomeCounts; label: string; colour: string }> = [
  { outcome: 'delivered', label: 'delivered', colour: '#2da44e' },
  { outcome: 'undelivered', label: 'undelivered', colour: '#d4a72c' },
  { outcome: 'failed', label: 'failed', colour: '#cf222e' },
  { outcome: 'delivery_unknown', label: 'unknown', colour: '#8c959f' },
];

export const WIDTH = 720;
const LEFT = 92;
const ROW = 40;
const GAP = 8;
const AXIS = 18;

export function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}

export function renderOutcomeChart(chart: { label: string; spanMs: number; buckets: Array<{ bucketStart: number; counts: OutcomeCounts }> }) {
  const height = CHART_SERIES.length * (ROW + GAP) + AXIS;
  const slot = (WIDTH - LEFT) / chart.buckets.length;
  const barWidth = Math.max(1, slot * 0.8);
  const labelEvery = Math.ceil(chart.buckets.length / 6);

  const rows = CHART_SERIES.map((s, row) => {
    const top = row * (ROW + GAP);
    const base = top + ROW;
    const max = Math.max(0, ...chart.buckets.map((b) => b.counts[s.outcome]));
    const total = chart.buckets.reduce((sum, b) => sum + b.counts[s.outcome], 0);
    const bars = chart.buckets.map((bucket, i) => {
      const n = bucket.counts[s.outcome];
      if (n === 0) return '';
      // At least 2 px: a single failure next to a busy hour is still a visible mark.
      const h = Math.max(2, (n / max) * (ROW - 4));
      const x = LEFT + i * slot + (slot - barWidth) / 2;
      return html`<rect x="${x.toFixed(1)}" y="${(base - h).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${h.toFixed(1)}" fill="${s.colour}"><title>${clock(bucket.bucketStart)} UTC: ${n} ${s.label}</title></rect>`;
    });
    return html`<g data-outcome="${s.outcome}"><text x="0" y="${top + 14}" fill="#1d2733" font-size="11">${s.label}</text>
<text x="0" y="${top + 28}">${total} total</text><text x="${LEFT - 6}" y="${top + 9}" text-anchor="end">${max}</text>
<line x1="${LEFT}" y1="${base}" x2="${WIDTH}" y2="${base}" stroke="#d8dee4"></line>${bars}</g>`;
  });
  const ticks = chart.buckets.map((bucket, i) =>
    i % labelEvery === 0
      ? html`<text x="${(LEFT + i * slot + slot / 2).toFixed(1)}" y="${height - 4}" text-anchor="middle">${clock(bucket.bucketStart)}</text>`
      : '',
  );

  return html`<figure>
<figcaption>${chart.label} (UTC): each outcome on its own scale, the number left of a row is its tallest bar</figcaption>
<svg role="img" aria-label="${chart.label}" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" font-size="10" fill="#5b6773">
${rows}${ticks}
</svg>
</figure>`;
}
