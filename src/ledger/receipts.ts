/** Repository for `receipts`: every valid provider event, matched to a message or parked until it can be. */
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import { createQueryTemplate } from './query-template.js';
import type { Database, ReceiptsTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;
export type NewReceipt = Insertable<ReceiptsTable>;

const insertReceiptsTemplate = createQueryTemplate((db: Kysely<Database>, rows: NewReceipt[]) =>
  db.insertInto('receipts').values(rows).onConflict((oc) => oc.column('dedup_key').doNothing()).returning('dedup_key'),
);

/** Inserts receipts not seen before; returns the dedup keys that were new (duplicates change nothing). */
export async function insertNewReceipts(db: Db, rows: NewReceipt[]): Promise<Set<string>> {
  const fresh = new Set<string>();
  for (let i = 0; i < rows.length; i += 200) {
    const result = await insertReceiptsTemplate(db, rows.slice(i, i + 200));
    for (const r of result.rows) fresh.add(r.dedup_key);
  }
  return fresh;
}

const anyParkedTemplate = createQueryTemplate((db: Kysely<Database>, _input: Record<string, never>) =>
  db.selectFrom('receipts').select(sql<number>`1`.as('one')).where(sql<boolean>`matched = 0`).limit(1),
);

/** Whether any receipt waits for its message: one index probe, so the send path can skip the search when none does. */
export async function anyParkedReceipts(db: Db): Promise<boolean> {
  return (await anyParkedTemplate(db, {})).rows.length > 0;
}

export async function findParkedReceipts(db: Db, limit: number, provider?: string, providerMessageIds?: string[]) {
  // A literal `matched = 0` (not a bound parameter) lets SQLite use the partial index receipts_unmatched.
  let query = db.selectFrom('receipts').selectAll().where(sql<boolean>`matched = 0`);
  if (provider) query = query.where('provider', '=', provider);
  if (providerMessageIds) query = query.where('provider_message_id', 'in', providerMessageIds);
  return query.orderBy('id').limit(limit).execute();
}

export async function markReceiptsMatched(db: Db, matches: Array<{ id: number; smsId: string }>): Promise<void> {
  for (const m of matches) {
    await db.updateTable('receipts').set({ matched: 1, sms_id: m.smsId }).where('id', '=', m.id).execute();
  }
}

export async function findReceiptsBySmsId(db: Db, smsId: string) {
  return db.selectFrom('receipts').selectAll().where('sms_id', '=', smsId).orderBy('id').execute();
}

/** Receipts waiting for their message, per provider; reads only the partial index receipts_unmatched. */
export async function countParkedReceiptsByProvider(db: Db): Promise<Array<{ provider: string; parked: number }>> {
  const rows = await db
    .selectFrom('receipts')
    .select((eb) => ['provider', eb.fn.countAll<number | string>().as('parked')])
    .where(sql<boolean>`matched = 0`)
    .groupBy('provider')
    .execute();
  return rows.map((r) => ({ provider: r.provider, parked: Number(r.parked) }));
}
