/**
 * The messages that still have a number, on named days: what the search by number and by player
 * (src/ledger/message-search.ts), a lookup's other sends to the number (src/ledger/send-lookups.ts) and retention's
 * forgetting of a (player, number) pair (src/ledger/retention.ts) read. The days lead the key (src/ledger/time-buckets.ts),
 * so each day named is one seek.
 * - SQLite: the number's entries are a table of their own, recipient_messages (migration
 *   2026-11-29-95-recipient-messages), each joined to its message by sms_id; an entry counts only while its message
 *   still has that number (one whose message is gone, blanked or retried to another number stays until retention
 *   purges its day: purgeRecipientEntries).
 * - PostgreSQL: recipient_messages is a view over messages there, and the entries are messages' own index,
 *   messages_recipient_time ((created_at / 86400000), recipient, created_at): messages is read through it directly. An
 *   entry found is its message's row. Joined to messages through the view, each message found was read a second
 *   time through the primary key (bench/README.md "Sends while PostgreSQL retention runs, traced", and "The messages of
 *   a number on PostgreSQL, read once").
 */
import { type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { dialectFlagsOf } from './engine/flags.js';
import type { Database } from './schema.js';
import { dayOf } from './time-buckets.js';

export interface NumberMessages {
  /** From `messages`, under its own name, restricted to the numbers and days; nothing selected yet. */
  query: SelectQueryBuilder<Database, 'messages', object>;
  /**
   * The key the entries are read in, (day, created_at, sms_id): a range, a cursor or an order on these is one the
   * number's index yields (on SQLite the entries' columns, whose order the planner knows; on PostgreSQL the
   * index's expression and messages' own columns).
   */
  day: RawBuilder<number>;
  createdAt: RawBuilder<number>;
  smsId: RawBuilder<string>;
}

/**
 * The messages created on `days` that still have one of `numbers` (or the number an outer query's column holds, for a
 * correlated subquery).
 */
export function selectMessagesOfNumbers(db: Kysely<Database>, days: readonly number[], numbers: readonly string[] | Expression<string>): NumberMessages {
  if (dialectFlagsOf(db).writesNumberEntries) {
    const entries = db
      .selectFrom('recipient_messages as r')
      .innerJoin('messages', 'messages.sms_id', 'r.sms_id')
      .where('r.day', 'in', days)
      .whereRef('messages.recipient', '=', 'r.recipient');
    const query = isList(numbers) ? entries.where('r.recipient', 'in', numbers) : entries.where('r.recipient', '=', numbers);
    // `r` is named only here: the caller sees messages alone.
    return {
      query: query as unknown as SelectQueryBuilder<Database, 'messages', object>,
      day: sql.ref<number>('r.day'),
      createdAt: sql.ref<number>('r.created_at'),
      smsId: sql.ref<string>('r.sms_id'),
    };
  }
  // The day spelled as the index's expression (dayOf), or PostgreSQL would not use the index.
  const messages = db.selectFrom('messages').where(dayOf('messages'), 'in', days);
  return {
    query: isList(numbers) ? messages.where('messages.recipient', 'in', numbers) : messages.where('messages.recipient', '=', numbers),
    day: dayOf('messages'),
    createdAt: sql.ref<number>('messages.created_at'),
    smsId: sql.ref<string>('messages.sms_id'),
  };
}

function isList(numbers: readonly string[] | Expression<string>): numbers is readonly string[] {
  return Array.isArray(numbers);
}
