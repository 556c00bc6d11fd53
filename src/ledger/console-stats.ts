/**
 * The console's charts beyond the outcome counts (src/console/summary.ts): delivery rate per provider per hour,
 * receipt latency, refusals by reason. Each reads an index range whose size does not grow with the ledger:
 * delivery_stats' hour buckets, the newest terminal receipts per provider (messages_provider_created), the last
 * day's refusals (messages_status).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { emptyCounts, type OutcomeCounts } from './delivery-stats.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

export async function listHourlyStatsByProvider(db: Db, since: number): Promise<Array<{ bucketStart: number; provider: string; counts: OutcomeCounts }>> {
  const rows = await db
    .selectFrom('delivery_stats')
    .select(['bucket_start', 'provider', 'outcome', 'n'])
    .where(sql<boolean>`period = 'hour'`)
    .where('bucket_start', '>=', since)
    .execute();
  const series = new Map<string, { bucketStart: number; provider: string; counts: OutcomeCounts }>();
  for (const row of rows) {
    const key = `${row.bucket_start}|${row.provider}`;
    const entry = series.get(key) ?? { bucketStart: Number(row.bucket_start), provider: row.provider, counts: emptyCounts() };
    // Sends refused for the player's standing (suppressed_*) never reached a provider: not part of its outcomes.
    if (!Object.hasOwn(entry.counts, row.outcome)) continue;
    entry.counts[row.outcome as keyof OutcomeCounts] += Number(row.n);
    series.set(key, entry);
  }
  return [...series.values()];
}

/**
 * Send-to-terminal-receipt times (ms) of a provider's newest messages settled by a real receipt, created since
 * `since`, at most `limit` of them: enough for a p95, bounded whatever the traffic.
 */
export async function listReceiptLatencies(db: Db, provider: string, since: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('messages')
    .select(['submitted_at', 'completed_at'])
    .where('provider', '=', provider)
    .where('created_at', '>=', since)
    .where('delivery_source', '=', 'receipt')
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
  return rows.filter((r) => r.submitted_at !== null && r.completed_at !== null).map((r) => Math.max(0, Number(r.completed_at) - Number(r.submitted_at)));
}

/** Messages refused at send since `since`, counted by provider and reason (the provider's code, else its text). */
export async function countRefusalsByReason(db: Db, since: number, limit: number): Promise<Array<{ provider: string; reason: string; n: number }>> {
  const rows = await db
    .selectFrom('messages')
    .select((eb) => ['provider', sql<string>`coalesce(error_code, error, '(none given)')`.as('reason'), eb.fn.countAll<number | string>().as('n')])
    // Spelled as the messages_status index expression, so the range comes from that index.
    .where(sql<string>`coalesce(delivery_status, state)`, '=', 'rejected')
    .where('created_at', '>=', since)
    .groupBy(['provider', sql`coalesce(error_code, error, '(none given)')`])
    .orderBy('n', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ provider: r.provider, reason: r.reason, n: Number(r.n) }));
}
