/**
 * Repository for held messages (quiet hours, src/sms/quiet-hours.ts) and their outbox, held_sends: the same claim /
 * mark / back-off pattern as the other outboxes (src/ledger/outbox.ts). A held message is a `messages` row in state
 * `held` and a held_sends row owed to its provider. Handing it to the send path moves the message from `held` (or
 * `retryable`, after a transient failure) to `dispatching` in one conditional UPDATE, so of two instances, or a claim
 * taken over after a lease, only one sends it; from there the send path's own crash handling applies
 * (docs/crash-windows.md).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { insertConversions } from './conversions.js';
import { dialectFlagsOf } from './engine/flags.js';
import type { DialectFlags } from './engine/ledger.js';
import { insertHeldMessageRows, type NewMessage } from './messages.js';
import { indexedBy, outboxStatements, type FailedOutboxRow } from './outbox.js';
import { countOwed, oldestOwed, type OwedIndex } from './owed-backlog.js';
import type { Database, MessagesTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** What the claim of a held message needs beside the message row. */
export interface HoldRow {
  quietWindow: string;
  content: string;
  releaseAt: number;
  expiresAt: number;
}

/**
 * Inserts the messages whose activity_key is new as `held` until their release, each with its held_sends row, in the
 * caller's transaction; returns the keys inserted (a repeat keeps its first row, as insertNewMessages does).
 */
export async function insertHeldMessages(db: Db, rows: Array<{ message: NewMessage; hold: HoldRow }>, now: number): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const inserted = await insertHeldMessageRows(
    db,
    rows.map((r) => ({ ...r.message, held_until: r.hold.releaseAt })),
  );
  const held = rows.filter((r) => inserted.has(r.message.activity_key));
  if (held.length === 0) return inserted;
  await db
    .insertInto('held_sends')
    .values(
      held.map((r) => ({
        sms_id: r.message.sms_id,
        quiet_window: r.hold.quietWindow,
        content: r.hold.content,
        release_at: r.hold.releaseAt,
        expires_at: r.hold.expiresAt,
        attempts: 0,
        next_attempt_at: Math.min(r.hold.releaseAt, r.hold.expiresAt),
        claimed_until: 0,
        dead: 0,
        created_at: now,
      })),
    )
    .execute();
  return inserted;
}

/**
 * A message just reclaimed for a retry (reclaimMessageForRetry) that arrives inside its quiet hours: `held` instead,
 * its held_sends row made (or made owed again) for the new release; the reclaim's attempt is taken back, since
 * nothing was sent.
 */
export async function holdReclaimedMessage(db: Db, smsId: string, hold: HoldRow, now: number): Promise<void> {
  await db
    .updateTable('messages')
    .set((eb) => ({ state: 'held', held_until: hold.releaseAt, attempts: eb('attempts', '-', 1) }))
    .where('sms_id', '=', smsId)
    .execute();
  const due = Math.min(hold.releaseAt, hold.expiresAt);
  const owed = {
    quiet_window: hold.quietWindow,
    content: hold.content,
    release_at: hold.releaseAt,
    expires_at: hold.expiresAt,
    attempts: 0,
    next_attempt_at: due,
    claimed_until: 0,
    claim_token: null,
    last_error: null,
    dead: 0,
    done_at: null,
  };
  await db
    .insertInto('held_sends')
    .values({ sms_id: smsId, ...owed, created_at: now })
    .onConflict((oc) => oc.column('sms_id').doUpdateSet(owed))
    .execute();
}

export interface DueHeldSend {
  id: number;
  sms_id: string;
  quiet_window: string;
  content: string | null;
  release_at: number;
  expires_at: number;
  attempts: number;
}

/** Reserves up to `limit` held messages whose time has come for `token` until now + lease, soonest first. */
export async function claimDueHeldSends(
  db: Kysely<Database>,
  flags: DialectFlags,
  limit: number,
  now: number,
  leaseMs: number,
  token: string,
): Promise<DueHeldSend[]> {
  const lock = flags.skipLocked ? sql` for update skip locked` : sql``;
  const claimed = await sql<DueHeldSend>`
    update held_sends set claimed_until = ${now + leaseMs}, claim_token = ${token}
    where id in (
      select id from held_sends ${indexedBy(flags, 'held_sends_due')}
      where done_at is null and dead = 0 and next_attempt_at <= ${now} and claimed_until <= ${now}
      order by next_attempt_at limit ${limit}${lock}
    ) and +done_at is null and +dead = 0 and claimed_until <= ${now}
    returning id, sms_id, quiet_window, content, release_at, expires_at, attempts`.execute(db);
  return claimed.rows
    .map((r) => ({ ...r, id: Number(r.id), release_at: Number(r.release_at), expires_at: Number(r.expires_at), attempts: Number(r.attempts) }))
    .sort((a, b) => a.release_at - b.release_at);
}

/** The held sends outbox as src/ledger/outbox.ts describes a table. */
const outbox = outboxStatements({
  table: 'held_sends',
  columns: { attempts: 'attempts', nextAttemptAt: 'next_attempt_at', claimedUntil: 'claimed_until', claimToken: 'claim_token', error: 'last_error' },
  // Done: handed to the send path (or expired); the text is not kept past it.
  sent: (now) => ({ done_at: now, content: null }),
  state: (dead) => ({ dead: dead ? 1 : 0 }),
  deadWhere: 'dead = 1 and done_at is null',
  clearsToken: true,
  errorLimit: 500,
});

export async function markHeldSendsDone(db: Db, ids: number[], token: string, now: number): Promise<void> {
  await outbox.markSent(db, ids, token, now, null);
}

export async function markHeldSendsFailed(db: Db, failed: FailedOutboxRow[], token: string): Promise<void> {
  await outbox.markFailed(db, failed, token);
}

/** Dead held messages due again now: the given ids, or every one. Answers how many. */
export async function replayDeadHeldSends(db: Db, now: number, ids?: number[]): Promise<number> {
  return outbox.replayDead(db, now, (query) => (ids ? query.where('id', 'in', ids.length > 0 ? ids : [-1]) : query));
}

/** A held message's number, to ask whether its window is open at its release. */
export async function findHeldRecipient(db: Db, smsId: string): Promise<string | undefined> {
  const row = await db.selectFrom('messages').select('recipient').where('sms_id', '=', smsId).executeTakeFirst();
  return row?.recipient;
}

/**
 * A held message whose window is closed at its release (the gateway was down through it, or its send was retried past
 * its end): released again at `releaseAt`, its claim given up; still owed.
 */
export async function holdAgain(db: Db, row: Pick<DueHeldSend, 'id' | 'sms_id' | 'expires_at'>, releaseAt: number): Promise<void> {
  await db
    .updateTable('held_sends')
    .set({ release_at: releaseAt, next_attempt_at: Math.min(releaseAt, row.expires_at), claimed_until: 0, claim_token: null })
    .where('id', '=', row.id)
    .where('done_at', 'is', null)
    .execute();
  await db.updateTable('messages').set({ held_until: releaseAt }).where('sms_id', '=', row.sms_id).where('state', 'in', ['held', 'retryable']).execute();
}

/** The message's fields the send path needs to send it again. */
export type HeldMessage = Pick<
  MessagesTable,
  'sms_id' | 'activity_key' | 'activity_json' | 'user_id' | 'provider' | 'recipient' | 'sender' | 'encoding' | 'segments' | 'created_at'
>;

/**
 * What taking a held message found: `taken` it is `dispatching` now and this caller sends it; `done` nothing is left to
 * do (sent, refused, ended); `wait` a send of it is under way or unresolved (its process died mid-call: the sweep and
 * the lookups resolve it first, docs/crash-windows.md), so look again later.
 */
export type HeldTake = { outcome: 'taken'; message: HeldMessage } | { outcome: 'done' } | { outcome: 'wait'; state: string };

export async function takeHeldMessage(db: Db, smsId: string, now: number): Promise<HeldTake> {
  const taken = await db
    .updateTable('messages')
    .set((eb) => ({ state: 'dispatching', dispatched_at: now, updated_at: now, attempts: eb('attempts', '+', 1), lookup_result: null }))
    .where('sms_id', '=', smsId)
    .where('state', 'in', ['held', 'retryable'])
    .where('delivery_status', 'is', null)
    .returning(['sms_id', 'activity_key', 'activity_json', 'user_id', 'provider', 'recipient', 'sender', 'encoding', 'segments', 'created_at'])
    .executeTakeFirst();
  if (taken) return { outcome: 'taken', message: { ...taken, segments: Number(taken.segments), created_at: Number(taken.created_at) } };
  const row = await db.selectFrom('messages').select(['state', 'delivery_status']).where('sms_id', '=', smsId).executeTakeFirst();
  if (!row || row.delivery_status !== null || row.state === 'submitted' || row.state === 'rejected') return { outcome: 'done' };
  return { outcome: 'wait', state: row.state };
}

/**
 * A held message past quiet_hours.max_wait (or refused by its provider once released, or whose validity ran out while
 * held): it ends `failed`, with its conversion queued, in one transaction. Only a message not sent and not under way,
 * or, with `taken`, the one its caller took (takeHeldMessage) and did not send: answers whether it changed.
 */
export async function failHeldMessage(db: Db, smsId: string, failure: { error: string; code: string }, now: number, taken = false): Promise<boolean> {
  const changed = await db
    .updateTable('messages')
    .set({ state: 'rejected', error: failure.error, error_code: failure.code, delivery_status: 'failed', completed_at: now, updated_at: now })
    .where('sms_id', '=', smsId)
    .where('state', 'in', taken ? ['dispatching'] : ['held', 'retryable', 'rejected'])
    .where('delivery_status', 'is', null)
    .executeTakeFirst();
  if (Number(changed.numUpdatedRows) !== 1) return false;
  await insertConversions(db, [{ smsId, status: 'failed' }], now);
  return true;
}

export interface HeldBacklog {
  /** Held messages not yet handed to their provider (waiting for their window, or backed off). */
  owed: number;
  /** Of those, tried at least once. */
  retrying: number;
  dead: number;
  /** When the oldest owed one arrived, or null. */
  oldestAt: number | null;
  /** The soonest time one is looked at again, or null. */
  nextAt: number | null;
}

const OWED_HELD: OwedIndex = { table: 'held_sends', done: 'done_at' };

/** Counted and dated in held_sends_owed alone (owed-backlog.ts); the next time to look, the first entry of held_sends_due. */
export async function countHeldBacklog(db: Db): Promise<HeldBacklog> {
  const owed = await countOwed(db, OWED_HELD, 0);
  const dead = await countOwed(db, OWED_HELD, 1);
  const next = await sql<{ next_attempt_at: number | string }>`select next_attempt_at from held_sends
    ${indexedBy(dialectFlagsOf(db), 'held_sends_due')} where done_at is null and dead = 0 order by next_attempt_at limit 1`.execute(db);
  return {
    owed: owed.rows,
    retrying: owed.retrying,
    dead: dead.rows,
    oldestAt: await oldestOwed(db, OWED_HELD, 0),
    nextAt: next.rows[0] === undefined ? null : Number(next.rows[0].next_attempt_at),
  };
}

/** Dead held messages, newest first (none while every failure is retried until quiet_hours.max_wait). */
export async function listDeadHeldSends(db: Db, limit: number) {
  const rows = await db
    .selectFrom('held_sends')
    .select(['id', 'sms_id', 'attempts', 'last_error', 'release_at'])
    .where('dead', '=', 1)
    .where('done_at', 'is', null)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), attempts: Number(r.attempts), release_at: Number(r.release_at) }));
}
