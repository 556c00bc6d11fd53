/**
 * One outbox, configured per kind (conversions: src/delivery/conversion-outbox.ts, CRM events:
 * src/events/event-outbox.ts, credits: src/operator/credits/credit-outbox.ts). A round claims due rows under a lease and a
 * token, hands them to the kind's sender, marks what was taken as sent and backs off or dead-letters the rest
 * (decisions.ts), all marks of a round in one transaction and batched. Rows leave the outbox only after the receiver
 * took them (at-least-once); the lease keeps two claimers (serve and a cron flush, or two instances) from sending a row
 * twice, and a mark only touches rows its token still holds. `serve` runs rounds on the loop of loop.ts, the cron
 * `flush` drains them; both take the kinds from src/outboxes.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Logger } from 'pino';
import { inTransaction } from '../ledger/engine/db.js';
import type { FailedOutboxRow } from '../ledger/outbox.js';
import type { Database } from '../ledger/schema.js';
import { planFailure, type DeadReason, type FailurePlan, type RetryPolicy } from './decisions.js';
import { startOutboxLoop, type OutboxLoop } from './loop.js';
import type { OutboxOutcome } from './outcome.js';

/** Rows that went out together (one post, or one row) and what came back. */
export interface OutboxAttempt<Row> {
  rows: Row[];
  outcome: OutboxOutcome;
  /** The kind's sender already marked these sent (conversions mark each post as soon as it is taken). */
  marked?: boolean;
}

export interface FailedRow<Row> {
  row: Row;
  status: number | null;
  error: string;
  plan: FailurePlan;
}

export interface OutboxRound<Row> {
  claimed: Row[];
  attempts: OutboxAttempt<Row>[];
  sent: Row[];
  /** Every row not taken, dead or backed off, in claim order. */
  failed: FailedRow<Row>[];
  /** Of `failed`, the ones backed off (not dead). */
  retrying: number;
  dead: number;
  /** When the round's results were marked. */
  at: number;
}

/** What the round gives a kind's sender: its claim, and a way to mark rows sent before the round ends. */
export interface SendContext<Row> {
  token: string;
  claimedAt: number;
  markSent(rows: Row[], status: number | null): Promise<void>;
}

type Db = Kysely<Database> | Transaction<Database>;

/** The keys every outbox's configuration section has (delivery, relay, operator.credits). */
export interface OutboxSettings {
  /** Rows claimed per round. */
  batch_size: number;
  poll_interval: number;
  retry_initial_ms: number;
  retry_max_ms: number;
  /** Attempts before a row is dead-lettered; undefined: retried while the failure lasts. */
  max_attempts?: number | undefined;
  /** How long a claim holds its rows. */
  lease: number;
}

/** A kind of outbox: where its rows are (the ledger's functions for its table) and how they are sent. */
export interface OutboxKind<Row extends { id: number }> {
  /** The loop's name in logs ("conversion outbox"). */
  name: string;
  settings: OutboxSettings;
  /** Reserves up to `limit` due rows for `token` until now + lease (the kind's claim decides which, in what order). */
  claim(db: Kysely<Database>, limit: number, now: number, leaseMs: number, token: string): Promise<Row[]>;
  attemptsOf(row: Row): number;
  send(rows: Row[], context: SendContext<Row>): Promise<OutboxAttempt<Row>[]>;
  markSent(db: Db, ids: number[], token: string, at: number, status: number | null): Promise<void>;
  markFailed(db: Db, failed: FailedOutboxRow[], token: string, at: number): Promise<void>;
  /** After a round that claimed rows: whether the loop runs the next at once (it may do more now) or waits. */
  again(round: OutboxRound<Row>): boolean;
  /** The kind's logs and metrics about a round that claimed something. */
  report?(round: OutboxRound<Row>): void;
  /** Told of dead-lettered rows, once per reason. */
  onDead?(count: number, reason: DeadReason): void;
}

export interface OutboxDeps {
  db: Kysely<Database>;
  logger: Logger;
  now: () => number;
  random?: (() => number) | undefined;
}

/** Every row sent on its own and all at once: the sender for kinds whose receiver takes one row per request. */
export function sendEach<Row>(send: (row: Row) => Promise<OutboxOutcome>): (rows: Row[]) => Promise<OutboxAttempt<Row>[]> {
  return async (rows) => (await Promise.all(rows.map(send))).map((outcome, i) => ({ rows: [rows[i]!], outcome }));
}

/**
 * Each row sent on its own, `lanes` at a time, and each lane takes its next row only once the row it sent is marked
 * sent and committed (`markSent`, its own transaction): a process killed mid-round sends again at most the rows its
 * lanes had under way, never the ones already taken (docs/crash-windows.md "Credits"). A lane takes no new row once
 * half of the claim's lease has passed, so a slow receiver never holds rows past the claim (another claimer would
 * send them too); those left are claimed again when the lease ends. Failures are marked by the round, at its end.
 */
export function sendEachCommitted<Row>(
  send: (row: Row) => Promise<OutboxOutcome>,
  options: { lanes: number; leaseMs: number; now: () => number },
): (rows: Row[], context: SendContext<Row>) => Promise<OutboxAttempt<Row>[]> {
  return async (rows, { claimedAt, markSent }) => {
    const attempts: OutboxAttempt<Row>[] = [];
    const stopAt = claimedAt + options.leaseMs / 2;
    let next = 0;
    const lane = async () => {
      while (next < rows.length && options.now() < stopAt) {
        const row = rows[next++]!;
        const outcome = await send(row);
        if (outcome.ok) await markSent([row], outcome.status);
        attempts.push({ rows: [row], outcome, marked: outcome.ok });
      }
    };
    await Promise.all(Array.from({ length: Math.min(options.lanes, rows.length) }, lane));
    return attempts;
  };
}

export async function runOutboxRound<Row extends { id: number }>(kind: OutboxKind<Row>, deps: OutboxDeps): Promise<OutboxRound<Row>> {
  const { db, now } = deps;
  const token = randomUUID();
  const claimedAt = now();
  const { settings } = kind;
  const policy: RetryPolicy = { initialMs: settings.retry_initial_ms, maxMs: settings.retry_max_ms, maxAttempts: settings.max_attempts };
  const claimed = await kind.claim(db, settings.batch_size, claimedAt, settings.lease, token);
  if (claimed.length === 0) return { claimed, attempts: [], sent: [], failed: [], retrying: 0, dead: 0, at: claimedAt };
  const markSent = (rows: Row[], status: number | null) => {
    const at = now();
    return inTransaction(db, (trx) =>
      kind.markSent(
        trx,
        rows.map((r) => r.id),
        token,
        at,
        status,
      ),
    );
  };
  const attempts = await kind.send(claimed, { token, claimedAt, markSent });
  const at = now();
  const sent: Row[] = [];
  const unmarked: number[] = [];
  let sentStatus: number | null | undefined;
  const failed: FailedRow<Row>[] = [];
  for (const attempt of attempts) {
    const { outcome } = attempt;
    if (outcome.ok) {
      sent.push(...attempt.rows);
      if (attempt.marked) continue;
      for (const r of attempt.rows) unmarked.push(r.id);
      sentStatus ??= outcome.status;
    } else {
      for (const row of attempt.rows) {
        failed.push({ row, status: outcome.status, error: outcome.error, plan: planFailure(kind.attemptsOf(row), at, outcome, policy, deps.random) });
      }
    }
  }
  if (unmarked.length > 0 || failed.length > 0) {
    await inTransaction(db, async (trx) => {
      if (unmarked.length > 0) await kind.markSent(trx, unmarked, token, at, sentStatus ?? null);
      if (failed.length > 0)
        await kind.markFailed(
          trx,
          failed.map((f) => ({ id: f.row.id, httpStatus: f.status, error: f.error, dead: f.plan.dead, nextAttemptAt: f.plan.nextAttemptAt })),
          token,
          at,
        );
    });
  }
  const refused = failed.filter((f) => f.plan.reason === 'refused').length;
  const dead = failed.filter((f) => f.plan.dead).length;
  const round = { claimed, attempts, sent, failed, retrying: failed.length - dead, dead, at };
  kind.report?.(round);
  if (refused > 0) kind.onDead?.(refused, 'refused');
  if (dead > refused) kind.onDead?.(dead - refused, 'attempts');
  return round;
}

/** What the cron `flush` did with one kind: rows taken, backed off and dead-lettered, and whether the receiver kept taking them. */
export interface Drained {
  sent: number;
  retrying: number;
  dead: number;
  /** False when the last round claimed rows and the kind would not go `again` (the receiver took none, or refused). */
  reachable: boolean;
}

/**
 * The cron `flush` of one kind: rounds back to back by the same rule as the loop (`again`), until one claims nothing.
 * It stops where the loop would wait, so a receiver that is down is not hammered; its rows are backed off.
 */
export async function drainOutbox<Row extends { id: number }>(kind: OutboxKind<Row>, deps: OutboxDeps): Promise<Drained> {
  const drained = { sent: 0, retrying: 0, dead: 0, reachable: true };
  for (;;) {
    const round = await runOutboxRound(kind, deps);
    if (round.claimed.length === 0) return drained;
    drained.sent += round.sent.length;
    drained.retrying += round.retrying;
    drained.dead += round.dead;
    if (!kind.again(round)) return { ...drained, reachable: false };
  }
}

/** Runs the kind's rounds until stopped: at once after a round that claimed rows and is `again`, else every poll_interval or on `wake()`. */
export function startOutbox<Row extends { id: number }>(kind: OutboxKind<Row>, deps: OutboxDeps): OutboxLoop {
  return startOutboxLoop(
    async () => {
      const round = await runOutboxRound(kind, deps);
      return round.claimed.length > 0 && kind.again(round);
    },
    { idleMs: kind.settings.poll_interval, logger: deps.logger, name: kind.name },
  );
}
