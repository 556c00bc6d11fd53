/**
 * The conversion worker: claims due outbox rows under a lease, posts them, marks them posted or backs them off.
 * `serve` runs it in a loop; `flush` (cron) runs it until nothing is due. Rows leave the outbox only after a 2xx
 * (at-least-once); the lease keeps two claimers from posting one row twice.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { claimDueConversions, markFailed, markPosted, recordAttempts } from '../ledger/conversions.js';
import type { DialectFlags } from '../ledger/db.js';
import type { Database } from '../ledger/schema.js';
import type { WebhookMetrics } from '../observability/metrics.js';
import { nextAttemptDelay } from './backoff.js';
import type { WebhookClient } from './webhook.js';

export interface WorkerDeps {
  db: Kysely<Database>;
  flags: DialectFlags;
  webhook: WebhookClient;
  delivery: Config['delivery'];
  logger: Logger;
  now: () => number;
  random?: () => number;
  metrics?: WebhookMetrics;
}

export interface RoundResult {
  claimed: number;
  posted: number;
  failed: number;
  dead: number;
  /** False when the webhook could not be reached or refused the post. */
  ok: boolean;
}

export async function postDueConversions(deps: WorkerDeps): Promise<RoundResult> {
  const { db, delivery, now } = deps;
  const token = randomUUID();
  const rows = await claimDueConversions(db, deps.flags, delivery.batch_size, now(), delivery.lease, token);
  if (rows.length === 0) return { claimed: 0, posted: 0, failed: 0, dead: 0, ok: true };
  const started = performance.now();
  const result = await deps.webhook.post(rows);
  deps.metrics?.webhookPosted((performance.now() - started) / 1000, result.ok ? { ok: true, conversions: rows.length } : result);
  const at = now();
  const ids = rows.map((r) => r.id);
  if (result.ok) {
    await db.transaction().execute(async (trx) => {
      await markPosted(trx, ids, token, at);
      await recordAttempts(trx, ids, at, true, result.status, null);
    });
    if (deps.logger.isLevelEnabled('debug')) {
      for (const r of rows) {
        deps.logger.debug({ sms_id: r.sms_id, activity_id: r.activity_key, delivery_status: r.delivery_status, conversion_id: r.id }, 'conversion posted');
      }
    }
    return { claimed: rows.length, posted: rows.length, failed: 0, dead: 0, ok: true };
  }
  const backoff = { initialMs: delivery.retry_initial_ms, maxMs: delivery.retry_max_ms };
  const plan = rows.map((r) => ({
    id: r.id,
    dead: r.attempts + 1 >= delivery.max_attempts,
    nextAttemptAt: at + nextAttemptDelay(r.attempts + 1, backoff, deps.random),
  }));
  await db.transaction().execute(async (trx) => {
    await markFailed(trx, plan, token, result.error);
    await recordAttempts(trx, ids, at, false, result.status, result.error);
  });
  const dead = plan.filter((p) => p.dead).length;
  deps.logger.warn({ count: rows.length, dead, error: result.error }, 'conversion post failed; backing off');
  if (dead > 0) deps.metrics?.conversionsDeadLettered(dead);
  rows.forEach((r, i) => {
    if (plan[i]!.dead) deps.logger.warn({ sms_id: r.sms_id, activity_id: r.activity_key, conversion_id: r.id, attempts: r.attempts + 1 }, 'conversion dead-lettered; replay it from the console or /admin');
  });
  return { claimed: rows.length, posted: 0, failed: rows.length - dead, dead, ok: false };
}

/** Runs rounds until stopped; sleeps `poll_interval` when idle or after a failure, wakes early on `wake()`. */
export function startConversionWorker(deps: WorkerDeps) {
  let stopped = false;
  let wakeUp: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const done = (async () => {
    while (!stopped) {
      try {
        const round = await postDueConversions(deps);
        if (round.claimed === 0 || !round.ok) await sleep(deps.delivery.poll_interval);
      } catch (error) {
        deps.logger.error({ err: error }, 'conversion worker round failed');
        await sleep(deps.delivery.poll_interval);
      }
    }
  })();

  return {
    wake: () => wakeUp?.(),
    async stop() {
      stopped = true;
      wakeUp?.();
      await done;
    },
  };
}
