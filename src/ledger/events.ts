/**
 * Repository for the CRM event outbox (`crm_events`): one query, one name (docs/design.md §8). Every function takes
 * the database or a transaction first, so a data change and the event it causes commit together.
 */
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { DialectFlags } from './engine/ledger.js';
import { newSmsId } from './ids.js';
import { createQueryTemplate } from './query-template.js';
import type { CrmEventsTable, Database } from './schema.js';
import { ROWS_PER_STATEMENT } from './chunks.js';
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
 * Reserves for `token` until now + lease the oldest unsent event of up to `limit` users whose oldest unsent event
 * is due and unclaimed. Only a user's head is ever claimed, so a user's events go out one after another in the
 * order accepted, while different users go out in parallel. A dead event no longer holds its user's later events.
 * One statement, so two claimers (serve and a cron flush, or two instances) never take the same row; a later
 * event cannot be claimed while an earlier one is unsent, whoever holds it. PostgreSQL skips rows another
 * claimer has locked.
 */
export async function claimDueEvents(
  db: Kysely<Database>,
  flags: DialectFlags,
  limit: number,
  now: number,
  leaseMs: number,
  token: string,
): Promise<ClaimedEvent[]> {
  const lock = flags.skipLocked ? sql` for update of e skip locked` : sql``;
  // Each user's head is min(id) over the (user_id, id) partial index, read in one pass and grouped; a correlated
  // probe per candidate row cost a probe for every unsent row on each round. The candidates are materialised
  // first, so the UPDATE cannot re-run the search for each row it looks at.
  const claimed = await sql<ClaimedEvent>`
    with heads as materialized (
      select e.id from (
        select min(id) as id from crm_events ${indexedBy(flags, 'crm_events_unsent_user')} where sent_at is null and dead = 0 group by user_id
      ) h join crm_events e on e.id = h.id
      where e.next_attempt_at <= ${now} and e.claimed_until <= ${now}
      order by e.id limit ${limit}${lock}
    )
    update crm_events set claimed_until = ${now + leaseMs}, claim_token = ${token}
    where id in (select id from heads) and claimed_until <= ${now} and +sent_at is null and +dead = 0
    returning id, event_id, type, method, path, user_id, payload_json, attempts, created_at, traceparent`.execute(db);
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

export const markEventsSent = outbox.markSent;

/** Backs an event off until `nextAttemptAt`, or dead-letters it (refused, or relay.max_attempts spent). */
export async function markEventsFailed(db: Db, rows: FailedOutboxRow[], token: string): Promise<void> {
  await outbox.markFailed(db, rows, token);
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
