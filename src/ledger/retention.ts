/**
 * Retention (docs/retention.md): the oldest final rows deleted, and personal data of older messages and inbound SMS
 * blanked, one chunk of at most `limit` rows per call. The caller runs each call in its own transaction and loops;
 * nothing here holds the write lock for more than one chunk.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { IDS_PER_STATEMENT, idChunks } from './chunks.js';
import { dialectFlagsOf } from './engine/flags.js';
import { selectMessagesOfNumbers } from './number-messages.js';
import type { Database } from './schema.js';
import { DAY_MS, dayBound, PARTITIONED_TABLES, partitionName, planDayPartitions, readPartitionState } from './engine/partitions.js';
import { findCreatedSpan, hourAt, searchBuckets } from './time-buckets.js';

type Db = Kysely<Database> | Transaction<Database>;

/** What blanked text and numbers read afterwards: not a number, so no search or send can match it. */
export const BLANKED = '[blanked]';

/** Rows one chunk handles: a statement's IN list at most (chunks.ts). */
export const RETENTION_CHUNK = IDS_PER_STATEMENT;

/**
 * A message settled for good: it has a terminal status (from a receipt, or delivery_unknown from the sweep, which
 * also settles a send left `dispatching` or `uncertain` after delivery.unknown_after: src/ledger/messages.ts), or was
 * never sent (rejected, retryable); and no conversion of it waits to be posted. A message still being sent, or
 * waiting for its receipt, has no terminal status yet and is kept, and so is a held message its outbox still owes to
 * its provider (held_sends, src/ledger/held-sends.ts).
 *
 * Each message's conversions and held sends are found by its `sms_id`, never through the outboxes' partial indexes
 * of owed rows: the unary `+` before their state columns keeps SQLite from using those (its documented way to take a
 * term out of index selection; `+x` is `x` on both databases). Without it SQLite (3.40 and 3.54, analysed or not)
 * read `conversions_unposted` instead, which holds every conversion the CRM has not yet taken: each message looked at
 * scanned all of them, so while the CRM's webhook failed, a pass held the writer for about half a minute a chunk
 * (30 million messages with 584,500 owed conversions: about 16 deleted a second, 4,012 with the `+`;
 * bench/README.md "Retention while conversions are owed").
 *
 * The `offset` in each check is for PostgreSQL, which otherwise turns a `not exists` into an anti-join, a plan for the
 * whole range rather than for the 500 rows a chunk takes. With `for update` (no parallel workers) it chose to scan
 * the whole conversions table for the owed ones (the `+` keeps it off their partial index) and hold them in memory,
 * once every chunk: at 5 million messages 0.8 s a chunk, where the lookups by sms_id take 9 ms (bench/README.md
 * "Retention on PostgreSQL: the chunk's plan"). A subquery with an offset is never made a join: it stays a lookup for
 * each message looked at, on both databases (SQLite takes an offset only after a limit).
 */
const isFinalMessage = sql<boolean>`((messages.delivery_status is not null or messages.state in ('rejected', 'retryable'))
  and not exists (select 1 from conversions c where c.sms_id = messages.sms_id and +c.posted_at is null and +c.dead = 0 limit 1 offset 0)
  and not exists (select 1 from held_sends h where h.sms_id = messages.sms_id and +h.done_at is null and +h.dead = 0 limit 1 offset 0))`;

/**
 * Deletes up to `limit` final messages created before `createdBefore`, oldest first, with what belongs to them only
 * (parts, receipts, conversions and their attempts, held sends, price fetches, search pairs left without a message). Run in a
 * transaction.
 */
export async function deleteFinalMessages(trx: Transaction<Database>, createdBefore: number, limit = RETENTION_CHUNK): Promise<number> {
  let select = trx
    .selectFrom('messages')
    .select(['sms_id', 'activity_key', 'user_id', 'recipient', 'created_at'])
    .where('created_at', '<', createdBefore)
    .where(isFinalMessage)
    .orderBy('created_at')
    .limit(limit);
  // PostgreSQL: a receipt applied meanwhile by another transaction waits for this one (and then finds no message).
  if (dialectFlagsOf(trx).kind === 'postgres') select = select.forUpdate();
  const rows = await select.execute();
  if (rows.length === 0) return 0;
  if (dialectFlagsOf(trx).partitionsByDay) await forgetActivityKeys(trx, rows);
  for (const ids of idChunks(
    rows.map((r) => r.sms_id),
    IDS_PER_STATEMENT,
  )) {
    await trx
      .deleteFrom('conversion_attempts')
      .where('conversion_id', 'in', (eb) => eb.selectFrom('conversions').select('id').where('sms_id', 'in', ids))
      .execute();
    await trx.deleteFrom('conversions').where('sms_id', 'in', ids).execute();
    await trx.deleteFrom('receipts').where('sms_id', 'in', ids).execute();
    await trx.deleteFrom('message_parts').where('sms_id', 'in', ids).execute();
    await trx.deleteFrom('held_sends').where('sms_id', 'in', ids).execute();
    // A price still to be asked of the provider, or given up on, is moot once its message goes.
    await trx.deleteFrom('price_fetches').where('sms_id', 'in', ids).execute();
    await trx.deleteFrom('messages').where('sms_id', 'in', ids).execute();
  }
  await forgetSearchPairs(trx, rows);
  return rows.length;
}

/**
 * A (player, number) pair (message_user_recipients) is kept while a message of that player to that number is: once
 * none is (deleted, or its number blanked), the pair goes, and with it the last trace of the number. A pair of a day
 * not moved yet is in message_user_recipients_recent, at its message's hour (recordUserRecipients, messages.ts): it
 * goes from there too, or the day's move would put it back.
 */
async function forgetSearchPairs(
  trx: Transaction<Database>,
  rows: Array<{ user_id: string | null; recipient: string; created_at: number | string }>,
  going?: { from: string; to: string },
): Promise<void> {
  const pairs = new Map<string, { user_id: string; recipient: string }>();
  // And each pair at each of its messages' hours.
  const hourly = new Map<string, { user_id: string; recipient: string; hour: number }>();
  for (const r of rows) {
    if (r.user_id === null || r.recipient === BLANKED) continue;
    const hour = hourAt(Number(r.created_at));
    pairs.set(JSON.stringify([r.user_id, r.recipient]), { user_id: r.user_id, recipient: r.recipient });
    hourly.set(JSON.stringify([hour, r.user_id, r.recipient]), { user_id: r.user_id, recipient: r.recipient, hour });
  }
  if (pairs.size === 0) return;
  // A remaining message of the pair may be of any day still kept: the number's entries are led by the day
  // (src/ledger/time-buckets.ts), so the days from the oldest message's to the newest's are named for it to seek in.
  const span = await findCreatedSpan(trx);
  const days = span ? searchBuckets(span, {}) : [];
  // One statement per few hundred pairs, not one each: on PostgreSQL each statement is a round trip, and a chunk of
  // 500 messages has nearly as many pairs (bench/README.md "Retention on a prefilled ledger"). Each pair is found by
  // the primary key and each remaining message by its number's index, one seek a day, and read once on PostgreSQL
  // (src/ledger/number-messages.ts): through the view recipient_messages joined back to messages, each remaining
  // message was looked up a second time through the primary key, and at 30 million messages the statement of 250
  // pairs took 100–130 ms against 40–60 from cold pages, and 110–130 against 16–20 from warm ones (bench/README.md
  // "Sends while PostgreSQL retention runs, traced"). On SQLite an entry counts only while its message still has
  // that number (it may be gone or blanked already, its entry not yet purged: purgeRecipientEntries).
  // Both tables are named `pair` in their deletes, so one condition serves both.
  const remaining =
    days.length === 0
      ? sql`false`
      : sql.join(
          (await selectMessagesOfNumbers(trx, days, sql.ref<string>('pair.recipient'))).map(
            (part) =>
              sql`exists ${part.query
                .select(sql<number>`1`.as('one'))
                .whereRef('messages.user_id', '=', sql.ref<string>('pair.user_id'))
                .where(going ? sql<boolean>`not (messages.sms_id >= ${going.from} and messages.sms_id < ${going.to})` : sql<boolean>`true`)}`,
          ),
          sql` or `,
        );
  for (const group of idChunks([...pairs.values()], IDS_PER_STATEMENT / 2)) {
    await sql`delete from message_user_recipients as pair
      where (user_id, recipient) in (values ${sql.join(group.map((p) => sql`(${p.user_id}, ${p.recipient})`))})
      and not (${remaining})`.execute(trx);
  }
  for (const group of idChunks([...hourly.values()], IDS_PER_STATEMENT / 3)) {
    await sql`delete from message_user_recipients_recent as pair
      where (hour, user_id, recipient) in (values ${sql.join(group.map((p) => sql`(cast(${p.hour} as integer), ${p.user_id}, ${p.recipient})`))})
      and not (${remaining})`.execute(trx);
  }
}

/**
 * Partitioned by day (DialectFlags.partitionsByDay): the activities' keys go with their messages (message_keys), so
 * a retry of one after that is a new message, as on the flat tables.
 */
async function forgetActivityKeys(trx: Transaction<Database>, rows: ReadonlyArray<{ activity_key: string }>): Promise<void> {
  for (const keys of idChunks(
    rows.map((r) => r.activity_key),
    IDS_PER_STATEMENT,
  ))
    await trx.deleteFrom('message_keys').where('activity_key', 'in', keys).execute();
}

/** Messages a day's drop reads (and whose dependents it deletes) per statement. */
const DAY_DROP_PAGE = 5_000;

export type DayDrop = { dropped: true; messages: number } | { dropped: false; reason: 'not final' | 'lock not granted' };

/**
 * What belongs to these messages in the tables that are not partitioned (parts, held sends, price fetches, conversions
 * and their attempts), deleted by statements.
 */
async function deleteDependents(trx: Transaction<Database>, smsIds: readonly string[]): Promise<void> {
  for (const ids of idChunks([...smsIds], IDS_PER_STATEMENT)) {
    await trx.deleteFrom('message_parts').where('sms_id', 'in', ids).execute();
    await trx.deleteFrom('held_sends').where('sms_id', 'in', ids).execute();
    await trx.deleteFrom('price_fetches').where('sms_id', 'in', ids).execute();
    await trx
      .deleteFrom('conversion_attempts')
      .where('conversion_id', 'in', (eb) => eb.selectFrom('conversions').select('id').where('sms_id', 'in', ids))
      .execute();
    await trx.deleteFrom('conversions').where('sms_id', 'in', ids).execute();
  }
}

/**
 * PostgreSQL (DialectFlags.partitionsByDay): drops UTC day `day`'s tables of messages and receipts when every message
 * in it is final (isFinalMessage), with what belongs to its messages in the tables that are not partitioned (keys,
 * parts, held sends, price fetches, conversions and their attempts, and the search pairs left without a message).
 *
 * Those are deleted first, a page of messages per transaction, as the row deletes are: each holds its rows for a
 * moment only (a send of the same player and number waits for a pair being deleted), and `afterPage`, awaited after
 * each with the time the page took, is the pass's pacing (src/delivery/retention.ts). Then one transaction locks the
 * day's messages against change (SHARE on that day's table, waiting at most `lockTimeout`), checks again that all are
 * final, deletes what a late receipt added meanwhile, and drops the two tables, waiting at most `dropLockTimeout` for
 * the parents (while it waits, sends queue behind it). A day found not final then keeps its messages, without the
 * dependents already deleted: they were final and past retention. A lock not granted drops nothing (the next pass
 * tries again). Answers how many messages went.
 */
export async function dropFinishedDay(
  db: Kysely<Database>,
  day: number,
  options: { afterPage?: (busyMs: number) => Promise<void>; lockTimeout?: string; dropLockTimeout?: string } = {},
): Promise<DayDrop> {
  const { afterPage, lockTimeout = '2s', dropLockTimeout = '500ms' } = options;
  const from = dayBound(day);
  const to = dayBound(day + 1);
  const anyOpen = async (trx: Kysely<Database>) =>
    (
      await trx
        .selectFrom('messages')
        .select(sql<number>`1`.as('one'))
        .where('sms_id', '>=', from)
        .where('sms_id', '<', to)
        .where((eb) => eb.not(isFinalMessage))
        .limit(1)
        .execute()
    ).length > 0;
  if (await anyOpen(db)) return { dropped: false, reason: 'not final' };
  let count = 0;
  for (let after = ''; ; ) {
    const started = performance.now();
    const rows = await db.transaction().execute(async (trx) => {
      const page = await trx
        .selectFrom('messages')
        .select(['sms_id', 'activity_key', 'user_id', 'recipient', 'created_at'])
        .where('sms_id', '>=', from)
        .where('sms_id', '<', to)
        .where('sms_id', '>', after)
        .orderBy('sms_id')
        .limit(DAY_DROP_PAGE)
        .execute();
      await forgetActivityKeys(trx, page);
      await deleteDependents(
        trx,
        page.map((r) => r.sms_id),
      );
      await forgetSearchPairs(trx, page, { from, to });
      return page;
    });
    if (rows.length === 0) break;
    count += rows.length;
    after = rows[rows.length - 1]!.sms_id;
    await afterPage?.(performance.now() - started);
  }
  try {
    return await db.transaction().execute(async (trx): Promise<DayDrop> => {
      await sql`select set_config('lock_timeout', ${lockTimeout}, true)`.execute(trx);
      await sql`lock table ${sql.table(partitionName('messages', day))} in share mode`.execute(trx);
      if (await anyOpen(trx)) return { dropped: false, reason: 'not final' };
      // A receipt that came for one of them since its page (a repeat of a final status) may have added a conversion.
      const late = await trx.selectFrom('conversions').select('sms_id').where('sms_id', '>=', from).where('sms_id', '<', to).execute();
      await deleteDependents(
        trx,
        late.map((r) => r.sms_id),
      );
      await sql`select set_config('lock_timeout', ${dropLockTimeout}, true)`.execute(trx);
      for (const table of PARTITIONED_TABLES) await sql`drop table if exists ${sql.table(partitionName(table, day))}`.execute(trx);
      return { dropped: true, messages: count };
    });
  } catch (error) {
    // 55P03 lock_not_available: the lock timeout.
    if ((error as { code?: string }).code === '55P03') return { dropped: false, reason: 'lock not granted' };
    throw error;
  }
}

/** The days whose tables may go: those that ended before `createdBefore` (dropFinishedDay decides each). None on SQLite. */
export async function findDaysToDrop(db: Kysely<Database>, createdBefore: number): Promise<number[]> {
  const state = await readPartitionState(db);
  if (!state) return [];
  return planDayPartitions({ existing: state.existing, legacyEnd: state.legacyEnd, today: Math.floor(createdBefore / DAY_MS), ahead: 0, cutoff: createdBefore })
    .drop;
}

/** An entry of recipient_messages, by its key: where a purge goes on from. */
export interface EntryPosition {
  day: number;
  recipient: string;
  createdAt: number;
  smsId: string;
}

export interface PurgeChunk {
  purged: number;
  /** The last entry looked at: the next chunk starts after it. Undefined when no entry was left to look at. */
  last?: EntryPosition;
}

/**
 * Reads up to `limit` entries of recipient_messages of days before `dayBefore`, in key order after `from`, and deletes
 * those whose message is gone or no longer has that number (deleted, blanked, or retried to another number); an entry
 * whose message still has it stays. A message's entry is not deleted with the message: a day's entries lie in no time
 * order, so deleting them message by message, oldest first, wrote a page of the tree each (bench/README.md "Retention:
 * the number's entries by the day"); read here in key order, a chunk's deletes share their pages. Run in a transaction.
 */
export async function purgeRecipientEntries(
  trx: Transaction<Database>,
  dayBefore: number,
  from: EntryPosition | undefined,
  limit = RETENTION_CHUNK,
): Promise<PurgeChunk> {
  // PostgreSQL: a view over messages, whose entries go with their rows.
  if (!dialectFlagsOf(trx).writesNumberEntries) return { purged: 0 };
  let select = trx
    .selectFrom('recipient_messages as r')
    .select([
      'r.day',
      'r.recipient',
      'r.created_at',
      'r.sms_id',
      sql<number | boolean>`exists (select 1 from messages m where m.sms_id = r.sms_id and m.recipient = r.recipient)`.as('kept'),
    ])
    .where('r.day', '<', dayBefore);
  if (from)
    select = select.where(sql<boolean>`(r.day, r.recipient, r.created_at, r.sms_id) > (${from.day}, ${from.recipient}, ${from.createdAt}, ${from.smsId})`);
  const rows = await select.orderBy('r.day').orderBy('r.recipient').orderBy('r.created_at').orderBy('r.sms_id').limit(limit).execute();
  if (rows.length === 0) return { purged: 0 };
  const stale = rows.filter((r) => !Number(r.kept));
  if (stale.length > 0) {
    // Typed: PostgreSQL reads a VALUES list's parameters as text, and compares no text to a number.
    await sql`delete from recipient_messages where (day, recipient, created_at, sms_id) in
      (values ${sql.join(stale.map((r) => sql`(cast(${r.day} as integer), ${r.recipient}, cast(${r.created_at} as bigint), ${r.sms_id})`))})`.execute(trx);
  }
  const last = rows[rows.length - 1]!;
  return { purged: stale.length, last: { day: Number(last.day), recipient: last.recipient, createdAt: Number(last.created_at), smsId: last.sms_id } };
}

/** Where a blanking scan goes on from: the last row it looked at, in time order then key order. */
export interface ScanPosition {
  at: number;
  key: string;
}

export const SCAN_START: ScanPosition = { at: -1, key: '' };

export interface BlankChunk {
  blanked: number;
  /** The last row looked at: the next chunk starts after it. Undefined when no row was left to look at. */
  last?: ScanPosition;
  /** The first row seen that was not final yet (left as it is): a later pass must look at it again. */
  firstUnfinished?: ScanPosition;
}

/**
 * Looks at up to `limit` messages created before `createdBefore` after `from` in time order, and blanks the text and
 * number of those that are final and not blanked yet. Blanked rows stay in the index, so the caller remembers where it
 * got to instead of reading them again each pass (src/delivery/retention.ts). Run in a transaction.
 */
export async function blankFinalMessages(trx: Transaction<Database>, createdBefore: number, from: ScanPosition, limit = RETENTION_CHUNK): Promise<BlankChunk> {
  const rows = await trx
    .selectFrom('messages')
    .select(['sms_id', 'created_at', 'user_id', 'recipient', sql<number | boolean>`case when ${isFinalMessage} then 1 else 0 end`.as('final')])
    .where('created_at', '<', createdBefore)
    .where('created_at', '>=', from.at)
    .where((eb) => eb.not(eb.and([eb('created_at', '=', from.at), eb('sms_id', '<=', from.key)])))
    .orderBy('created_at')
    .orderBy('sms_id')
    .limit(limit)
    .execute();
  if (rows.length === 0) return { blanked: 0 };
  const unfinished = rows.find((r) => !Number(r.final) && r.recipient !== BLANKED);
  const due = rows.filter((r) => Number(r.final) && r.recipient !== BLANKED);
  for (const ids of idChunks(
    due.map((r) => r.sms_id),
    IDS_PER_STATEMENT,
  )) {
    await trx.updateTable('messages').set({ content: null, recipient: BLANKED }).where('sms_id', 'in', ids).where(isFinalMessage).execute();
  }
  await forgetSearchPairs(trx, due);
  const last = rows[rows.length - 1]!;
  return {
    blanked: due.length,
    last: { at: Number(last.created_at), key: last.sms_id },
    firstUnfinished: unfinished && { at: Number(unfinished.created_at), key: unfinished.sms_id },
  };
}

/** Inbound SMS received before `receivedBefore` after `from`: text and sender blanked (they are all final). */
export async function blankInboundMessages(db: Db, receivedBefore: number, from: ScanPosition, limit = RETENTION_CHUNK): Promise<BlankChunk> {
  const afterId = from.key === '' ? -1 : Number(from.key);
  const rows = await db
    .selectFrom('inbound_messages')
    .select(['id', 'received_at', 'from_number'])
    .where('received_at', '<', receivedBefore)
    .where('received_at', '>=', from.at)
    .where((eb) => eb.not(eb.and([eb('received_at', '=', from.at), eb('id', '<=', afterId)])))
    .orderBy('received_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  if (rows.length === 0) return { blanked: 0 };
  const due = rows.filter((r) => r.from_number !== BLANKED);
  for (const ids of idChunks(
    due.map((r) => r.id),
    IDS_PER_STATEMENT,
  )) {
    await db.updateTable('inbound_messages').set({ content: null, from_number: BLANKED }).where('id', 'in', ids).execute();
  }
  const last = rows[rows.length - 1]!;
  return { blanked: due.length, last: { at: Number(last.received_at), key: String(last.id) } };
}

/** Receipts that arrived before `receivedBefore` and are applied or set aside (a parked one still waits). */
export async function deleteOldReceipts(db: Db, receivedBefore: number, limit = RETENTION_CHUNK): Promise<number> {
  const result = await db
    .deleteFrom('receipts')
    .where('id', 'in', (eb) =>
      eb.selectFrom('receipts').select('id').where('received_at', '<', receivedBefore).where('matched', '<>', 0).orderBy('received_at').limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** CRM events accepted before `createdBefore` that were sent or dead-lettered (never one still owed to the CRM). */
export async function deleteFinishedEvents(db: Db, createdBefore: number, limit = RETENTION_CHUNK): Promise<number> {
  const result = await db
    .deleteFrom('crm_events')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('crm_events')
        .select('id')
        .where('created_at', '<', createdBefore)
        .where((w) => w.or([w('sent_at', 'is not', null), w('dead', '=', 1)]))
        .orderBy('created_at')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Inbound SMS received before `receivedBefore`. */
export async function deleteOldInbound(db: Db, receivedBefore: number, limit = RETENTION_CHUNK): Promise<number> {
  const result = await db
    .deleteFrom('inbound_messages')
    .where('id', 'in', (eb) => eb.selectFrom('inbound_messages').select('id').where('received_at', '<', receivedBefore).orderBy('received_at').limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Spend per day (cost_daily) of days that began before `dayBefore`, and the spend of budget periods that began before
 * `periodBefore` (budget_spend): both are a few rows a day, so one statement each. The caller keeps `periodBefore`
 * behind every period still running, so no cap starts again from zero.
 */
export async function deleteOldCosts(db: Db, dayBefore: number, periodBefore: number): Promise<number> {
  const days = await db.deleteFrom('cost_daily').where('day', '<', dayBefore).executeTakeFirst();
  const periods = await db.deleteFrom('budget_spend').where('period_start', '<', periodBefore).executeTakeFirst();
  return Number(days.numDeletedRows) + Number(periods.numDeletedRows);
}
