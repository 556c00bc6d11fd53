/**
 * The conversion worker: claims due outbox rows under a lease, posts them, marks them posted or backs them off.
 * `serve` runs it in a loop; `flush` (cron) runs it until nothing is due. Rows leave the outbox only after a 2xx
 * (at-least-once); the lease keeps two claimers from posting one row twice.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { claimDueConversions, markFailed, markPosted, recordAttempts, type ClaimedConversion } from '../ledger/conversions.js';
import { inTransaction, type DialectFlags } from '../ledger/db.js';
import type { Database } from '../ledger/schema.js';
import type { WebhookMetrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import { nextAttemptDelay } from '../kit/backoff.js';
import { isRowRefusal, type PostResult, type WebhookClient } from './webhook.js';
import { startWorkerLoop, type WorkerLoop } from '../kit/worker-loop.js';

export interface WorkerDeps {
  db: Kysely<Database>;
  flags: DialectFlags;
  webhook: WebhookClient;
  delivery: Config['delivery'];
  logger: Logger;
  now: () => number;
  random?: () => number;
  metrics?: WebhookMetrics;
  /** When on, each posted conversion is a span under its message's send span (docs/tracing.md). */
  tracing?: Tracing;
}

export interface RoundResult {
  claimed: number;
  posted: number;
  failed: number;
  dead: number;
  /** False when the webhook could not be reached or refused the post. */
  ok: boolean;
}

/**
 * A webhook that refuses a post with a 4xx may refuse only one conversion in it (operator interface: the CRM
 * validates each one). Such a post is split in halves and each half posted, down to single conversions, so only
 * the one the CRM refuses backs off and dead-letters and each other one is posted once (about 2·log2(n) extra
 * posts for one refused row among n). A 5xx or an unreachable webhook says nothing about the rows: no split.
 * Splitting stops once half the lease is spent, so the rows are marked before another claimer may take them.
 */
async function postIsolatingRefusals(
  deps: WorkerDeps,
  rows: ClaimedConversion[],
  splitUntil: number,
  onPosted: (rows: ClaimedConversion[], status: number) => Promise<void>,
): Promise<Array<{ rows: ClaimedConversion[]; result: PostResult }>> {
  const started = performance.now();
  const result = deps.tracing?.enabled ? await postTraced(deps.tracing, deps.webhook, rows) : await deps.webhook.post(rows);
  deps.metrics?.webhookPosted((performance.now() - started) / 1000, result.ok ? { ok: true, conversions: rows.length } : result);
  // Marked at once, before anything else is posted: a crash now can only repeat this one post, never the rows
  // of the halves posted before it (docs/crash-windows.md).
  if (result.ok) await onPosted(rows, result.status);
  if (result.ok || rows.length === 1 || !isRowRefusal(result.status) || deps.now() >= splitUntil) return [{ rows, result }];
  const half = Math.ceil(rows.length / 2);
  const first = await postIsolatingRefusals(deps, rows.slice(0, half), splitUntil, onPosted);
  return [...first, ...(await postIsolatingRefusals(deps, rows.slice(half), splitUntil, onPosted))];
}

/**
 * A post carries many messages' conversions: each gets a span under its own message's send span, covering the post,
 * and the request goes out with the first one's traceparent (one header per request; a post of one row, the common
 * case on a quiet gateway, is then exactly its message's).
 */
async function postTraced(tracing: Tracing, webhook: WebhookClient, rows: ClaimedConversion[]): Promise<PostResult> {
  const startTime = Date.now();
  const spans = rows.map((r) =>
    tracing.startSpan('sms.conversion_post', r.traceparent, {
      kind: 'client',
      startTime,
      attributes: { 'sms.sms_id': r.sms_id, 'sms.delivery_status': r.delivery_status, 'sms.conversion_id': r.id, 'sms.post_size': rows.length },
    }),
  );
  const result = await webhook.post(rows, spans[0]?.traceparent);
  for (const span of spans) {
    if (!result.ok) span.fail(result.error);
    span.end();
  }
  return result;
}

export async function postDueConversions(deps: WorkerDeps): Promise<RoundResult> {
  const { db, delivery, now } = deps;
  const token = randomUUID();
  // A round's claim and marks are transactions of their own, not queued with the sends' and receipts' groups
  // (src/ledger/transaction-queue.ts): sharing those commits saved no measurable CPU and doubled the conversion lag
  // of a batch burst (bench/run.ts --mode e2e, p50 150 → 300 ms), every round waiting for the groups ahead of it.
  const claimedAt = now();
  const rows = await inTransaction(db, (trx) =>
    claimDueConversions(trx, deps.flags, delivery.batch_size, claimedAt, delivery.lease, token, deps.tracing?.enabled),
  );
  if (rows.length === 0) return { claimed: 0, posted: 0, failed: 0, dead: 0, ok: true };
  const markAfter2xx = async (posted: ClaimedConversion[], status: number) => {
    const ids = posted.map((r) => r.id);
    const at = now();
    await inTransaction(db, async (trx) => {
      await markPosted(trx, ids, token, at);
      await recordAttempts(trx, ids, at, true, status, null);
    });
  };
  // Rows an earlier claim already put in a post (its process died before marking them) go out in that post's
  // company again, so the CRM gets the same conversions under the same Idempotency-Key; new rows form one post.
  const groups = new Map<string, ClaimedConversion[]>();
  for (const r of rows) {
    const group = groups.get(r.post_group);
    if (group) group.push(r);
    else groups.set(r.post_group, [r]);
  }
  const outcomes: Array<{ rows: ClaimedConversion[]; result: PostResult }> = [];
  for (const group of groups.values()) outcomes.push(...(await postIsolatingRefusals(deps, group, claimedAt + delivery.lease / 2, markAfter2xx)));
  const at = now();
  const backoff = { initialMs: delivery.retry_initial_ms, maxMs: delivery.retry_max_ms };
  const refused = outcomes.flatMap((o) => (o.result.ok ? [] : [{ ...o, error: o.result.error, status: o.result.status }]));
  const plans = refused.map((o) =>
    o.rows.map((r) => ({
      id: r.id,
      dead: r.attempts + 1 >= delivery.max_attempts,
      nextAttemptAt: at + nextAttemptDelay(r.attempts + 1, backoff, deps.random),
    })),
  );
  if (refused.length > 0) {
    await inTransaction(db, async (trx) => {
      for (const [k, o] of refused.entries()) {
        await markFailed(trx, plans[k]!, token, o.error);
        await recordAttempts(
          trx,
          o.rows.map((r) => r.id),
          at,
          false,
          o.status,
          o.error,
        );
      }
    });
  }
  const posted = outcomes.filter((o) => o.result.ok).flatMap((o) => o.rows);
  if (deps.logger.isLevelEnabled('debug')) {
    for (const r of posted) {
      deps.logger.debug({ sms_id: r.sms_id, activity_id: r.activity_key, delivery_status: r.delivery_status, conversion_id: r.id }, 'conversion posted');
    }
  }
  let failed = 0;
  let dead = 0;
  for (const [k, o] of refused.entries()) {
    const deadRows = o.rows.filter((_r, i) => plans[k]![i]!.dead);
    failed += o.rows.length - deadRows.length;
    dead += deadRows.length;
    deps.logger.warn(
      {
        count: o.rows.length,
        dead: deadRows.length,
        error: o.error,
        ...(o.rows.length === 1 ? { sms_id: o.rows[0]!.sms_id, activity_id: o.rows[0]!.activity_key } : {}),
      },
      'conversion post failed; backing off',
    );
    for (const r of deadRows)
      deps.logger.warn(
        { sms_id: r.sms_id, activity_id: r.activity_key, conversion_id: r.id, attempts: r.attempts + 1 },
        'conversion dead-lettered; replay it from the console or /admin',
      );
  }
  if (dead > 0) deps.metrics?.conversionsDeadLettered(dead);
  return { claimed: rows.length, posted: posted.length, failed, dead, ok: refused.length === 0 };
}

/** Runs rounds until stopped; sleeps `poll_interval` when idle or after a failure, wakes early on `wake()`. */
export function startConversionWorker(deps: WorkerDeps): WorkerLoop {
  return startWorkerLoop(
    async () => {
      const round = await postDueConversions(deps);
      return round.claimed > 0 && round.ok;
    },
    { idleMs: deps.delivery.poll_interval, logger: deps.logger, name: 'conversion worker' },
  );
}
