/**
 * Queries of the receipt path (src/delivery/apply-receipts.ts, src/delivery/parts.ts): finding the message a receipt is
 * about, moving its delivery status forward, and reading its parts' receipts for the multipart roll-up.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { createQueryTemplate } from './query-template.js';
import type { Database, MessagesTable } from './schema.js';
import { IDS_PER_STATEMENT, idChunks } from './chunks.js';
import { dialectFlagsOf } from './engine/flags.js';
import { dayBound } from './engine/partitions.js';
import { dayOf, findCreatedSpan, recentBuckets, searchBuckets } from './time-buckets.js';

type Db = Kysely<Database> | Transaction<Database>;

/** What the receipt path reads of a message. */
export type ReceiptTarget = Pick<
  MessagesTable,
  | 'sms_id'
  | 'activity_key'
  | 'provider'
  | 'state'
  | 'delivery_status'
  | 'delivery_source'
  | 'dispatched_at'
  | 'updated_at'
  | 'completed_at'
  | 'segments'
  | 'traceparent'
  | 'country'
  | 'created_at'
  | 'activity_json'
  | 'cost_micros'
  | 'cost_currency'
  | 'cost_source'
>;
export type ReceiptTargetWithId = ReceiptTarget & { provider_message_id: string | null };

const TARGET_COLUMNS = [
  'sms_id',
  'activity_key',
  'provider',
  'state',
  'delivery_status',
  'delivery_source',
  'dispatched_at',
  'updated_at',
  'completed_at',
  'segments',
  'traceparent',
  // What the cost path needs of a message that a receipt delivers or prices (src/costs/charges.ts), read here once.
  'country',
  'created_at',
  'activity_json',
  'cost_micros',
  'cost_currency',
  'cost_source',
] as const;

const targetsBySmsIdTemplate = createQueryTemplate((db: Kysely<Database>, smsIds: string[]) =>
  db
    .selectFrom('messages')
    .select([...TARGET_COLUMNS, 'provider_message_id'])
    .where('sms_id', 'in', smsIds),
);

/** The messages of these distinct sms_ids (any provider: the caller checks the provider matches). */
export async function findReceiptTargetsBySmsId(db: Db, smsIds: string[]): Promise<ReceiptTargetWithId[]> {
  const found: ReceiptTargetWithId[] = [];
  // A padded chunk repeats its last id; the query returns its row once all the same.
  for (const chunk of idChunks(smsIds, IDS_PER_STATEMENT)) found.push(...(await targetsBySmsIdTemplate(db, chunk)).rows);
  return found;
}

/**
 * The messages one provider knows by these ids: a whole message's id, or one of its parts' ids. Each row carries
 * the id it was found by in `provider_message_id`; only the messages whose receipts may lack their sms_id are looked
 * in (messages_provider_id_only). That index is led by the message's day
 * (src/ledger/time-buckets.ts): today's and yesterday's are looked in first, in one statement, and the older days
 * back to the oldest message only for the ids not found there, so a receipt finds its message however old it is.
 *
 * PostgreSQL partitioned by day (DialectFlags.partitionsByDay): neither the day of `created_at` nor a part's
 * `sms_id` prunes the day tables, and these statements were planned over all of them: with the 97 tables of a
 * 90-day retention, 9–15 ms to plan and 1 ms to run a lookup of one SMPP receipt, against 0.1 and 0.03 on the flat
 * tables. So the first search also bounds `sms_id` to the days around the recent ones (an sms_id is stamped by the
 * clock that stamps created_at, within a day of it), which plans it over four tables in 0.5 ms; a message the bound
 * misses (a clock set elsewhere) is found by the search of every day that follows it, unbounded as before. A part's
 * message is read by its `sms_id` after its part.
 */
export async function findReceiptTargetsByProviderId(db: Db, provider: string, ids: string[], now: number): Promise<ReceiptTargetWithId[]> {
  const byDay = dialectFlagsOf(db).partitionsByDay;
  const recent = recentBuckets(now);
  const direct = await targetsByProviderIdIn(db, provider, ids, recent, byDay ? daysAround(recent) : undefined);
  const parts = byDay ? await partTargetsBySmsId(db, provider, ids) : await partTargets(db, provider, ids);
  const found = new Set([...direct, ...parts].map((m) => m.provider_message_id));
  const missing = [...new Set(ids.filter((id) => !found.has(id)))];
  if (missing.length > 0) {
    const span = await findCreatedSpan(db);
    // The newest day too: a message stamped by a clock ahead of this one's may be in a day after today. By day, the
    // recent days again: the first search saw only the sms_ids of the days around them.
    const older = span ? searchBuckets(span, {}).filter((b) => byDay || !recent.includes(b)) : [];
    if (older.length > 0) direct.push(...(await targetsByProviderIdIn(db, provider, missing, older)));
  }
  return [...direct, ...parts];
}

/** The [from, to) sms_id bounds of the days from the one before the oldest of `buckets` to the one after the newest. */
function daysAround(buckets: number[]): [string, string] {
  return [dayBound(Math.min(...buckets) - 1), dayBound(Math.max(...buckets) + 2)];
}

function targetsByProviderIdIn(db: Db, provider: string, ids: string[], buckets: number[], smsIds?: [string, string]): Promise<ReceiptTargetWithId[]> {
  return (
    db
      .selectFrom('messages')
      .select([...TARGET_COLUMNS, 'provider_message_id'])
      .where(dayOf(), 'in', buckets)
      .$if(smsIds !== undefined, (q) => q.where('sms_id', '>=', smsIds![0]).where('sms_id', '<', smsIds![1]))
      .where('provider', '=', provider)
      .where('provider_message_id', 'in', ids)
      // A literal, as messages_provider_id_only's condition is written, so the index is usable by a plan made without
      // the bound values (PostgreSQL's generic plans). The other messages' receipts name their sms_id, and
      // findReceiptTargetsBySmsId finds them.
      .where('receipts_name_sms_id', '=', sql.lit(0))
      .execute()
  );
}

/** The messages of the parts one provider knows by these ids, each with the part's id. */
function partTargets(db: Db, provider: string, ids: string[]): Promise<ReceiptTargetWithId[]> {
  return db
    .selectFrom('message_parts')
    .innerJoin('messages', 'messages.sms_id', 'message_parts.sms_id')
    .select([...TARGET_COLUMNS.map((c) => `messages.${c}` as const), 'message_parts.provider_message_id'])
    .where('message_parts.provider', '=', provider)
    .where('message_parts.provider_message_id', 'in', ids)
    .execute();
}

/** As partTargets, in two statements: the parts, then their messages by sms_id, which prunes the day tables. */
async function partTargetsBySmsId(db: Db, provider: string, ids: string[]): Promise<ReceiptTargetWithId[]> {
  const parts = await db
    .selectFrom('message_parts')
    .select(['sms_id', 'provider_message_id'])
    .where('provider', '=', provider)
    .where('provider_message_id', 'in', ids)
    .execute();
  if (parts.length === 0) return [];
  const messages = new Map((await findReceiptTargetsBySmsId(db, [...new Set(parts.map((p) => p.sms_id))])).map((m) => [m.sms_id, m]));
  return parts.flatMap((part) => {
    const message = messages.get(part.sms_id);
    return message ? [{ ...message, provider_message_id: part.provider_message_id }] : [];
  });
}

export interface DeliveryUpdate {
  deliveryStatus: ReceiptTarget['delivery_status'];
  deliverySource: ReceiptTarget['delivery_source'];
  providerStatus: string | null;
  now: number;
  completedAt: number | null;
}

const updateDeliveryTemplate = createQueryTemplate((db: Kysely<Database>, { smsIds, set }: { smsIds: string[]; set: DeliveryUpdate }) =>
  db
    .updateTable('messages')
    .set({
      delivery_status: set.deliveryStatus,
      delivery_source: set.deliverySource,
      provider_status: set.providerStatus,
      updated_at: set.now,
      completed_at: set.completedAt,
    })
    .where('sms_id', 'in', smsIds),
);

/** Writes one delivery status to many messages. */
export async function updateDeliveryStatus(db: Db, smsIds: string[], set: DeliveryUpdate): Promise<void> {
  for (const chunk of idChunks(smsIds, IDS_PER_STATEMENT)) await updateDeliveryTemplate(db, { smsIds: chunk, set });
}

/**
 * Marks a message whose send ended in one of `fromStates` as submitted after all, keeping a provider message id it
 * already has. Returns whether the row changed (false: it had already left those states).
 */
export async function confirmSubmitted(
  db: Db,
  smsId: string,
  providerMessageId: string | null,
  fromStates: readonly MessagesTable['state'][],
  now: number,
): Promise<boolean> {
  const updated = await db
    .updateTable('messages')
    .set((eb) => ({
      state: 'submitted',
      submitted_at: now,
      provider_message_id: eb.fn.coalesce('provider_message_id', eb.val(providerMessageId)),
      error: null,
      error_code: null,
      updated_at: now,
    }))
    .where('sms_id', '=', smsId)
    .where('state', 'in', fromStates)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}

/** The provider ids of a message's parts, as recorded from the send's answer (none before it is recorded). */
export async function findPartIds(db: Db, smsId: string): Promise<string[]> {
  return (await db.selectFrom('message_parts').select('provider_message_id').where('sms_id', '=', smsId).execute()).map((p) => p.provider_message_id);
}

/** Our own segment count for a message (1 when it is unknown). */
export async function findSegmentCount(db: Db, smsId: string): Promise<number> {
  return (await db.selectFrom('messages').select('segments').where('sms_id', '=', smsId).executeTakeFirst())?.segments ?? 1;
}

/** The receipts of a message that name a provider (part) id, in arrival order. */
export async function findPartReceipts(db: Db, smsId: string): Promise<Array<{ provider_message_id: string; mapped_status: string }>> {
  const rows = await db
    .selectFrom('receipts')
    .select(['provider_message_id', 'mapped_status'])
    .where('sms_id', '=', smsId)
    .where('provider_message_id', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ provider_message_id: r.provider_message_id!, mapped_status: r.mapped_status }));
}
