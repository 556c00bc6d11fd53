/**
 * Repository for `delivery_stats`: counters per minute and per hour, provider and outcome, written in the same
 * transactions that record send outcomes and terminal statuses. The console's totals and chart read these few
 * hundred rows; nothing here ever reads `messages`, so the console costs the same at 10 million messages.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { createQueryTemplate } from './query-template.js';
import type { Database, DeliveryStatsTable, SuppressedOutcome, SuppressionReason } from './schema.js';
import { ROWS_PER_STATEMENT, statementChunks } from './chunks.js';

type Db = Kysely<Database> | Transaction<Database>;
export type StatsOutcome = DeliveryStatsTable['outcome'];
export type StatsPeriod = DeliveryStatsTable['period'];

/** One thing that happened to one message (`n` defaults to 1; -1 takes a count back). */
export interface StatsEvent {
  at: number;
  provider: string;
  outcome: StatsOutcome;
  n?: number;
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
const PERIODS: ReadonlyArray<readonly [StatsPeriod, number]> = [
  ['minute', MINUTE_MS],
  ['hour', HOUR_MS],
];

/** Minute rows older than this are deleted by the sweep; hour rows are kept (24 a day per provider and outcome). */
export const MINUTE_STATS_RETENTION_MS = 2 * 24 * HOUR_MS;

/**
 * Sums events into one row per bucket, sorted by key. PostgreSQL refuses an upsert that touches one row twice,
 * and a fixed key order keeps two instances upserting the same buckets from deadlocking each other.
 */
export function toStatsRows(events: readonly StatsEvent[]): DeliveryStatsTable[] {
  const rows = new Map<string, DeliveryStatsTable>();
  for (const e of events) {
    for (const [period, span] of PERIODS) {
      const bucket_start = Math.floor(e.at / span) * span;
      const key = `${period}|${bucket_start}|${e.provider}|${e.outcome}`;
      const row = rows.get(key);
      if (row) row.n += e.n ?? 1;
      else rows.set(key, { period, bucket_start, provider: e.provider, outcome: e.outcome, n: e.n ?? 1 });
    }
  }
  const sorted = [...rows.entries()].filter(([, r]) => r.n !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sorted.map(([, r]) => r);
}

const upsertStatsTemplate = createQueryTemplate((db: Kysely<Database>, rows: DeliveryStatsTable[]) =>
  db
    .insertInto('delivery_stats')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['period', 'bucket_start', 'provider', 'outcome']).doUpdateSet((eb) => ({ n: eb('delivery_stats.n', '+', eb.ref('excluded.n')) })),
    ),
);

/**
 * The increments of one transaction's work, gathered as it runs and written once at its end (withStatsTally): the
 * functions that count are handed the tally and push onto it.
 */
export type StatsTally = StatsEvent[];

/**
 * Runs `work` in `trx` with a fresh tally and writes what it gathered in one upsert at the end. The counter rows are
 * where every writer meets: written last, they stay locked for the shortest time, and always after the message
 * rows, so two instances on PostgreSQL cannot deadlock over a shared transaction's mixed work.
 */
export async function withStatsTally<T>(trx: Transaction<Database>, work: (tally: StatsTally) => Promise<T>): Promise<T> {
  const tally: StatsTally = [];
  const result = await work(tally);
  await incrementDeliveryStats(trx, tally);
  return result;
}

/** Adds the events to their buckets now: one multi-row upsert for a whole flush, not one per message. */
export async function incrementDeliveryStats(db: Db, events: readonly StatsEvent[]): Promise<void> {
  const rows = toStatsRows(events);
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) await upsertStatsTemplate(db, part);
}

/** The send outcomes and delivery statuses; suppressed sends are counted apart (sumSuppressionsSince). */
export type OutcomeCounts = Record<Exclude<StatsOutcome, SuppressedOutcome>, number>;

export function emptyCounts(): OutcomeCounts {
  return { submitted: 0, rejected: 0, retryable: 0, delivered: 0, undelivered: 0, failed: 0, delivery_unknown: 0 };
}

async function sumRange(db: Db, period: StatsPeriod, from: number, to: number | undefined) {
  let query = db
    .selectFrom('delivery_stats')
    .select((eb) => ['provider', 'outcome', eb.fn.sum<number | string>('n').as('n')])
    .where('period', '=', period)
    .where('bucket_start', '>=', from);
  if (to !== undefined) query = query.where('bucket_start', '<', to);
  return query.groupBy(['provider', 'outcome']).execute();
}

/**
 * Totals per provider since `since`, at minute precision: whole hours from the hour rows, the partial hour at the
 * start of the window from the minute rows. At most 60 minute rows and 24 hour rows per provider and outcome.
 */
export async function sumDeliveryStatsSince(db: Db, since: number): Promise<Map<string, OutcomeCounts>> {
  const firstWholeHour = Math.ceil(since / HOUR_MS) * HOUR_MS;
  const rows = [
    ...(await sumRange(db, 'minute', Math.floor(since / MINUTE_MS) * MINUTE_MS, firstWholeHour)),
    ...(await sumRange(db, 'hour', firstWholeHour, undefined)),
  ];
  const totals = new Map<string, OutcomeCounts>();
  for (const row of rows) {
    const counts = totals.get(row.provider) ?? emptyCounts();
    if (!Object.hasOwn(counts, row.outcome)) continue;
    counts[row.outcome as keyof OutcomeCounts] += Number(row.n);
    totals.set(row.provider, counts);
  }
  return totals;
}

/** All providers together, one point per bucket of `period` since `since` (buckets without events are absent). */
export async function listDeliveryStatsSeries(db: Db, period: StatsPeriod, since: number): Promise<Array<{ bucketStart: number; counts: OutcomeCounts }>> {
  const rows = await db
    .selectFrom('delivery_stats')
    .select((eb) => ['bucket_start', 'outcome', eb.fn.sum<number | string>('n').as('n')])
    .where('period', '=', period)
    .where('bucket_start', '>=', since)
    .groupBy(['bucket_start', 'outcome'])
    .orderBy('bucket_start')
    .execute();
  const series = new Map<number, OutcomeCounts>();
  for (const row of rows) {
    const bucketStart = Number(row.bucket_start);
    const counts = series.get(bucketStart) ?? emptyCounts();
    if (!Object.hasOwn(counts, row.outcome)) continue;
    counts[row.outcome as keyof OutcomeCounts] += Number(row.n);
    series.set(bucketStart, counts);
  }
  return [...series].map(([bucketStart, counts]) => ({ bucketStart, counts }));
}

/** Sends refused before any provider call since `since` (hour precision), per reason, all providers together. */
export async function sumSuppressionsSince(db: Db, since: number): Promise<Map<SuppressionReason, number>> {
  const rows = await db
    .selectFrom('delivery_stats')
    .select((eb) => ['outcome', eb.fn.sum<number | string>('n').as('n')])
    .where('period', '=', 'hour')
    .where('bucket_start', '>=', Math.floor(since / HOUR_MS) * HOUR_MS)
    .where(sql<boolean>`substr(outcome, 1, 11) = 'suppressed_'`)
    .groupBy('outcome')
    .execute();
  return new Map(rows.map((r) => [r.outcome.slice('suppressed_'.length) as SuppressionReason, Number(r.n)]));
}

export async function deleteMinuteStatsBefore(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom('delivery_stats').where(sql<boolean>`period = 'minute'`).where('bucket_start', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
