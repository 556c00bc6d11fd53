/** Repository for `operator_credits`: bonus and funds credits with their CRM references (one query, one name). */
import type { Insertable, Kysely, Selectable, Transaction } from 'kysely';
import { createQueryTemplate } from './query-template.js';
import type { Database, OperatorCreditsTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;
export type CreditRow = Selectable<OperatorCreditsTable>;
export type NewCredit = Insertable<OperatorCreditsTable>;

export async function findCreditByKey(db: Db, dedupKey: string): Promise<CreditRow | undefined> {
  return db.selectFrom('operator_credits').selectAll().where('dedup_key', '=', dedupKey).executeTakeFirst();
}

/**
 * Inserts the credit unless one with its dedup_key exists; answers the new id, or undefined when the key was taken.
 * On PostgreSQL a concurrent insert of the same key waits for the other transaction and then yields to it, so the
 * unique constraint decides which of two concurrent repeats credits.
 */
export async function insertCreditUnlessKnown(db: Db, row: NewCredit): Promise<number | undefined> {
  const inserted = await db
    .insertInto('operator_credits')
    .values(row)
    .onConflict((oc) => oc.column('dedup_key').doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted ? Number(inserted.id) : undefined;
}

/**
 * Takes over a credit for another attempt: one that failed, or one left `pending` before `staleBefore` (its process
 * died mid-call). The WHERE clause makes the take-over atomic, so of two concurrent repeats only one forwards.
 */
export async function reclaimCredit(db: Db, id: number, request_json: string, now: number, staleBefore: number): Promise<boolean> {
  const result = await db
    .updateTable('operator_credits')
    .set({ state: 'pending', request_json, http_status: null, answer_json: null, updated_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('state', '=', 'failed'), eb.and([eb('state', '=', 'pending'), eb('updated_at', '<', staleBefore)])]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function recordCreditOutcome(
  db: Db,
  id: number,
  outcome: { state: 'done' | 'failed'; http_status: number | null; answer_json: string | null },
  now: number,
): Promise<void> {
  await db
    .updateTable('operator_credits')
    .set({ ...outcome, updated_at: now })
    .where('id', '=', id)
    .execute();
}

export async function findCreditsByUser(db: Db, userId: string, limit: number): Promise<CreditRow[]> {
  return db.selectFrom('operator_credits').selectAll().where('user_id', '=', userId).orderBy('id', 'desc').limit(limit).execute();
}

/** The credit a bonus event names by credit_id (the id POST /bonus/credit and /bonus/credit/funds answered). */
export async function findCreditById(db: Db, id: number): Promise<CreditRow | undefined> {
  return db.selectFrom('operator_credits').selectAll().where('id', '=', id).executeTakeFirst();
}

// Compiled once: the relay runs it for every bonus event without credit_id (src/ledger/query-template.ts). The
// matching credits (the few of one player and bonus code in the window) are read whole and the newest is picked
// below: on SQLite, `order by id desc limit 1` here cost 13–23 µs a call against 3–4 µs for the plain indexed read,
// even with no credit at all, and this runs for a sixth of the relay benchmark's events (bench/README.md, relay).
const creditsForBonusTemplate = createQueryTemplate((db: Kysely<Database>, q: { userId: string; bonusCode: string; since: number; failed: 'failed' }) =>
  db
    .selectFrom('operator_credits')
    .selectAll()
    .where('user_id', '=', q.userId)
    .where('bonus_code', '=', q.bonusCode)
    .where('created_at', '>=', q.since)
    .where('state', '!=', q.failed),
);

/** The newest credit of a user and bonus code made at or after `since` that did not fail: a bonus event's fallback match. */
export async function findLatestCreditForBonus(db: Db, userId: string, bonusCode: string, since: number): Promise<CreditRow | undefined> {
  const { rows } = await creditsForBonusTemplate(db, { userId, bonusCode, since, failed: 'failed' });
  let newest: CreditRow | undefined;
  for (const row of rows as CreditRow[]) if (!newest || Number(row.id) > Number(newest.id)) newest = row;
  return newest;
}
