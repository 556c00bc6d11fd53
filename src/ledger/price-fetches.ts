/**
 * Queries of the price fetches (`price_fetches`, docs/costs.md "Twilio"): messages whose price is still to be asked of
 * their provider after their final status. Queued in the receipt's transaction, claimed a few at a time with a lease
 * (several instances share the table), and finished or put off after each ask, which happens outside any transaction.
 * One that is given up (costs.twilio_price_fetch.max_attempts, or a provider that has no prices to ask) is dead: it
 * keeps done = 0 with next_attempt_at = PRICE_FETCH_DEAD, so no claim takes it, the owed and dead counts both read
 * the partial index price_fetches_due, and a replay makes it due again (no column was needed for the state).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { inTransaction } from './engine/db.js';
import { dialectFlagsOf } from './engine/flags.js';
import { ROWS_PER_STATEMENT, statementChunks } from './chunks.js';
import type { Database, PriceFetchesTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

export type QueuedPriceFetch = Pick<PriceFetchesTable, 'sms_id' | 'provider' | 'provider_message_id' | 'next_attempt_at'>;

/** Queues the fetches; a message already queued keeps its row. */
export async function queuePriceFetches(db: Db, rows: readonly QueuedPriceFetch[]): Promise<void> {
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) {
    await db
      .insertInto('price_fetches')
      .values([...part])
      .onConflict((oc) => oc.column('sms_id').doNothing())
      .execute();
  }
}

export type ClaimedPriceFetch = Pick<PriceFetchesTable, 'sms_id' | 'provider' | 'provider_message_id'> & { attempts: number };

/**
 * Takes up to `limit` due fetches for `leaseMs`: another instance passes them by (PostgreSQL: SKIP LOCKED) until the
 * lease ends, so each is asked once at a time. Oldest due first.
 */
export async function claimDuePriceFetches(db: Kysely<Database>, now: number, limit: number, leaseMs: number): Promise<ClaimedPriceFetch[]> {
  return inTransaction(db, async (trx) => {
    const lock = dialectFlagsOf(trx).skipLocked ? sql` for update skip locked` : sql``;
    const due = await sql<{ sms_id: string; provider: string; provider_message_id: string; attempts: number | string }>`
      select sms_id, provider, provider_message_id, attempts from price_fetches
      where done = 0 and next_attempt_at <= ${now} and claimed_until <= ${now}
      order by next_attempt_at limit ${limit}${lock}`.execute(trx);
    if (due.rows.length === 0) return [];
    await trx
      .updateTable('price_fetches')
      .set({ claimed_until: now + leaseMs })
      .where(
        'sms_id',
        'in',
        due.rows.map((r) => r.sms_id),
      )
      .execute();
    return due.rows.map((r) => ({ ...r, attempts: Number(r.attempts) }));
  });
}

/** The fetch is over: its price is recorded, or no more asks are worth making. */
export async function finishPriceFetch(db: Db, smsId: string, attempts: number, lastError: string | null): Promise<void> {
  await db.updateTable('price_fetches').set({ done: 1, attempts, last_error: lastError, claimed_until: 0 }).where('sms_id', '=', smsId).execute();
}

/** A dead fetch's next_attempt_at: never due, and above any time an owed one can have. */
export const PRICE_FETCH_DEAD = 9_007_199_254_740_991;

/** No more asks: the estimate stands until an operator replays it. */
export async function giveUpPriceFetch(db: Db, smsId: string, attempts: number, lastError: string): Promise<void> {
  await db
    .updateTable('price_fetches')
    .set({ attempts, next_attempt_at: PRICE_FETCH_DEAD, last_error: lastError, claimed_until: 0 })
    .where('sms_id', '=', smsId)
    .execute();
}

export interface PriceFetchBacklog {
  owed: number;
  /** Of those, asked at least once. */
  retrying: number;
  dead: number;
  /** The soonest next ask of an owed one. */
  nextAt: number | null;
}

/** Owed and dead fetches, both on the index of the ones not done. */
export async function countPriceFetchBacklog(db: Kysely<Database>): Promise<PriceFetchBacklog> {
  const r = await sql<{ owed: number | string | null; retrying: number | string | null; dead: number | string | null; next_at: number | string | null }>`
    select sum(case when next_attempt_at < ${PRICE_FETCH_DEAD} then 1 else 0 end) as owed,
      sum(case when next_attempt_at < ${PRICE_FETCH_DEAD} and attempts > 0 then 1 else 0 end) as retrying,
      sum(case when next_attempt_at >= ${PRICE_FETCH_DEAD} then 1 else 0 end) as dead,
      min(case when next_attempt_at < ${PRICE_FETCH_DEAD} then next_attempt_at end) as next_at
    from price_fetches where done = 0`.execute(db);
  const row = r.rows[0];
  const n = (v: number | string | null | undefined) => Number(v ?? 0);
  return { owed: n(row?.owed), retrying: n(row?.retrying), dead: n(row?.dead), nextAt: row?.next_at == null ? null : Number(row.next_at) };
}

export type DeadPriceFetch = Pick<PriceFetchesTable, 'sms_id' | 'provider' | 'provider_message_id' | 'last_error'> & { attempts: number };

/** The dead fetches, at most `limit`, by sms_id (they carry no time of their death). */
export async function listDeadPriceFetches(db: Kysely<Database>, limit: number): Promise<DeadPriceFetch[]> {
  const rows = await db
    .selectFrom('price_fetches')
    .select(['sms_id', 'provider', 'provider_message_id', 'attempts', 'last_error'])
    .where('done', '=', 0)
    .where('next_attempt_at', '>=', PRICE_FETCH_DEAD)
    .orderBy('sms_id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, attempts: Number(r.attempts) }));
}

/** Makes dead fetches due now with their asks counted afresh: the given ones, or all when `smsIds` is undefined. */
export async function replayDeadPriceFetches(db: Kysely<Database>, now: number, smsIds?: readonly string[]): Promise<number> {
  if (smsIds?.length === 0) return 0;
  let total = 0;
  for (const part of smsIds ? statementChunks(smsIds, ROWS_PER_STATEMENT) : [undefined]) {
    let q = db
      .updateTable('price_fetches')
      .set({ attempts: 0, next_attempt_at: now, claimed_until: 0 })
      .where('done', '=', 0)
      .where('next_attempt_at', '>=', PRICE_FETCH_DEAD);
    if (part) q = q.where('sms_id', 'in', [...part]);
    const r = await q.executeTakeFirst();
    total += Number(r.numUpdatedRows);
  }
  return total;
}

/** Asks again at `nextAt`. */
export async function deferPriceFetch(db: Db, smsId: string, attempts: number, nextAt: number, lastError: string | null): Promise<void> {
  await db
    .updateTable('price_fetches')
    .set({ attempts, next_attempt_at: nextAt, last_error: lastError, claimed_until: 0 })
    .where('sms_id', '=', smsId)
    .execute();
}
