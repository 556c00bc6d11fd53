/** Repository for `receipts`: every valid provider event, matched to a message or parked until it can be. */
import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Database, ReceiptsTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;
export type NewReceipt = Insertable<ReceiptsTable>;

/** Inserts receipts not seen before; returns the dedup keys that were new (duplicates change nothing). */
export async function insertNewReceipts(db: Db, rows: NewReceipt[]): Promise<Set<string>> {
  const fresh = new Set<string>();
  for (let i = 0; i < rows.length; i += 200) {
    const result = await db
      .insertInto('receipts')
      .values(rows.slice(i, i + 200))
      .onConflict((oc) => oc.column('dedup_key').doNothing())
      .returning('dedup_key')
      .execute();
    for (const r of result) fresh.add(r.dedup_key);
  }
  return fresh;
}

export async function findParkedReceipts(db: Db, limit: number, provider?: string, providerMessageIds?: string[]) {
  let query = db.selectFrom('receipts').selectAll().where('matched', '=', 0);
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
