/**
 * Repository for the CRM event outbox (`crm_events`): one query, one name (docs/design.md §8). Every function takes
 * the database or a transaction first, so a data change and the event it causes commit together.
 */
import { sql, type Kysely, type RawBuilder, type Selectable, type Transaction } from 'kysely';
import type { DialectFlags } from './engine/ledger.js';
import { newSmsId } from './ids.js';
import { createQueryTemplate } from './query-template.js';
import type { CrmEventsTable, Database } from './schema.js';
import { IDS_PER_STATEMENT, idChunks, ROWS_PER_STATEMENT } from './chunks.js';
import { dialectFlagsOf } from './engine/flags.js';
import { named } from './engine/statement-names.js';
import { indexedBy, outboxStatements, type FailedOutboxRow } from './outbox.js';
import { countOwed, oldestOwed, type OwedIndex } from './owed-backlog.js';
import type { NewEvent } from '../crm/user-events.js';

export type { NewEvent };

type Db = Kysely<Database> | Transaction<Database>;
export type EventRow = Selectable<CrmEventsTable>;

/** Event ids are UUIDv7 like sms_ids: time-ordered, so the unique index grows at its end. */
export const newEventId = newSmsId;

function toRow(event: NewEvent, now: number, dedupKey: string | null, fingerprint: string | null = null) {
  return {
    event_id: newEventId(),
    type: event.type,
    method: event.method,
    path: event.path,
    user_id: event.userId,
    payload_json: typeof event.payload === 'string' ? event.payload : JSON.stringify(event.payload),
    source: event.source ?? 'gateway',
    dedup_key: dedupKey,
    body_fingerprint: fingerprint,
    attempts: 0,
    next_attempt_at: now,
    claimed_until: 0,
    dead: 0,
    created_at: now,
    sms_id: event.smsId ?? null,
    traceparent: event.traceparent ?? null,
  } as const;
}

type EventInsert = ReturnType<typeof toRow>;

// Compiled once per shape: the relay inserts one row per accepted event (src/ledger/query-template.ts).
const insertEventTemplate = createQueryTemplate((db: Kysely<Database>, row: EventInsert) => db.insertInto('crm_events').values(row));
const insertEventOnceTemplate = createQueryTemplate((db: Kysely<Database>, row: EventInsert) =>
  db
    .insertInto('crm_events')
    .values(row)
    .onConflict((oc) => oc.column('dedup_key').doNothing())
    .returning('event_id'),
);

/** Queues one event and answers its event_id. Pass the transaction of the change that causes it. */
export async function enqueueEvent(db: Db, event: NewEvent, now: number = Date.now()): Promise<string> {
  const row = toRow(event, now, null);
  await insertEventTemplate(db, row);
  return row.event_id;
}

/** Queues many events in statements of 200 rows (import users); answers their event_ids in order. */
export async function enqueueEvents(db: Db, events: NewEvent[], now: number = Date.now()): Promise<string[]> {
  const rows = events.map((e) => toRow(e, now, null));
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT)
    await db
      .insertInto('crm_events')
      .values(rows.slice(i, i + ROWS_PER_STATEMENT))
      .execute();
  return rows.map((r) => r.event_id);
}

/** What enqueueEventOnce did: queued the event, or found the event that took its key first. */
export type EnqueueOnceResult = { queued: true; eventId: string } | { queued: false; first: { eventId: string; fingerprint: string | null } };

/**
 * Queues an event that may exist only once per `dedupKey`, keeping `fingerprint` (the body's, as received) beside it.
 * When the key was taken, nothing is queued and the first event's id and fingerprint are answered, for the caller to
 * tell a retry from another body (src/events/bonus-event.ts). On PostgreSQL a concurrent insert of the same key
 * waits for the other transaction and then yields to it, so the unique constraint decides.
 */
export async function enqueueEventOnce(db: Db, event: NewEvent, dedupKey: string, fingerprint: string, now: number = Date.now()): Promise<EnqueueOnceResult> {
  const row = toRow(event, now, dedupKey, fingerprint);
  const [inserted] = (await insertEventOnceTemplate(db, row)).rows;
  if (inserted) return { queued: true, eventId: inserted.event_id };
  const first = await db.selectFrom('crm_events').select(['event_id', 'body_fingerprint']).where('dedup_key', '=', dedupKey).executeTakeFirstOrThrow();
  return { queued: false, first: { eventId: first.event_id, fingerprint: first.body_fingerprint } };
}

/** What a claim hands the transport: the row's columns it needs, typed from the table itself. */
export type ClaimedEvent = Pick<
  EventRow,
  'id' | 'event_id' | 'type' | 'method' | 'path' | 'user_id' | 'payload_json' | 'attempts' | 'created_at' | 'traceparent'
>;

/**
 * The key of the lock the heads' writers take in turn on PostgreSQL (pg_advisory_xact_lock): "crmh" as four bytes.
 * Nothing else in the ledger takes an advisory lock.
 */
const HEADS_LOCK = 0x63726d68;

/**
 * Runs `work` in a transaction (the caller's, or one of its own) that holds the heads' lock where writers run at once
 * (DialectFlags.concurrentWriters). Deciding a new event, claiming a head and promoting the event after a head each
 * read the player's other owed events. Run at once on PostgreSQL, each could miss what the other has not committed: a
 * new event decided to wait behind a head being sent, while the send's search for the next head did not see the new
 * event yet. That player's events would then wait for ever. Enqueueing takes no lock: a new event waits undecided
 * until a round decides it under the lock.
 */
async function withHeadsLock<T>(db: Db, flags: DialectFlags, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const locked = async (trx: Transaction<Database>) => {
    if (flags.concurrentWriters) await sql`select pg_advisory_xact_lock(${sql.lit(HEADS_LOCK)})`.execute(trx);
    return work(trx);
  };
  return db.isTransaction ? locked(db as Transaction<Database>) : (db as Kysely<Database>).transaction().execute(locked);
}

/** The id of the oldest owed event of the player `userId` names: one seek into crm_events_unsent_user. */
function oldestOwedOf(flags: DialectFlags, userId: string): RawBuilder<number> {
  // A scalar min(), not NOT EXISTS: PostgreSQL may plan a NOT EXISTS as a join over every owed row.
  return sql<number>`(
    select min(o.id) from crm_events o ${indexedBy(flags, 'crm_events_unsent_user')}
    where o.user_id = ${sql.ref(userId)} and o.sent_at is null and o.dead = 0
  )`;
}

/** "`e` is its player's oldest owed event". */
function isOldestOwed(flags: DialectFlags, e: string): RawBuilder<boolean> {
  return sql<boolean>`${sql.ref(`${e}.id`)} = ${oldestOwedOf(flags, `${e}.user_id`)}`;
}

/** Owed events decided per round, oldest first: a burst larger than this is decided over the next rounds. */
const DECIDED_PER_ROUND = 2_000;

/**
 * Settles the heads after a round's marks (or a round that claimed nothing), in one statement:
 * - each player whose event left the outbox (`left`: sent, or dead) gets its next owed event as head, where that was
 *   waiting (0);
 * - the new owed events (`head` null: new ones, and dead ones replayed that died before the heads were kept) that the
 *   claim will not take as they are, the first DECIDED_PER_ROUND not claimed: one behind an older owed event of its
 *   player waits (0); one that is its player's oldest owed but backing off is a head (1), due by its time.
 * A new event that is its player's oldest owed and due stays undecided, for the next claim to take at once
 * (claimDueEvents). One seek into crm_events_unsent_user for each row looked at, so the cost follows what arrived and
 * what left, not the backlog. Sent named on PostgreSQL, as the claim is (engine/statement-names.ts): planned anew each
 * round, each cost more to plan than to run.
 */
async function settleEventHeads(trx: Db, flags: DialectFlags, now: number, left: number[]): Promise<void> {
  const waits = sql<boolean>`exists (
      select 1 from crm_events p ${indexedBy(flags, 'crm_events_unsent_user')}
      where p.user_id = crm_events.user_id and p.id < crm_events.id and p.sent_at is null and p.dead = 0
    )`;
  const undecided = sql`select id from crm_events ${indexedBy(flags, 'crm_events_undecided')}
    where head is null and sent_at is null and dead = 0 and claimed_until <= ${now}
    order by id limit ${DECIDED_PER_ROUND}`;
  const next = (ids: number[]) => sql`select ${oldestOwedOf(flags, 's.user_id')} as id from crm_events s where s.id in (${sql.join(ids)})`;
  const chunks = idChunks(left, IDS_PER_STATEMENT);
  for (const [i, chunk] of (chunks.length > 0 ? chunks : [[]]).entries()) {
    // The first statement also decides; a round's further chunks (more than IDS_PER_STATEMENT left) only promote.
    const rows = chunk.length === 0 ? undecided : i === 0 ? sql`select id from (${undecided}) d union ${next(chunk)}` : next(chunk);
    // The state checks are on the row itself: PostgreSQL checks them again on a row changed since the statement began,
    // so a head promoted meanwhile is not set back.
    await named(sql`update crm_events set head = case when ${waits} then 0 else 1 end
      where id in (${rows})
        and ((head is null and (${waits} or next_attempt_at > ${now})) or (head = 0 and not ${waits}))`).execute(trx);
  }
}

const CLAIMED_COLUMNS = sql`id, event_id, type, method, path, user_id, payload_json, attempts, created_at, traceparent`;

/**
 * Reserves for `token` until now + lease up to `limit` heads that are due and unclaimed: each player's oldest owed
 * event, so a player's events go out one after another in the order accepted while players go out in parallel. A
 * dead event no longer holds its player's later events. One statement claims, from two indexes:
 * - the heads already decided, earliest due first, by when they are due (crm_events_due_heads);
 * - then, up to the limit, the new events that are their player's oldest owed, oldest first, claimed undecided: an
 *   event sent at once is never decided, so it is written no more often than before the heads were kept, and its
 *   claim changes no indexed column (PostgreSQL can update it in place).
 * It does not take the heads' lock (withHeadsLock): what it writes decides nothing. The other new events are decided
 * by the marks of the round (markEventsSent, markEventsFailed), or here when the round claimed nothing
 * (settleEventHeads).
 * A round so reads what it claims and what arrived, not the backlog. Each candidate is checked against the player's
 * owed events (isOldestOwed): a dead event was its player's head when it died and is one again when replayed, so it
 * goes before the head promoted while it was dead, which waits its turn behind it. Two claimers (serve and a cron
 * flush, or two instances) never take the same row; a later event cannot be claimed while an earlier one is owed,
 * whoever holds it.
 */
export async function claimDueEvents(
  db: Kysely<Database>,
  flags: DialectFlags,
  limit: number,
  now: number,
  leaseMs: number,
  token: string,
): Promise<ClaimedEvent[]> {
  // The claim takes only rows no one else holds, and waits for none: a claim that waited for a row a settling round
  // had changed, while that round waited for a row the claim had changed, was a deadlock (two instances and a cron
  // flush on PostgreSQL, test/events/relay-processes.test.ts). So the decided heads are locked as they are found, and
  // the new events once chosen (a slice of DECIDED_PER_ROUND may hold many a round does not claim, and locking each
  // would write it). The UPDATE's own checks keep a row claimed or sent meanwhile from being claimed twice.
  const lock = flags.skipLocked ? sql` for update of e skip locked` : sql``;
  const freshLock = flags.skipLocked ? sql` for update of f skip locked` : sql``;
  // The candidates are materialised first, so the UPDATE cannot re-run the search for each row it looks at.
  const claimed = await named(sql<ClaimedEvent>`
      with heads as materialized (
        select id from (
          select e.id from crm_events e ${indexedBy(flags, 'crm_events_due_heads')}
          where e.head = 1 and e.sent_at is null and e.dead = 0 and e.next_attempt_at <= ${now} and e.claimed_until <= ${now}
            and ${isOldestOwed(flags, 'e')}
          order by e.next_attempt_at, e.id limit ${limit}${lock}
        ) due
        union all
        select id from (
          select f.id from crm_events f where f.id in (
            select n.id from (
              select e.id, e.user_id, e.next_attempt_at, e.claimed_until from crm_events e ${indexedBy(flags, 'crm_events_undecided')}
              where e.head is null and e.sent_at is null and e.dead = 0
              order by e.id limit ${DECIDED_PER_ROUND}
            ) n
            where n.next_attempt_at <= ${now} and n.claimed_until <= ${now} and ${isOldestOwed(flags, 'n')}
            order by n.id limit ${limit}
          )
          order by f.id${freshLock}
        ) fresh
        limit ${limit}
      )
      update crm_events set claimed_until = ${now + leaseMs}, claim_token = ${token}
      where id in (select id from heads) and claimed_until <= ${now} and +sent_at is null and +dead = 0
      returning ${CLAIMED_COLUMNS}`).execute(db);
  // The marks of what was claimed decide what arrived meanwhile; a round that claimed nothing decides it here.
  if (claimed.rows.length === 0) await withHeadsLock(db, flags, (trx) => settleEventHeads(trx, flags, now, []));
  return claimed.rows.map((r) => ({ ...r, id: Number(r.id), created_at: Number(r.created_at) })).sort((a, b) => a.id - b.id);
}

/** The CRM event outbox as src/ledger/outbox.ts describes a table. */
const outbox = outboxStatements({
  table: 'crm_events',
  columns: { attempts: 'attempts', nextAttemptAt: 'next_attempt_at', claimedUntil: 'claimed_until', claimToken: 'claim_token', error: 'last_error' },
  sent: (now, status) => ({ sent_at: now, http_status: status }),
  state: (dead) => ({ dead: dead ? 1 : 0 }),
  deadWhere: 'dead = 1 and sent_at is null',
  failed: (status) => ({ http_status: status }),
  clearsToken: false,
  errorLimit: 500,
});

/** Marks events the CRM took, makes each one's player's next owed event its head, and decides the new events. */
export async function markEventsSent(db: Db, ids: number[], token: string, now: number, status: number | null): Promise<void> {
  const flags = dialectFlagsOf(db);
  await withHeadsLock(db, flags, async (trx) => {
    await outbox.markSent(trx, ids, token, now, status);
    await settleEventHeads(trx, flags, now, ids);
  });
}

/**
 * Backs an event off until `nextAttemptAt`, or dead-letters it (refused, or relay.max_attempts spent) and promotes
 * the next; then decides the new events, the event backed off among them if it was claimed undecided.
 */
export async function markEventsFailed(db: Db, rows: FailedOutboxRow[], token: string, now: number): Promise<void> {
  const flags = dialectFlagsOf(db);
  await withHeadsLock(db, flags, async (trx) => {
    await outbox.markFailed(trx, rows, token);
    await settleEventHeads(
      trx,
      flags,
      now,
      rows.filter((r) => r.dead).map((r) => r.id),
    );
  });
}

/** Which dead events a replay takes: the given event_ids, or every one of a type and/or user (all when empty). */
export interface DeadEventMatch {
  eventIds?: string[];
  type?: string;
  userId?: string;
}

/** Dead events back to due (all, the given event_ids, or those matching); answers how many. */
export async function replayDeadEvents(db: Db, now: number, match: string[] | DeadEventMatch = {}): Promise<number> {
  const { eventIds, type, userId } = Array.isArray(match) ? { eventIds: match } : match;
  return outbox.replayDead(db, now, (query) => {
    let q = query;
    if (eventIds) q = q.where('event_id', 'in', eventIds);
    if (type !== undefined) q = q.where('type', '=', type);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return q;
  });
}

/**
 * How a transport's error begins when the broker took an event but no queue or partition holds it (a RabbitMQ
 * basic.return, an unknown Kafka topic): the backlog counts those apart (`notRouted`), since they mean a binding or a
 * topic missing on the CRM's side rather than a broker that is down.
 */
export const NOT_ROUTED_ERROR_PREFIX = 'not routed: ';

export interface EventBacklog {
  /** Unsent, not dead. */
  unsent: number;
  /** Of those, the ones that failed at least once. */
  retrying: number;
  dead: number;
}

const OWED_EVENTS: OwedIndex = { table: 'crm_events', done: 'sent_at' };

/** Counted in crm_events_unsent_state alone, a slice at a time (owed-backlog.ts). */
export async function countEventBacklog(db: Db): Promise<EventBacklog> {
  const owed = await countOwed(db, OWED_EVENTS, 0);
  const dead = await countOwed(db, OWED_EVENTS, 1);
  return { unsent: owed.rows, retrying: owed.retrying, dead: dead.rows };
}

/** Acceptance time of the oldest unsent event (dead ones excluded), or null when none is owed (owed-backlog.ts). */
export function oldestUnsentEvent(db: Db): Promise<number | null> {
  return oldestOwed(db, OWED_EVENTS, 0);
}

/**
 * Owed events whose last attempt the broker routed to no queue or partition (NOT_ROUTED_ERROR_PREFIX). Reads each
 * retrying event's row, so the console and `flush` ask for it, never a /metrics scrape.
 */
export async function countNotRoutedEvents(db: Db): Promise<number> {
  const row = await db
    .selectFrom('crm_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('sent_at', 'is', null)
    .where('dead', '=', 0)
    .where('attempts', '>', 0)
    .where('last_error', 'like', `${NOT_ROUTED_ERROR_PREFIX}%`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export type EventStatus = 'pending' | 'sent' | 'dead';

/** One page of events, newest first, after the keyset cursor `before` (an internal id). */
export async function listEvents(
  db: Db,
  filter: { userId?: string; status?: EventStatus; type?: string; before?: number; limit: number },
): Promise<EventRow[]> {
  // status=dead reads the partial index crm_events_dead (id) where dead = 1, or crm_events_user with user_id.
  let query = db.selectFrom('crm_events').selectAll().orderBy('id', 'desc').limit(filter.limit);
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  if (filter.type !== undefined) query = query.where('type', '=', filter.type);
  if (filter.before !== undefined) query = query.where('id', '<', filter.before);
  if (filter.status === 'sent') query = query.where('sent_at', 'is not', null);
  // A literal, not a parameter: SQLite uses a partial index only when it can see the query implies its condition.
  if (filter.status === 'dead') query = query.where(sql<boolean>`dead = 1`);
  if (filter.status === 'pending') query = query.where('sent_at', 'is', null).where('dead', '=', 0);
  return (await query.execute()).map((r) => ({ ...r, id: Number(r.id) }));
}

export async function findEventById(db: Db, eventId: string): Promise<EventRow | undefined> {
  return db.selectFrom('crm_events').selectAll().where('event_id', '=', eventId).executeTakeFirst();
}

/** The events a message's send caused (crm_events_sms_id), oldest first: for its timeline. */
export async function findEventsBySmsId(db: Db, smsId: string): Promise<EventRow[]> {
  const rows = await db.selectFrom('crm_events').selectAll().where('sms_id', '=', smsId).orderBy('id').execute();
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}
