/**
 * Everything the console's front page shows, from maintained counters and partial indexes only: delivery_stats
 * for totals and charts, conversions_unposted for the outbox, receipts_unmatched for parked receipts. Its cost
 * does not grow with the messages table (bench/console-summary.ts measures it at 10 million messages).
 */
import type { Kysely } from 'kysely';
import { countOutboxBacklog, type OutboxBacklog } from '../ledger/conversions.js';
import { countEventBacklog, type EventBacklog } from '../ledger/events.js';
import {
  emptyCounts,
  HOUR_MS,
  listDeliveryStatsSeries,
  MINUTE_MS,
  sumDeliveryStatsSince,
  sumSuppressionsSince,
  type OutcomeCounts,
} from '../ledger/delivery-stats.js';
import { countParkedReceiptsByProvider } from '../ledger/receipts.js';
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
  backlog: OutboxBacklog;
  parked: number;
  /** Sends refused because of the player's standing in the last 24 hours, per reason (sms.suppression). */
  suppressed: Array<{ reason: SuppressionReason; count: number }>;
  /** The CRM event outbox (src/ledger/events.ts): unsent, retrying, dead, oldest unsent. */
  events: EventBacklog;
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

export async function loadConsoleSummary(db: Kysely<Database>, providers: readonly string[], now: number): Promise<ConsoleSummary> {
  const windows = [await windowTotals(db, providers, 'Last hour', 60, now), await windowTotals(db, providers, 'Last 24 hours', 24 * 60, now)];
  const charts = [await chart(db, 'Last 24 hours, per hour', 'hour', 24, now), await chart(db, 'Last hour, per minute', 'minute', 60, now)];
  const backlog = await countOutboxBacklog(db);
  const parked = (await countParkedReceiptsByProvider(db)).reduce((sum, row) => sum + row.parked, 0);
  const refusals = await sumSuppressionsSince(db, now - 24 * HOUR_MS);
  const suppressed = SUPPRESSION_REASONS.map((reason) => ({ reason, count: refusals.get(reason) ?? 0 }));
  const events = await countEventBacklog(db);
  return { at: now, windows, charts, backlog, parked, suppressed, events };
}
