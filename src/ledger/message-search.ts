/**
 * Finding messages for operators (GET /admin/messages and the console): equality filters and a time range, newest
 * first, keyset-paged on (created_at, sms_id). Each filter has an index ending in created_at (migration
 * 2026-11-24-60-console; with no filter but time, messages_created_sms_id of migration 2026-11-29-10-search-order, whose
 * key is the page's order), so a page reads about as many index entries as it shows rows, whatever the table's size.
 * The player's filter reads the player's numbers from message_user_recipients_recent (migration
 * 2026-12-01-20-recent-player-numbers) and message_user_recipients (migration 2026-11-24-81-search-keys) and then, as the
 * number's filter, the messages that still have those numbers (src/ledger/number-messages.ts: on SQLite the numbers'
 * entries in recipient_messages, migration 2026-11-29-95-recipient-messages, each joined to its message; on
 * PostgreSQL messages through its index messages_recipient_time), keyed by the message's day, number and time: the
 * days from the newest message's (or the range's end, or the cursor's) back to the oldest's are named in an IN list
 * that each database walks newest day first, each day's entries in the page's order, so a page still stops at its
 * limit; only one day's rows of a player's several numbers are sorted (and on PostgreSQL, whose index ends in
 * created_at, the ties on it).
 */
import { type Expression, type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import { findSmsIdOfActivityKey } from './messages.js';
import { findRecentHours, selectMessagesOfNumbers } from './number-messages.js';
import type { Database, MessagesTable } from './schema.js';
import { findCreatedSpan, searchBuckets } from './time-buckets.js';

/**
 * The status words operators search by, and what each is in the ledger: the terminal delivery status once known,
 * else the send state (the expression of the messages_status index). `dead` is a message whose conversion is
 * dead-lettered.
 */
export const SEARCH_STATUSES: ReadonlyMap<string, string | null> = new Map([
  ['pending', 'dispatching'],
  ['sent', 'submitted'],
  ['delivered', 'delivered'],
  ['undelivered', 'undelivered'],
  ['failed', 'failed'],
  ['delivery_unknown', 'delivery_unknown'],
  ['refused', 'rejected'],
  ['retryable', 'retryable'],
  ['uncertain', 'uncertain'],
  ['held', 'held'],
  ['dead', null],
]);

export interface MessageFilter {
  /** E.164, as stored. */
  recipient?: string;
  userId?: string;
  activityKey?: string;
  smsId?: string;
  provider?: string;
  /** A key of SEARCH_STATUSES. */
  status?: string;
  /** created_at >= from */
  from?: number;
  /** created_at < to */
  to?: number;
  /** The last row of the previous page: this page starts after it. */
  after?: { createdAt: number; smsId: string };
  limit: number;
}

export type MessageSummary = Pick<
  MessagesTable,
  | 'sms_id'
  | 'activity_key'
  | 'user_id'
  | 'request_id'
  | 'provider'
  | 'provider_message_id'
  | 'recipient'
  | 'state'
  | 'delivery_status'
  | 'provider_status'
  | 'error'
  | 'error_code'
  | 'attempts'
  | 'segments'
  | 'created_at'
  | 'submitted_at'
  | 'completed_at'
  | 'route'
  | 'route_rule'
  | 'route_rule_name'
>;

const SUMMARY_COLUMNS = [
  'sms_id',
  'activity_key',
  'user_id',
  'request_id',
  'provider',
  'provider_message_id',
  'recipient',
  'state',
  'delivery_status',
  'provider_status',
  'error',
  'error_code',
  'attempts',
  'segments',
  'created_at',
  'submitted_at',
  'completed_at',
  'route',
  'route_rule',
  'route_rule_name',
] as const;

/**
 * The numbers a player's messages went to: every message with a player was stored with its (player, number) pair, so
 * no pair, no message. The pairs of the days not moved yet are read first, a seek per hour that holds any,
 * then message_user_recipients: a day's move between the two reads puts its pairs where the second finds them.
 */
async function findPlayerNumbers(db: Kysely<Database>, userId: string): Promise<string[]> {
  const hours = await findRecentHours(db, 'message_user_recipients_recent');
  const recent =
    hours.length === 0
      ? []
      : await db.selectFrom('message_user_recipients_recent').select('recipient').where('hour', 'in', hours).where('user_id', '=', userId).execute();
  const moved = await db.selectFrom('message_user_recipients').select('recipient').where('user_id', '=', userId).execute();
  return [...new Set([...recent, ...moved].map((r) => r.recipient))];
}

/** Up to `limit` messages, newest first, and whether more follow. */
export async function searchMessages(db: Kysely<Database>, filter: MessageFilter): Promise<{ rows: MessageSummary[]; more: boolean }> {
  // The numbers to look under: the one named, or the player's (findPlayerNumbers).
  let numbers: string[] | undefined = filter.recipient === undefined ? undefined : [filter.recipient];
  if (filter.userId !== undefined) {
    const own = await findPlayerNumbers(db, filter.userId);
    numbers = filter.recipient === undefined ? own : own.filter((n) => n === filter.recipient);
    if (numbers.length === 0) return { rows: [], more: false };
  }
  // With a number, the page is read in the order of the number's index (day, number, created_at, sms_id), and the
  // message must still have that number (on SQLite an entry outlives a blanked or changed number until its day goes,
  // src/ledger/retention.ts). `key` names the columns the range, the cursor and the order are on: the index's, on
  // SQLite the entries' own, so that the planner knows the index yields the page's order. On SQLite the entries are
  // in two tables (src/ledger/number-messages.ts): each is read for a page and the two pages put together.
  let parts: Array<{ query: SelectQueryBuilder<Database, 'messages', object>; key: PageKey }>;
  if (numbers === undefined) {
    parts = [{ query: db.selectFrom('messages'), key: { createdAt: sql.ref<number>('messages.created_at'), smsId: sql.ref<string>('messages.sms_id') } }];
  } else {
    const span = await findCreatedSpan(db);
    const days = span ? searchBuckets(span, { from: filter.from, to: filter.to, atMost: filter.after?.createdAt }) : [];
    if (days.length === 0) return { rows: [], more: false };
    parts = (await selectMessagesOfNumbers(db, days, numbers)).map((own) => ({ query: own.query, key: own }));
  }
  // PostgreSQL: messages has no index on activity_key (DialectFlags.partitionsByDay); message_keys gives the sms_id.
  const smsIdOfKey = filter.activityKey === undefined ? undefined : await findSmsIdOfActivityKey(db, filter.activityKey);
  if (smsIdOfKey === null) return { rows: [], more: false };
  const pages: MessageSummary[][] = [];
  for (const { query, key } of parts) pages.push(await readPage(query, key, filter, numbers !== undefined, smsIdOfKey));
  // A day's move between the reads of two parts puts a chunk's messages in both pages (selectMessagesOfNumbers).
  const rows = pages.length === 1 ? pages[0]! : [...new Map(pages.flat().map((m) => [m.sms_id, m])).values()].sort(newestFirst).slice(0, filter.limit + 1);
  const more = rows.length > filter.limit;
  return { rows: more ? rows.slice(0, filter.limit) : rows, more };
}

/** The columns a page's range, cursor and order are on; `bucket` (the day, or the hour) leads them when the number's entries are read. */
interface PageKey {
  bucket?: Expression<number>;
  createdAt: Expression<number>;
  smsId: Expression<string>;
}

/** A page's order: created_at, then sms_id, both descending. */
function newestFirst(a: MessageSummary, b: MessageSummary): number {
  const at = Number(b.created_at) - Number(a.created_at);
  return at !== 0 ? at : a.sms_id < b.sms_id ? 1 : a.sms_id > b.sms_id ? -1 : 0;
}

/**
 * Up to limit + 1 of `query`'s messages matching the rest of the filter, newest first. `activityKeySmsId` is what
 * findSmsIdOfActivityKey gave for filter.activityKey.
 */
async function readPage(
  from: SelectQueryBuilder<Database, 'messages', object>,
  key: PageKey,
  filter: MessageFilter,
  byNumber: boolean,
  activityKeySmsId: string | undefined,
): Promise<MessageSummary[]> {
  let query = from;
  if (filter.smsId !== undefined) query = query.where('messages.sms_id', '=', filter.smsId);
  if (filter.activityKey !== undefined) {
    query =
      activityKeySmsId === undefined ? query.where('messages.activity_key', '=', filter.activityKey) : query.where('messages.sms_id', '=', activityKeySmsId);
  }
  if (filter.userId !== undefined) query = query.where('messages.user_id', '=', filter.userId);
  // A key (sms_id, activity.id, number, player) finds a handful of rows, and dead letters are few: provider and status
  // are then checked on those rows, written so that no index can serve them (`|| ''`). Otherwise the planner may walk
  // messages_provider_created or messages_status in created_at order to skip a sort of a few rows, and check the key on
  // each row it passes: on a SQLite ledger without statistics (the gateway never runs ANALYZE) a number with
  // provider=sandbox took 2–9 s at 5 million messages (bench/README.md, 2026-11-29).
  const keyed =
    filter.smsId !== undefined || filter.activityKey !== undefined || byNumber || (filter.status !== undefined && SEARCH_STATUSES.get(filter.status) === null);
  if (filter.provider !== undefined) query = query.where(keyed ? sql<string>`messages.provider || ''` : sql.ref('messages.provider'), '=', filter.provider);
  if (filter.status !== undefined) {
    const stored = SEARCH_STATUSES.get(filter.status);
    // Dead letters are few and conversions_unposted leads with `dead`: the planner starts from them.
    if (stored === null) {
      query = query.where('messages.sms_id', 'in', (eb) => eb.selectFrom('conversions').select('sms_id').where('dead', '=', 1).where('posted_at', 'is', null));
    } else if (stored !== undefined) {
      // Spelled exactly as the index expression, or neither database would use the index.
      const status = sql<string>`coalesce(messages.delivery_status, messages.state)`;
      query = query.where(keyed ? sql<string>`${status} || ''` : status, '=', stored);
    }
  }
  if (filter.from !== undefined) query = query.where(key.createdAt, '>=', filter.from);
  if (filter.to !== undefined) query = query.where(key.createdAt, '<', filter.to);
  if (filter.after) {
    const { createdAt, smsId } = filter.after;
    // The range on created_at alone is what the index can seek to; the tie-break on sms_id filters within it.
    query = query.where(key.createdAt, '<=', createdAt).where((eb) => eb.or([eb(key.createdAt, '<', createdAt), eb(key.smsId, '<', smsId)]));
  }
  // The bucket first in the order too: it is the same order (a later day's or hour's times are all later), and it
  // tells SQLite that the table's key yields it, so it sorts nothing for one number and stops at the limit.
  if (key.bucket !== undefined) query = query.orderBy(key.bucket, 'desc');
  return (await query
    .select(SUMMARY_COLUMNS.map((c) => `messages.${c}` as const))
    .orderBy(key.createdAt, 'desc')
    .orderBy(key.smsId, 'desc')
    .limit(filter.limit + 1)
    .execute()) as unknown as MessageSummary[];
}
