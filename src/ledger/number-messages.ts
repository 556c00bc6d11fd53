/**
 * The messages that still have a number, on named days: what the search by number and by player
 * (src/ledger/message-search.ts), a lookup's other sends to the number (src/ledger/send-lookups.ts) and retention's
 * forgetting of a (player, number) pair (src/ledger/retention.ts) read. The days lead the key (src/ledger/time-buckets.ts),
 * so each day named is one seek.
 * - SQLite: the number's entries are tables of their own, each joined to its message by sms_id: recipient_messages
 *   (migration 2026-11-29-95-recipient-messages), by the day, and the entries of the days not moved there yet,
 *   recipient_messages_recent (migration 2026-12-01-10-recent-number-entries), by the hour: a send writes its entry
 *   into the current hour's part, small enough that a batch's entries share its pages, and the serving process moves
 *   each day's into recipient_messages once the day is over (moveNumberEntriesOfDay, src/delivery/number-entries.ts).
 *   An entry is in one of the two. It counts only while its message still has that number (one whose message is
 *   gone, blanked or retried to another number stays until retention purges its day: purgeRecipientEntries).
 * - On both databases the (player, number) pairs of the search by player go the same way, from
 *   message_user_recipients_recent into message_user_recipients (migration 2026-12-01-20-recent-player-numbers,
 *   movePlayerNumbersOfDay).
 * - PostgreSQL: recipient_messages is a view over messages there, and the entries are messages' own index,
 *   messages_recipient_time ((created_at / 86400000), recipient, created_at): messages is read through it directly. An
 *   entry found is its message's row. Joined to messages through the view, each message found was read a second
 *   time through the primary key (bench/README.md "Sends while PostgreSQL retention runs, traced", and "The messages of
 *   a number on PostgreSQL, read once").
 */
import { type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import { dialectFlagsOf } from './engine/flags.js';
import type { Database } from './schema.js';
import { dayOf, dayOfHour } from './time-buckets.js';

export interface NumberMessages {
  /** From `messages`, under its own name, restricted to the numbers and days; nothing selected yet. */
  query: SelectQueryBuilder<Database, 'messages', object>;
  /**
   * The key the entries are read in, (bucket, created_at, sms_id): a range, a cursor or an order on these is one the
   * number's index yields (on SQLite the entries' columns, whose order the planner knows: the day, or the hour for
   * the recent ones; on PostgreSQL the index's expression and messages' own columns).
   */
  bucket: RawBuilder<number>;
  createdAt: RawBuilder<number>;
  smsId: RawBuilder<string>;
}

/**
 * The messages created on `days` that still have one of `numbers` (or the number an outer query's column holds, for a
 * correlated subquery), in parts: on SQLite, if any of those days has entries not moved yet, the recent ones' first,
 * then the moved ones'; on PostgreSQL one. A caller reads each part (or asks whether any part has a row) and puts the
 * rows together. A message is in one part at a time, but a day's move may run between a caller's reads of two parts:
 * read in this order, a chunk moved in between is found by both reads, never by neither, so a caller that reads the
 * parts one by one drops repeated sms_ids.
 */
export async function selectMessagesOfNumbers(
  db: Kysely<Database>,
  days: readonly number[],
  numbers: readonly string[] | Expression<string>,
): Promise<NumberMessages[]> {
  if (!dialectFlagsOf(db).writesNumberEntries) {
    // The day spelled as the index's expression (dayOf), or PostgreSQL would not use the index.
    const messages = db.selectFrom('messages').where(dayOf('messages'), 'in', days);
    return [
      {
        query: isList(numbers) ? messages.where('messages.recipient', 'in', numbers) : messages.where('messages.recipient', '=', numbers),
        bucket: dayOf('messages'),
        createdAt: sql.ref<number>('messages.created_at'),
        smsId: sql.ref<string>('messages.sms_id'),
      },
    ];
  }
  // The hours named are only those that hold entries (normally today's and, until it is moved, yesterday's): a seek
  // each, where every hour of every day would be 24 a day.
  const named = new Set(days);
  const hours = (await findRecentHours(db, 'recipient_messages_recent')).filter((h) => named.has(dayOfHour(h)));
  const moved = entriesPart(db, 'recipient_messages', 'day', days, numbers);
  return hours.length === 0 ? [moved] : [entriesPart(db, 'recipient_messages_recent', 'hour', hours.reverse(), numbers), moved];
}

/** SQLite: the messages found through one table of entries, led by `bucket` (its values newest first). */
function entriesPart(
  db: Kysely<Database>,
  table: 'recipient_messages' | 'recipient_messages_recent',
  bucket: 'day' | 'hour',
  buckets: readonly number[],
  numbers: readonly string[] | Expression<string>,
): NumberMessages {
  // Both tables are read as recipient_messages: the same columns but the first.
  const entries = db
    .selectFrom(`${table} as r` as 'recipient_messages as r')
    .innerJoin('messages', 'messages.sms_id', 'r.sms_id')
    .where(sql.ref<number>(`r.${bucket}`), 'in', buckets)
    .whereRef('messages.recipient', '=', 'r.recipient');
  const query = isList(numbers) ? entries.where('r.recipient', 'in', numbers) : entries.where('r.recipient', '=', numbers);
  // `r` is named only here: the caller sees messages alone.
  return {
    query: query as unknown as SelectQueryBuilder<Database, 'messages', object>,
    bucket: sql.ref<number>(`r.${bucket}`),
    createdAt: sql.ref<number>('r.created_at'),
    smsId: sql.ref<string>('r.sms_id'),
  };
}

/** The tables written by the hour and moved by the day (the entries' on SQLite only). */
export type RecentTable = 'recipient_messages_recent' | 'message_user_recipients_recent';

/**
 * The hours whose rows in `table` are not moved yet, oldest first: one seek each (the next hour after the last), not
 * a read of the rows. No entries on PostgreSQL, whose entries are an index of messages.
 */
export async function findRecentHours(db: Kysely<Database>, table: RecentTable): Promise<number[]> {
  if (table === 'recipient_messages_recent' && !dialectFlagsOf(db).writesNumberEntries) return [];
  const recent = sql.table(table);
  const { rows } = await sql<{ hour: number }>`with recursive held(hour) as (
      select min(hour) from ${recent}
      union all
      select (select min(hour) from ${recent} where hour > held.hour) from held where held.hour is not null)
    select hour from held where hour is not null`.execute(db);
  return rows.map((r) => Number(r.hour));
}

/** A chunk of a day's move: how many rows moved, and the last key moved (the next chunk starts after it). */
export interface MoveChunk {
  moved: number;
  /** Undefined once the day has nothing left to move. */
  last?: string;
}

/** One table moved by the day: the column after `hour` that its chunks follow, and the copy of a chunk. */
interface DayMove {
  from: RecentTable;
  key: 'recipient' | 'user_id';
  /** Copies the rows `chosen` selects into the table by the day, in that table's key order. */
  copy(day: number, chosen: RawBuilder<boolean>): RawBuilder<unknown>;
}

const NUMBER_ENTRIES: DayMove = {
  from: 'recipient_messages_recent',
  key: 'recipient',
  copy: (day, chosen) => sql`insert into recipient_messages (day, recipient, created_at, sms_id)
    select ${day}, recipient, created_at, sms_id from recipient_messages_recent where ${chosen}
    order by recipient, created_at, sms_id
    on conflict do nothing`,
};

const PLAYER_NUMBERS: DayMove = {
  from: 'message_user_recipients_recent',
  key: 'user_id',
  // A pair sent to in several hours is one row of the day; a known one is read, not written.
  copy: (_day, chosen) => sql`insert into message_user_recipients (user_id, recipient)
    select distinct user_id, recipient from message_user_recipients_recent where ${chosen}
    order by user_id, recipient
    on conflict (user_id, recipient) do nothing`,
};

/**
 * SQLite: moves the entries of `day` not moved yet whose number comes after `after`, about `limit` of them (whole
 * numbers), from recipient_messages_recent into recipient_messages, in one transaction. A day's chunks go in number
 * order, so each lands after the one before in the day's part of recipient_messages: each page is written once and
 * filled, where sends wrote one entry to a page each.
 */
export function moveNumberEntriesOfDay(trx: Transaction<Database>, day: number, after: string | undefined, limit: number): Promise<MoveChunk> {
  return moveChunkOfDay(trx, NUMBER_ENTRIES, day, after, limit);
}

/**
 * Moves the (player, number) pairs of `day` not moved yet whose player comes after `after`, about `limit` of
 * them (whole players), from message_user_recipients_recent into message_user_recipients, in one transaction. In
 * player order, each leaf of message_user_recipients is read once a chunk, where sends read one for each message.
 */
export function movePlayerNumbersOfDay(trx: Transaction<Database>, day: number, after: string | undefined, limit: number): Promise<MoveChunk> {
  return moveChunkOfDay(trx, PLAYER_NUMBERS, day, after, limit);
}

/**
 * One chunk of `move` for `day`: the rows whose key comes after `after`, up to the lowest key that any of the day's
 * hours reaches after `limit / 24` of its rows, so that no hour puts much more than its share in.
 */
async function moveChunkOfDay(trx: Transaction<Database>, move: DayMove, day: number, after: string | undefined, limit: number): Promise<MoveChunk> {
  const hours = Array.from({ length: 24 }, (_, i) => day * 24 + i);
  const perHour = Math.max(1, Math.ceil(limit / 24));
  const key = sql.ref<string>(move.key);
  let upTo: string | undefined;
  for (const hour of hours) {
    const { rows } = await sql<{ key: string }>`select ${key} as key from ${sql.table(move.from)}
      where hour = ${hour} and ${after === undefined ? sql`true` : sql`${key} > ${after}`}
      order by ${key} limit 1 offset ${perHour - 1}`.execute(trx);
    const row = rows[0];
    if (row && (upTo === undefined || row.key < upTo)) upTo = row.key;
  }
  // None of the hours has `perHour` rows left: the rest of the day goes.
  const chosen = sql<boolean>`hour in (${sql.join(hours)}) and ${after === undefined ? sql`true` : sql`${key} > ${after}`} and ${upTo === undefined ? sql`true` : sql`${key} <= ${upTo}`}`;
  await move.copy(day, chosen).execute(trx);
  const deleted = await sql`delete from ${sql.table(move.from)} where ${chosen}`.execute(trx);
  const moved = Number(deleted.numAffectedRows ?? 0);
  return upTo === undefined ? { moved } : { moved, last: upTo };
}

function isList(numbers: readonly string[] | Expression<string>): numbers is readonly string[] {
  return Array.isArray(numbers);
}
