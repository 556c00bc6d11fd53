/** Repository for the conversion outbox: one query, one name (docs/design.md §8). */
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import type { DeliveryStatus } from '../../providers/types.js';
import type { DialectFlags } from './engine/ledger.js';
import { createQueryTemplate } from './query-template.js';
import type { ConversionAttemptsTable, ConversionsTable, Database } from './schema.js';
import { IDS_PER_STATEMENT, ROWS_PER_STATEMENT, idChunks, statementChunks } from './chunks.js';
import { indexedBy, outboxStatements, type FailedOutboxRow } from './outbox.js';
import { countOwed, oldestOwed, type OwedIndex } from './owed-backlog.js';

type Db = Kysely<Database> | Transaction<Database>;

const insertConversionsTemplate = createQueryTemplate((db: Kysely<Database>, rows: Array<Insertable<ConversionsTable>>) =>
  db.insertInto('conversions').values(rows),
);

export async function insertConversions(db: Db, rows: Array<{ smsId: string; status: DeliveryStatus }>, now: number): Promise<void> {
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) {
    await insertConversionsTemplate(
      db,
      part.map((r) => ({
        sms_id: r.smsId,
        delivery_status: r.status,
        attempts: 0,
        next_attempt_at: now,
        claimed_until: 0,
        dead: 0,
        created_at: now,
        post_group: null,
      })),
    );
  }
}

export interface ClaimedConversion {
  id: number;
  sms_id: string;
  delivery_status: DeliveryStatus;
  attempts: number;
  activity_json: string;
  activity_key: string;
  /** The claim that first took it into a post (this claim's token for a row never posted before). */
  post_group: string;
  /** The message's send span (docs/tracing.md); read only when the claimer asks for it, else undefined. */
  traceparent?: string | null;
}

/**
 * Reserves up to `limit` due rows for `token` until now + lease, in one statement so two claimers (serve and a
 * cron flush, or two instances) never take the same row. PostgreSQL skips rows another claimer has locked. The
 * message's activity comes back with each row (a lookup by primary key each), not from a second statement, except
 * where messages is partitioned by day (DialectFlags.partitionsByDay): a lookup by a column of another table is
 * planned over every day's table, twice a claim, and that planning cost the claim six times the flat layout's
 * (bench/README.md "Day partitions: the parked-receipts probe and the conversion claim"). There the claim's messages
 * are read after it, by their ids, which prunes to their days, in the claim's transaction.
 * A row keeps the post_group of the first claim that took it, so the conversion outbox can post it with the same rows again.
 */
export async function claimDueConversions(
  db: Db,
  flags: DialectFlags,
  limit: number,
  now: number,
  leaseMs: number,
  token: string,
  withTraceparent = false,
): Promise<ClaimedConversion[]> {
  const lock = flags.skipLocked ? sql` for update skip locked` : sql``;
  const traceparent = withTraceparent ? sql`, (select traceparent from messages where messages.sms_id = conversions.sms_id) as traceparent` : sql``;
  const messageFields = flags.partitionsByDay
    ? sql``
    : sql`,
      (select activity_json from messages where messages.sms_id = conversions.sms_id) as activity_json,
      (select activity_key from messages where messages.sms_id = conversions.sms_id) as activity_key${traceparent}`;
  const claimed = await sql<ClaimedConversion>`
    update conversions set claimed_until = ${now + leaseMs}, claim_token = ${token}, post_group = coalesce(post_group, ${token})
    where id in (
      select id from conversions ${indexedBy(flags, 'conversions_due')}
      where posted_at is null and dead = 0 and next_attempt_at <= ${now} and claimed_until <= ${now}
      order by next_attempt_at, id limit ${limit}${lock}
    ) and claimed_until <= ${now}
    returning id, sms_id, delivery_status, attempts, post_group${messageFields}`.execute(db);
  const rows = claimed.rows.map((r) => ({ ...r, id: Number(r.id) })).sort((a, b) => a.id - b.id);
  return flags.partitionsByDay ? withTheirMessages(db, rows, withTraceparent) : rows;
}

type MessageFields = Pick<ClaimedConversion, 'activity_json' | 'activity_key' | 'traceparent'>;

/** What a conversion whose message is gone reads: nulls, as the flat layout's subqueries read them. */
const GONE = { activity_json: null, activity_key: null, traceparent: null } as unknown as MessageFields;

/** The claimed rows with their messages' activity (and send span), read by the messages' ids. */
async function withTheirMessages(db: Db, rows: ClaimedConversion[], withTraceparent: boolean): Promise<ClaimedConversion[]> {
  const messages = new Map<string, MessageFields>();
  for (const ids of idChunks([...new Set(rows.map((r) => r.sms_id))], IDS_PER_STATEMENT)) {
    const found = await db.selectFrom('messages').select(['sms_id', 'activity_json', 'activity_key', 'traceparent']).where('sms_id', 'in', ids).execute();
    for (const m of found) messages.set(m.sms_id, m);
  }
  return rows.map((r) => {
    const { activity_json, activity_key, traceparent } = messages.get(r.sms_id) ?? GONE;
    return { ...r, activity_json, activity_key, ...(withTraceparent ? { traceparent } : {}) };
  });
}

/** The conversion outbox as src/ledger/outbox.ts describes a table. */
const outbox = outboxStatements({
  table: 'conversions',
  columns: { attempts: 'attempts', nextAttemptAt: 'next_attempt_at', claimedUntil: 'claimed_until', claimToken: 'claim_token', error: 'last_error' },
  sent: (now) => ({ posted_at: now }),
  state: (dead) => ({ dead: dead ? 1 : 0 }),
  deadWhere: 'dead = 1 and posted_at is null',
  clearsToken: false,
});

/** Posted after a 2xx: the rows and their attempt, in the caller's transaction. */
export async function markPosted(db: Db, ids: number[], token: string, now: number, httpStatus: number | null): Promise<void> {
  await outbox.markSent(db, ids, token, now, httpStatus);
  await recordAttempts(
    db,
    ids.map((id) => ({ id, ok: true, status: httpStatus, error: null })),
    now,
  );
}

/** Backs each row off until its nextAttemptAt, or dead-letters it when its retry budget is spent; logs the attempt. */
export async function markFailed(db: Db, rows: FailedOutboxRow[], token: string, now: number): Promise<void> {
  await outbox.markFailed(db, rows, token);
  await recordAttempts(
    db,
    rows.map((r) => ({ id: r.id, ok: false, status: r.httpStatus, error: r.error })),
    now,
  );
}

const recordAttemptsTemplate = createQueryTemplate((db: Kysely<Database>, rows: Array<Insertable<ConversionAttemptsTable>>) =>
  db.insertInto('conversion_attempts').values(rows),
);

async function recordAttempts(db: Db, attempts: Array<{ id: number; ok: boolean; status: number | null; error: string | null }>, now: number): Promise<void> {
  for (const part of statementChunks(attempts, ROWS_PER_STATEMENT)) {
    await recordAttemptsTemplate(
      db,
      part.map((a) => ({ conversion_id: a.id, attempted_at: now, ok: a.ok ? 1 : 0, http_status: a.status, error: a.error })),
    );
  }
}

/** Which dead letters: given ids, or those of a provider and/or a delivery status (none given: all of them). */
export interface DeadLetterMatch {
  ids?: number[];
  provider?: string;
  status?: DeliveryStatus;
}

/** Dead rows back to due (all of them, the given ids, or those matching); returns how many. */
export async function replayDeadConversions(db: Db, now: number, match: number[] | DeadLetterMatch = {}): Promise<number> {
  const { ids, provider, status } = Array.isArray(match) ? { ids: match } : match;
  return outbox.replayDead(db, now, (query) => {
    let q = query;
    if (ids) q = q.where('id', 'in', ids);
    if (status) q = q.where('delivery_status', '=', status);
    if (provider)
      q = q.where((eb) =>
        eb.exists(eb.selectFrom('messages').select('sms_id').whereRef('messages.sms_id', '=', 'conversions.sms_id').where('messages.provider', '=', provider)),
      );
    return q;
  });
}

export interface DeadLetter {
  id: number;
  sms_id: string;
  activity_key: string;
  provider: string;
  delivery_status: DeliveryStatus;
  attempts: number;
  last_error: string | null;
  /** The webhook's HTTP status at the last attempt (null: no answer, e.g. a timeout). */
  last_http_status: number | null;
  last_attempt_at: number | null;
  created_at: number;
}

/**
 * Dead letters newest first, `limit` after conversion id `beforeId`. Starts from conversions_unposted (dead is its
 * first column), so the count of posted rows never matters.
 */
export async function listDeadConversions(db: Db, match: Omit<DeadLetterMatch, 'ids'> & { beforeId?: number; limit: number }): Promise<DeadLetter[]> {
  let query = db
    .selectFrom('conversions as c')
    .innerJoin('messages as m', 'm.sms_id', 'c.sms_id')
    .select((eb) => [
      'c.id',
      'c.sms_id',
      'm.activity_key',
      'm.provider',
      'c.delivery_status',
      'c.attempts',
      'c.last_error',
      'c.created_at',
      eb
        .selectFrom('conversion_attempts as a')
        .select('a.http_status')
        .whereRef('a.conversion_id', '=', 'c.id')
        .orderBy('a.id', 'desc')
        .limit(1)
        .as('last_http_status'),
      eb
        .selectFrom('conversion_attempts as a')
        .select('a.attempted_at')
        .whereRef('a.conversion_id', '=', 'c.id')
        .orderBy('a.id', 'desc')
        .limit(1)
        .as('last_attempt_at'),
    ])
    .where('c.dead', '=', 1)
    .where('c.posted_at', 'is', null);
  if (match.provider) query = query.where('m.provider', '=', match.provider);
  if (match.status) query = query.where('c.delivery_status', '=', match.status);
  if (match.beforeId !== undefined) query = query.where('c.id', '<', match.beforeId);
  const rows = await query.orderBy('c.id', 'desc').limit(match.limit).execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), last_http_status: r.last_http_status ?? null, last_attempt_at: r.last_attempt_at ?? null }));
}

const OWED_CONVERSIONS: OwedIndex = { table: 'conversions', done: 'posted_at' };

/** The oldest conversion still owed to the CRM (due, retrying or dead): how far behind the outbox is. */
export async function oldestUnpostedConversion(db: Db): Promise<number | null> {
  const oldest = [await oldestOwed(db, OWED_CONVERSIONS, 0), await oldestOwed(db, OWED_CONVERSIONS, 1)].filter((at) => at !== null);
  return oldest.length === 0 ? null : Math.min(...oldest);
}

/**
 * The oldest conversion the workers still try to post (due or retrying; dead ones wait for a replay instead): how long
 * the CRM has been waiting on the outbox.
 */
export function oldestPendingConversion(db: Db): Promise<number | null> {
  return oldestOwed(db, OWED_CONVERSIONS, 0);
}

export interface OutboxBacklog {
  due: number;
  retrying: number;
  dead: number;
}

/** Counted in conversions_unposted alone, a slice at a time (owed-backlog.ts). */
export async function countOutboxBacklog(db: Db): Promise<OutboxBacklog> {
  const owed = await countOwed(db, OWED_CONVERSIONS, 0);
  const dead = await countOwed(db, OWED_CONVERSIONS, 1);
  return { due: owed.rows - owed.retrying, retrying: owed.retrying, dead: dead.rows };
}

export async function findConversionsBySmsId(db: Db, smsId: string) {
  const conversions = await db.selectFrom('conversions').selectAll().where('sms_id', '=', smsId).orderBy('id').execute();
  const attempts = conversions.length
    ? await db
        .selectFrom('conversion_attempts')
        .selectAll()
        .where(
          'conversion_id',
          'in',
          conversions.map((c) => c.id),
        )
        .orderBy('id')
        .execute()
    : [];
  return conversions.map((c) => ({ ...c, attempt_log: attempts.filter((a) => Number(a.conversion_id) === Number(c.id)) }));
}
