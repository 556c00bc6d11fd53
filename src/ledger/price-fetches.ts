/**
 * Queries of the price fetches (`price_fetches`, docs/costs.md "Twilio"): messages whose price is still to be asked of
 * their provider after their final status. Queued in the receipt's transaction, claimed a few at a time with a lease
 * (several instances share the table), and finished or put off after each ask, which happens outside any transaction.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { dialectFlagsOf, inTransaction } from './engine/db.js';
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

/** Asks again at `nextAt`. */
export async function deferPriceFetch(db: Db, smsId: string, attempts: number, nextAt: number, lastError: string | null): Promise<void> {
  await db
    .updateTable('price_fetches')
    .set({ attempts, next_attempt_at: nextAt, last_error: lastError, claimed_until: 0 })
    .where('sms_id', '=', smsId)
    .execute();
}
