/**
 * Everything the console's front page shows, from maintained counters and index ranges of bounded size:
 * delivery_stats for totals, charts and rates, the newest receipts per provider for latency and the last day's refusals
 * (ledger/console-stats.ts); each outbox kind's panel reads its own (src/outbox/panel.ts).
 * Its cost does not grow with the messages table (bench/console-summary.ts measures it at 10 million messages).
 */
import type { Kysely } from 'kysely';
import { countRefusalsByReason, listHourlyStatsByProvider, listReceiptLatencies } from '../ledger/console-stats.js';
import {
  emptyCounts,
  HOUR_MS,
  listDeliveryStatsSeries,
  MINUTE_MS,
  sumDeliveryStatsSince,
  sumSuppressionsSince,
  type OutcomeCounts,
} from '../ledger/delivery-stats.js';
import type { Database, SuppressionReason } from '../ledger/schema.js';

const SUPPRESSION_REASONS: readonly SuppressionReason[] = ['blocked', 'excluded', 'opted_out', 'no_consent'];

export interface WindowTotals {
  label: string;
  minutes: number;
  /** One row per provider (configured ones first, then any others seen in the counters), then `all`. */
  rows: Array<{ provider: string; counts: OutcomeCounts }>;
}

export interface ConsoleSummary {
  at: number;
  windows: WindowTotals[];
  /** Buckets from the first bucket of the window to now; missing buckets are zeros. */
  charts: Array<{ label: string; spanMs: number; from: number; buckets: Array<{ bucketStart: number; counts: OutcomeCounts }> }>;
  /** Delivered share per provider per hour of the last 24 (null where nothing settled in that hour). */
  rates: Array<{ provider: string; points: Array<{ bucketStart: number; rate: number | null; settled: number }> }>;
  /** Send to terminal receipt, over each provider's newest receipts of the last 24 hours. */
  latency: Array<{ provider: string; p50: number | null; p95: number | null; n: number }>;
  refusals: Array<{ provider: string; reason: string; n: number }>;
  /** Sends refused because of the player's standing in the last 24 hours, per reason (sms.suppression). */
  suppressed: Array<{ reason: SuppressionReason; count: number }>;
}

/** Receipts per provider the latency figures read: enough for a p95, bounded whatever the traffic. */
export const LATENCY_SAMPLE = 2_000;

/** The value below which a share p of the sorted values falls (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** Delivered share of the messages whose outcome is known; null before any is. */
export function deliveryRate(c: OutcomeCounts): number | null {
  const settled = c.delivered + c.undelivered + c.failed + c.delivery_unknown;
  return settled === 0 ? null : c.delivered / settled;
}

function addCounts(into: OutcomeCounts, from: OutcomeCounts): void {
  for (const key of Object.keys(into) as Array<keyof OutcomeCounts>) into[key] += from[key];
}

async function windowTotals(db: Kysely<Database>, providers: readonly string[], label: string, minutes: number, now: number): Promise<WindowTotals> {
  const totals = await sumDeliveryStatsSince(db, now - minutes * MINUTE_MS);
  const names = [...providers, ...[...totals.keys()].filter((p) => !providers.includes(p)).sort()];
  const all = emptyCounts();
  const rows = names.map((provider) => {
    const counts = totals.get(provider) ?? emptyCounts();
    addCounts(all, counts);
    return { provider, counts };
  });
  return { label, minutes, rows: [...rows, { provider: 'all', counts: all }] };
}

async function chart(db: Kysely<Database>, label: string, period: 'minute' | 'hour', count: number, now: number) {
  const spanMs = period === 'minute' ? MINUTE_MS : HOUR_MS;
  const from = Math.floor(now / spanMs) * spanMs - (count - 1) * spanMs;
  const series = new Map((await listDeliveryStatsSeries(db, period, from)).map((p) => [p.bucketStart, p.counts]));
  const buckets = Array.from({ length: count }, (_, i) => {
    const bucketStart = from + i * spanMs;
    return { bucketStart, counts: series.get(bucketStart) ?? emptyCounts() };
  });
  return { label, spanMs, from, buckets };
}

async function rateSeries(db: Kysely<Database>, names: readonly string[], now: number): Promise<ConsoleSummary['rates']> {
  const from = Math.floor(now / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
  const rows = await listHourlyStatsByProvider(db, from);
  const seen = [...names, ...new Set(rows.map((r) => r.provider).filter((p) => !names.includes(p)))];
  return seen.map((provider) => {
    const byHour = new Map(rows.filter((r) => r.provider === provider).map((r) => [r.bucketStart, r.counts]));
    const points = Array.from({ length: 24 }, (_, i) => {
      const bucketStart = from + i * HOUR_MS;
      const counts = byHour.get(bucketStart) ?? emptyCounts();
      return { bucketStart, rate: deliveryRate(counts), settled: counts.delivered + counts.undelivered + counts.failed + counts.delivery_unknown };
    });
    return { provider, points };
  });
}

export async function loadConsoleSummary(db: Kysely<Database>, providers: readonly string[], now: number): Promise<ConsoleSummary> {
  const windows = [await windowTotals(db, providers, 'Last hour', 60, now), await windowTotals(db, providers, 'Last 24 hours', 24 * 60, now)];
  const charts = [await chart(db, 'Last 24 hours, per hour', 'hour', 24, now), await chart(db, 'Last hour, per minute', 'minute', 60, now)];
  const dayAgo = now - 24 * HOUR_MS;
  const latency = [];
  for (const provider of providers) {
    const sample = (await listReceiptLatencies(db, provider, dayAgo, LATENCY_SAMPLE)).sort((a, b) => a - b);
    latency.push({ provider, p50: percentile(sample, 0.5), p95: percentile(sample, 0.95), n: sample.length });
  }
  const refusals = await countRefusalsByReason(db, dayAgo, 10);
  const suppressions = await sumSuppressionsSince(db, dayAgo);
  const suppressed = SUPPRESSION_REASONS.map((reason) => ({ reason, count: suppressions.get(reason) ?? 0 }));
  return {
    at: now,
    windows,
    charts,
    rates: await rateSeries(db, providers, now),
    latency,
    refusals,
    suppressed,
  };
}
