/** Repository for `receipts`: every valid provider event, matched to a message or parked until it can be. */
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import { createQueryTemplate } from './query-template.js';
import type { Database, ReceiptsTable } from './schema.js';
import { IDS_PER_STATEMENT, ROWS_PER_STATEMENT, idChunks, statementChunks } from './chunks.js';
import { dialectFlagsOf } from './engine/flags.js';
import { dayRangeOf } from './engine/partitions.js';
import { named } from './engine/statement-names.js';
import { isUniqueViolation } from './engine/write-errors.js';

type Db = Kysely<Database> | Transaction<Database>;
export type NewReceipt = Insertable<ReceiptsTable>;

/** The three states `receipts.matched` holds (src/ledger/schema.ts). */
export const RECEIPT_MATCH = {
  /** No message known yet: searched again by later sends and by the sweep. */
  parked: 0,
  /** Applied to its message. */
  applied: 1,
  /** Parked longer than delivery.parked_receipt_ttl: kept for the record, no longer searched. */
  setAside: 2,
} as const;

// Literals, not bound parameters: SQLite uses the partial index receipts_unmatched only when the WHERE clause
// visibly implies its condition.
const isParked = sql<boolean>`matched = ${sql.lit(RECEIPT_MATCH.parked)}`;
const isSetAside = sql<boolean>`matched = ${sql.lit(RECEIPT_MATCH.setAside)}`;

const insertReceiptsTemplate = createQueryTemplate((db: Kysely<Database>, rows: NewReceipt[]) =>
  db
    .insertInto('receipts')
    .values(rows)
    .onConflict((oc) => oc.column('dedup_key').doNothing())
    .returning('dedup_key'),
);

/**
 * PostgreSQL: receipts is partitioned by day (DialectFlags.partitionsByDay), and its key is (dedup_key, sms_id) with
 * nulls not distinct; without a target the conflict is found in whichever key the row's partition has.
 */
const insertPartitionedReceiptsTemplate = createQueryTemplate((db: Kysely<Database>, rows: NewReceipt[]) =>
  db
    .insertInto('receipts')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .returning('dedup_key'),
);

/** Inserts receipts not seen before; returns the dedup keys that were new (duplicates change nothing). */
export async function insertNewReceipts(db: Db, rows: NewReceipt[]): Promise<Set<string>> {
  const fresh = new Set<string>();
  const insert = dialectFlagsOf(db).partitionsByDay ? insertPartitionedReceiptsTemplate : insertReceiptsTemplate;
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) {
    const result = await insert(db, part);
    for (const r of result.rows) fresh.add(r.dedup_key);
  }
  return fresh;
}

/**
 * Which of these dedup keys are stored already (a receipt's key before it was matched: src/delivery/apply-receipts.ts).
 * `smsIds`: the messages the receipts were matched to now. Such a key is held by a parked receipt (no sms_id) or by one
 * applied to that message since; on PostgreSQL only those days' tables and the default partition are read
 * (DialectFlags.partitionsByDay).
 */
export async function findStoredDedupKeys(db: Db, keys: readonly string[], smsIds: readonly string[] = []): Promise<Set<string>> {
  const stored = new Set<string>();
  const prune = dialectFlagsOf(db).partitionsByDay;
  const messages = [...new Set(smsIds)];
  for (const chunk of idChunks([...new Set(keys)], IDS_PER_STATEMENT)) {
    let query = db.selectFrom('receipts').select('dedup_key').where('dedup_key', 'in', chunk);
    if (prune) query = query.where((eb) => eb.or([eb('sms_id', 'is', null), ...(messages.length > 0 ? [eb('sms_id', 'in', messages)] : [])]));
    for (const r of await query.execute()) stored.add(r.dedup_key);
  }
  return stored;
}

const anyParkedTemplate = createQueryTemplate((db: Kysely<Database>, _input: Record<string, never>) =>
  db.selectFrom('receipts').select(sql<number>`1`.as('one')).where(isParked).limit(1),
);

/**
 * PostgreSQL: only the parked receipts without an sms_id (all in the default partition) or naming a message of the
 * days of the messages just recorded (in those days' tables: dayRangeOf). Without it the probe looked in every day's
 * table (DialectFlags.partitionsByDay), and single sends paid for it; naming each id instead cost a batch's planning a
 * step per id. A receipt parked with an sms_id of another day (one this ledger does not hold, or whose provider it did
 * not name) is not for these sends; one of the same days is a false alarm, which costs one search by the providers'
 * ids. Named (src/ledger/engine/statement-names.ts): planned over the partitions, the probe took four times as long as
 * on the flat tables; its one text reads a partial index by two bounds, a plan that serves every run.
 */
function anyParkedOnDays([from, to]: [string, string]) {
  return named(sql<{ one: number }>`select 1 as one from receipts
    where ${isParked} and (sms_id is null or (sms_id >= ${from} and sms_id < ${to})) limit 1`);
}

/** As anyParkedOnDays, by the ids themselves: for ids whose day cannot be read. */
const anyParkedForTemplate = createQueryTemplate((db: Kysely<Database>, smsIds: string[]) =>
  db
    .selectFrom('receipts')
    .select(sql<number>`1`.as('one'))
    .where(isParked)
    .where((eb) => eb.or([eb('sms_id', 'is', null), eb('sms_id', 'in', smsIds)]))
    .limit(1),
);

/**
 * Whether any receipt waits for its message and could be found by the sends of `smsIds`, recorded now: an index
 * probe, so the send path can skip the search when none does (SQLite: any parked receipt at all).
 */
export async function anyParkedReceipts(db: Db, smsIds: readonly string[]): Promise<boolean> {
  if (!dialectFlagsOf(db).partitionsByDay || smsIds.length === 0) return (await anyParkedTemplate(db, {})).rows.length > 0;
  const days = dayRangeOf(smsIds);
  if (days) return (await anyParkedOnDays(days).execute(db)).rows.length > 0;
  for (const chunk of idChunks([...new Set(smsIds)], IDS_PER_STATEMENT)) if ((await anyParkedForTemplate(db, chunk)).rows.length > 0) return true;
  return false;
}

/**
 * Of the sms_ids that receipts parked without a message name, those their rows may keep. Partitioned by day
 * (DialectFlags.partitionsByDay), a receipt's row goes to the day of the sms_id it holds, and a day without a table (one
 * retention dropped, for a late report; one ahead of the tables made, for a forged id or another system's) takes no
 * row: only an sms_id a message holds is sure to have its day. The others are parked without one, their named id kept
 * in their key (receiptDedupKey). The flat tables keep every one, without a query.
 */
export async function storableNamedSmsIds(db: Db, smsIds: readonly string[]): Promise<Set<string>> {
  if (!dialectFlagsOf(db).partitionsByDay) return new Set(smsIds);
  const held = new Set<string>();
  for (const ids of idChunks([...new Set(smsIds)], IDS_PER_STATEMENT)) {
    for (const r of await db.selectFrom('messages').select('sms_id').where('sms_id', 'in', ids).execute()) held.add(r.sms_id);
  }
  return held;
}

/** Parked receipts in id order: all of them page by page (`afterId`), or those of some provider message ids. */
export async function findParkedReceipts(db: Db, limit: number, filter: { provider?: string; providerMessageIds?: string[]; afterId?: number } = {}) {
  let query = db.selectFrom('receipts').selectAll().where(isParked);
  if (filter.provider) query = query.where('provider', '=', filter.provider);
  if (filter.providerMessageIds) query = query.where('provider_message_id', 'in', filter.providerMessageIds);
  if (filter.afterId !== undefined) query = query.where('id', '>', filter.afterId);
  return query.orderBy('id').limit(limit).execute();
}

/**
 * Sets aside receipts parked since before `receivedBefore` (RECEIPT_MATCH.setAside): they stay in the table for the record
 * but are no longer searched for a message. Returns how many, per provider.
 */
export async function expireParkedReceipts(db: Db, receivedBefore: number): Promise<Map<string, number>> {
  const rows = await db
    .updateTable('receipts')
    .set({ matched: RECEIPT_MATCH.setAside })
    .where(isParked)
    .where('received_at', '<', receivedBefore)
    .returning('provider')
    .execute();
  const byProvider = new Map<string, number>();
  for (const r of rows) byProvider.set(r.provider, (byProvider.get(r.provider) ?? 0) + 1);
  return byProvider;
}

/**
 * Sets aside (RECEIPT_MATCH.setAside) a provider's parked receipts beyond its newest `keep`, oldest first, so the
 * receipts one source can leave waiting stay bounded; returns how many. Two portable statements: the id of the
 * `keep`-th newest parked receipt, then everything parked before it.
 */
export async function setAsideParkedBeyond(db: Db, provider: string, keep: number): Promise<number> {
  const statement = sql<{ id: number }>`select id from receipts where ${isParked} and provider = ${provider} order by id desc limit 1 offset ${keep - 1}`;
  // Named on a ledger partitioned by day (src/ledger/engine/statement-names.ts): parked receipts may be in any day's
  // table, and the statement was planned over all of them at each call (6 ms with 97 tables).
  const boundary = (await (dialectFlagsOf(db).partitionsByDay ? named(statement) : statement).execute(db)).rows[0];
  if (!boundary) return 0;
  const result = await db
    .updateTable('receipts')
    .set({ matched: RECEIPT_MATCH.setAside })
    .where(isParked)
    .where('provider', '=', provider)
    .where('id', '<', boundary.id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Deletes up to `limit` receipts set aside (RECEIPT_MATCH.setAside) that arrived before `receivedBefore`; returns how many.
 * Bounded so one sweep's transaction stays short however many a flood of receipts left behind.
 */
export async function deleteSetAsideReceipts(db: Db, receivedBefore: number, limit = 5_000): Promise<number> {
  const result = await db
    .deleteFrom('receipts')
    .where('id', 'in', (eb) => eb.selectFrom('receipts').select('id').where(isSetAside).where('received_at', '<', receivedBefore).limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Marks parked receipts applied to their message, each given the dedup key it would have had if matched on arrival
 * (`dedupKey`, led by its message's time: src/delivery/apply-receipts.ts) unless a receipt stored meanwhile holds it.
 * On PostgreSQL a copy that another instance stores at the same moment is not seen by that check, and the update
 * breaks the unique key: the savepoint takes the batch back, and it is marked again with the keys it had.
 */
export async function markReceiptsMatched(
  trx: Transaction<Database>,
  matches: Array<{ id: number; smsId: string; dedupKey: string; parkedSmsId: string | null }>,
): Promise<void> {
  if (matches.length === 0) return;
  // PostgreSQL partitioned by day (DialectFlags.partitionsByDay): a receipt is found by its id, which is no partition
  // key, so each update was planned over every day's table of receipts (3.5 ms a receipt with 97 of them). Naming the
  // sms_id it is parked under (none: the default partition) plans it over that table alone.
  const where = dialectFlagsOf(trx).partitionsByDay
    ? (m: (typeof matches)[number]) => sql<boolean>`id = ${m.id} and ${m.parkedSmsId === null ? sql`sms_id is null` : sql`sms_id = ${m.parkedSmsId}`}`
    : (m: (typeof matches)[number]) => sql<boolean>`id = ${m.id}`;
  await sql`savepoint mark_matched`.execute(trx);
  try {
    for (const m of matches) {
      // Held by a receipt of this message or by a parked one: named so, PostgreSQL looks in that day's table and the
      // default partition only (DialectFlags.partitionsByDay).
      const dedupKey = sql<string>`case when exists (select 1 from receipts where dedup_key = ${m.dedupKey} and (sms_id = ${m.smsId} or sms_id is null)) then dedup_key else ${m.dedupKey} end`;
      await trx.updateTable('receipts').set({ matched: RECEIPT_MATCH.applied, sms_id: m.smsId, dedup_key: dedupKey }).where(where(m)).execute();
    }
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    await sql`rollback to savepoint mark_matched`.execute(trx);
    for (const m of matches) {
      await trx.updateTable('receipts').set({ matched: RECEIPT_MATCH.applied, sms_id: m.smsId }).where(where(m)).execute();
    }
  }
  await sql`release savepoint mark_matched`.execute(trx);
}

export async function findReceiptsBySmsId(db: Db, smsId: string) {
  return db.selectFrom('receipts').selectAll().where('sms_id', '=', smsId).orderBy('id').execute();
}

/** Receipts waiting for their message, per provider; reads only the partial index receipts_unmatched. */
export async function countParkedReceiptsByProvider(db: Db): Promise<Array<{ provider: string; parked: number }>> {
  const rows = await db
    .selectFrom('receipts')
    .select((eb) => ['provider', eb.fn.countAll<number | string>().as('parked')])
    .where(isParked)
    .groupBy('provider')
    .execute();
  return rows.map((r) => ({ provider: r.provider, parked: Number(r.parked) }));
}

/** Receipts already stored for each of `smsIds` (the per-message cap, delivery.max_receipts_per_message). */
export async function countReceiptsBySmsId(db: Db, smsIds: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const ids of idChunks([...new Set(smsIds)], IDS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('receipts')
      .select((eb) => ['sms_id', eb.fn.countAll<number | string>().as('n')])
      .where('sms_id', 'in', ids)
      .groupBy('sms_id')
      .execute();
    for (const r of rows) counts.set(r.sms_id!, Number(r.n));
  }
  return counts;
}
