/**
 * Repository for the credits outbox: the sql backend's credits owed to the operator's bonus engine or wallet
 * (operator.credits.url). The same claim / mark / back-off pattern as the conversions and CRM events outboxes
 * (src/ledger/conversions.ts, src/ledger/events.ts): a claim is one statement with a lease and a token, so two
 * workers never push the same credit at once, and a worker that died leaves its claim to expire.
 */
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { DialectFlags } from './engine/ledger.js';
import type { Database, OperatorCreditsTable } from './schema.js';
import { outboxStatements, type FailedOutboxRow } from './outbox.js';

type Db = Kysely<Database> | Transaction<Database>;
export type DueCredit = Pick<
  Selectable<OperatorCreditsTable>,
  'id' | 'kind' | 'user_id' | 'bonus_code' | 'amount' | 'currency' | 'request_json' | 'created_at' | 'delivery_attempts'
> &
  Pick<
    Selectable<OperatorCreditsTable>,
    'crm_id' | 'crm_action_id' | 'crm_action_group_id' | 'crm_action_communication_profile_id' | 'crm_activity_id' | 'crm_trigger_hash' | 'crm_player_origin_id'
  >;

/** Reserves up to `limit` due credits for `token` until now + lease, oldest first. */
export async function claimDueCredits(
  db: Kysely<Database>,
  flags: DialectFlags,
  limit: number,
  now: number,
  leaseMs: number,
  token: string,
): Promise<DueCredit[]> {
  const lock = flags.skipLocked ? sql` for update skip locked` : sql``;
  const claimed = await sql<DueCredit>`
    update operator_credits set delivery_claimed_until = ${now + leaseMs}, delivery_claim_token = ${token}
    where id in (
      select id from operator_credits
      where delivery = 'due' and next_delivery_at <= ${now} and delivery_claimed_until <= ${now}
      order by id limit ${limit}${lock}
    ) and delivery = 'due' and delivery_claimed_until <= ${now}
    returning id, kind, user_id, bonus_code, amount, currency, request_json, created_at, delivery_attempts,
      crm_id, crm_action_id, crm_action_group_id, crm_action_communication_profile_id, crm_activity_id, crm_trigger_hash, crm_player_origin_id`.execute(db);
  return claimed.rows
    .map((r) => ({ ...r, id: Number(r.id), created_at: Number(r.created_at), amount: r.amount === null ? null : Number(r.amount) }))
    .sort((a, b) => a.id - b.id);
}

/** The credits outbox as src/ledger/outbox.ts describes a table. */
const outbox = outboxStatements({
  table: 'operator_credits',
  columns: {
    attempts: 'delivery_attempts',
    nextAttemptAt: 'next_delivery_at',
    claimedUntil: 'delivery_claimed_until',
    claimToken: 'delivery_claim_token',
    error: 'delivery_error',
  },
  sent: (now) => ({ delivery: 'delivered', delivered_at: now }),
  state: (dead) => ({ delivery: dead ? 'dead' : 'due' }),
  deadWhere: "delivery = 'dead'",
  clearsToken: true,
  errorLimit: 500,
});

export async function markCreditsDelivered(db: Db, ids: number[], token: string, now: number): Promise<void> {
  await outbox.markSent(db, ids, token, now, null);
}

export async function markCreditDeliveriesFailed(db: Db, failed: FailedOutboxRow[], token: string): Promise<void> {
  await outbox.markFailed(db, failed, token);
}

/** A credit completed by the sql backend after the http backend left it failed: owed to the operator now. */
export async function markCreditDue(db: Db, id: number, now: number): Promise<void> {
  await db.updateTable('operator_credits').set({ delivery: 'due', next_delivery_at: now }).where('id', '=', id).where('delivery', 'is', null).execute();
}

/** Which dead credits a replay takes: the given ids, or every one of a user (every dead credit when empty). */
export interface DeadCreditMatch {
  ids?: number[];
  userId?: string;
}

/** Dead credits due again now, with a fresh attempt count: the given ids, those of a user, or every dead one. Answers how many. */
export async function replayDeadCredits(db: Db, match: number[] | DeadCreditMatch | undefined, now: number): Promise<number> {
  const { ids, userId } = Array.isArray(match) ? { ids: match, userId: undefined } : (match ?? {});
  return outbox.replayDead(db, now, (query) => {
    let q = query;
    if (ids !== undefined) q = q.where('id', 'in', ids.length > 0 ? ids : [-1]);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return q;
  });
}

export type DeadCredit = Pick<
  Selectable<OperatorCreditsTable>,
  'id' | 'kind' | 'user_id' | 'bonus_code' | 'amount' | 'currency' | 'request_json' | 'delivery_attempts' | 'delivery_error' | 'created_at' | 'next_delivery_at'
>;

/**
 * One page of dead-lettered credits, newest first, after the keyset cursor `before` (an id). Reads the partial index
 * operator_credits_dead (id) where delivery = 'dead', or operator_credits_user_id with a user.
 */
export async function listDeadCredits(db: Db, filter: { userId?: string; before?: number; limit: number }): Promise<DeadCredit[]> {
  const rows = await db
    .selectFrom('operator_credits')
    // request_json too: the amount as the CRM wrote it is there, `amount` holds its nearest double (src/operator/credits/credit-rows.ts).
    .select([
      'id',
      'kind',
      'user_id',
      'bonus_code',
      'amount',
      'currency',
      'request_json',
      'delivery_attempts',
      'delivery_error',
      'created_at',
      'next_delivery_at',
    ])
    // A literal, not a parameter: SQLite uses a partial index only when it can see the query implies its condition.
    .where(sql<boolean>`delivery = 'dead'`)
    .$if(filter.userId !== undefined, (q) => q.where('user_id', '=', filter.userId!))
    .$if(filter.before !== undefined, (q) => q.where('id', '<', filter.before!))
    .orderBy('id', 'desc')
    .limit(filter.limit)
    .execute();
  return rows.map((r) => ({
    ...r,
    id: Number(r.id),
    created_at: Number(r.created_at),
    amount: r.amount === null ? null : Number(r.amount),
    next_delivery_at: r.next_delivery_at === null ? null : Number(r.next_delivery_at),
  }));
}

export interface CreditBacklog {
  /** Owed to the operator, not dead. */
  due: number;
  /** Of those, the ones that failed at least once. */
  retrying: number;
  dead: number;
  /** created_at of the oldest credit still owed, or null when none is. */
  oldestDueAt: number | null;
}

export async function countCreditBacklog(db: Db): Promise<CreditBacklog> {
  const row = await db
    .selectFrom('operator_credits')
    .select((eb) => [
      eb.fn.countAll<number>().filterWhere('delivery', '=', 'due').as('due'),
      eb.fn.countAll<number>().filterWhere('delivery', '=', 'due').filterWhere('delivery_attempts', '>', 0).as('retrying'),
      eb.fn.countAll<number>().filterWhere('delivery', '=', 'dead').as('dead'),
      sql<number | null>`min(case when delivery = 'due' then created_at end)`.as('oldest'),
    ])
    // A literal, so SQLite sees the partial index operator_credits_due applies (a /metrics scrape runs this too).
    .where(sql<boolean>`delivery in ('due', 'dead')`)
    .executeTakeFirstOrThrow();
  return { due: Number(row.due), retrying: Number(row.retrying), dead: Number(row.dead), oldestDueAt: row.oldest === null ? null : Number(row.oldest) };
}
