/**
 * Repository for asking providers about sends (src/delivery/lookups.ts): which messages to ask about, and what their
 * answers change. Functions take `db` (or a transaction) first; each UPDATE re-checks the state it expects, so a CRM
 * retry or a receipt that moved the message meanwhile wins over a late answer.
 */
import type { Kysely, Transaction } from 'kysely';
import { selectMessagesOfNumbers } from './number-messages.js';
import type { Database, MessagesTable } from './schema.js';
import { findCreatedSpan, searchBuckets } from './time-buckets.js';

type Db = Kysely<Database> | Transaction<Database>;

export type LookupCandidate = Pick<
  MessagesTable,
  'sms_id' | 'activity_key' | 'provider' | 'provider_message_id' | 'recipient' | 'content' | 'dispatched_at' | 'submitted_at'
>;

const CANDIDATE_COLUMNS = ['sms_id', 'activity_key', 'provider', 'provider_message_id', 'recipient', 'content', 'dispatched_at', 'submitted_at'] as const;

/**
 * Sends left uncertain by a lost process whose provider has not been asked yet (lookup_result `pending`): the oldest,
 * or those of `smsIds` (a retry's, src/sms/dispatch.ts).
 */
export async function findPendingLookups(db: Db, limit: number, smsIds?: readonly string[]): Promise<LookupCandidate[]> {
  if (smsIds?.length === 0) return [];
  return db
    .selectFrom('messages')
    .select(CANDIDATE_COLUMNS)
    .$if(smsIds !== undefined, (q) => q.where('sms_id', 'in', smsIds!))
    .where('state', '=', 'uncertain')
    .where('lookup_result', '=', 'pending')
    .orderBy('dispatched_at')
    .limit(limit)
    .execute();
}

/**
 * Submitted messages with no final status, submitted in (`since`, `cutoff`], whose provider has not been asked for it
 * yet. The band keeps the read within the index messages_awaiting_receipt's recent part: the silent messages
 * already asked stay there until delivery.unknown_after and are not read again.
 */
export async function findSilentMessages(db: Db, since: number, cutoff: number, limit: number): Promise<LookupCandidate[]> {
  return db
    .selectFrom('messages')
    .select(CANDIDATE_COLUMNS)
    .where('delivery_status', 'is', null)
    .where('submitted_at', '>', since)
    .where('submitted_at', '<=', cutoff)
    .where('status_queried_at', 'is', null)
    .where('provider_message_id', 'is not', null)
    .orderBy('submitted_at')
    .limit(limit)
    .execute();
}

/** Marks messages as asked for their status, before asking: each is asked once, even if the process dies mid-way. */
export async function markStatusQueried(db: Db, smsIds: string[], now: number): Promise<void> {
  if (smsIds.length === 0) return;
  await db.updateTable('messages').set({ status_queried_at: now }).where('sms_id', 'in', smsIds).execute();
}

/**
 * The provider ids of our other messages to `recipient` dispatched in the window (a lookup must not take them for this
 * one). A message may be dispatched long after it was created (held, retried), and by another process's clock, so every
 * day of the number's messages (src/ledger/number-messages.ts) is looked in, from the oldest message's to the newest's
 * (src/ledger/time-buckets.ts); lookups are rare.
 */
export async function findOtherProviderIds(db: Db, recipient: string, smsId: string, from: number, to: number): Promise<string[]> {
  const span = await findCreatedSpan(db);
  const days = span ? searchBuckets(span, {}) : [];
  if (days.length === 0) return [];
  // A set: a day's move between the reads of two parts finds a message in both (selectMessagesOfNumbers).
  const ids = new Set<string>();
  for (const part of await selectMessagesOfNumbers(db, days, [recipient])) {
    const rows = await part.query
      .select('messages.provider_message_id')
      .where('messages.sms_id', '<>', smsId)
      .where('messages.dispatched_at', '>=', from)
      .where('messages.dispatched_at', '<=', to)
      .where('messages.provider_message_id', 'is not', null)
      .execute();
    for (const r of rows) ids.add(r.provider_message_id!);
  }
  return [...ids];
}

/** The provider has it: `submitted` with its id. Returns false when the message is no longer waiting for the answer. */
export async function markFoundByLookup(db: Db, smsId: string, providerMessageId: string, providerStatus: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('messages')
    .set({
      state: 'submitted',
      provider_message_id: providerMessageId,
      provider_status: providerStatus,
      submitted_at: now,
      updated_at: now,
      lookup_result: 'found',
      error: null,
      error_code: null,
    })
    .where('sms_id', '=', smsId)
    .where('state', '=', 'uncertain')
    .where('lookup_result', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The provider never got it: `retryable`, so the CRM's next retry sends it at once. */
export async function markAbsentByLookup(db: Db, smsId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('messages')
    .set({
      state: 'retryable',
      lookup_result: 'absent',
      updated_at: now,
      error: 'not at the provider when asked after its sender was lost; a retry sends it',
      error_code: 'lookup_absent',
    })
    .where('sms_id', '=', smsId)
    .where('state', '=', 'uncertain')
    .where('lookup_result', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** No answer can be had: the message stays `uncertain` and is listed as such; a CRM retry resends it after sms.ambiguous_retry_after. */
export async function markUnknownByLookup(db: Db, smsId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('messages')
    .set({ lookup_result: 'unknown', updated_at: now })
    .where('sms_id', '=', smsId)
    .where('state', '=', 'uncertain')
    .where('lookup_result', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
