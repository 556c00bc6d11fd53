/**
 * The conversion outbox as src/outbox/outbox.ts configures a kind: due conversions claimed in next_attempt_at order
 * (src/ledger/conversions.ts), posted to the CRM's webhook many to a post (webhook.ts), each post marked as soon as it
 * is taken, a refused post split to find the row the CRM refuses; no answer is final, so a row is dead only after
 * delivery.max_attempts. Put together with the other kinds by src/outboxes.ts, for `serve`'s loop and the cron `flush`.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { claimDueConversions, markFailed, markPosted, type ClaimedConversion } from '../ledger/conversions.js';
import { inTransaction } from '../ledger/engine/db.js';
import { dialectFlagsOf } from '../ledger/engine/flags.js';
import type { WebhookMetrics } from './conversion-metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { OutboxDeps, OutboxKind, OutboxRound } from '../outbox/outbox.js';
import type { OutboxOutcome } from '../outbox/outcome.js';
import { isRowRefusal, type WebhookClient } from './webhook.js';

export interface ConversionOutboxDeps extends OutboxDeps {
  webhook: WebhookClient;
  delivery: Config['delivery'];
  metrics?: WebhookMetrics;
  /** When on, each posted conversion is a span under its message's send span (docs/tracing.md). */
  tracing?: Tracing;
}

/**
 * A webhook that refuses a post with a 4xx may refuse only one conversion in it (operator interface: the CRM
 * validates each one). Such a post is split in halves and each half posted, down to single conversions, so only
 * the one the CRM refuses backs off and dead-letters and each other one is posted once (about 2·log2(n) extra
 * posts for one refused row among n). A 5xx or an unreachable webhook says nothing about the rows: no split.
 * Splitting stops once half the lease is spent, so the rows are marked before another claimer may take them.
 */
async function postIsolatingRefusals(
  deps: ConversionOutboxDeps,
  rows: ClaimedConversion[],
  splitUntil: number,
  onPosted: (rows: ClaimedConversion[], status: number | null) => Promise<void>,
): Promise<Array<{ rows: ClaimedConversion[]; result: OutboxOutcome }>> {
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
 * A post carries many messages' conversions, each caused by a send that ended long before: the post is a trace of its
 * own, with one span linked to every conversion's send span; its HTTP request (the undici instrumentation's CLIENT
 * span, whose traceparent the webhook receives) is that span's child. A post of one row names its message.
 */
async function postTraced(tracing: Tracing, webhook: WebhookClient, rows: ClaimedConversion[]): Promise<OutboxOutcome> {
  const attributes: Record<string, string | number> = { 'sms.post_size': rows.length };
  if (rows.length === 1)
    Object.assign(attributes, { 'sms.sms_id': rows[0]!.sms_id, 'sms.delivery_status': rows[0]!.delivery_status, 'sms.conversion_id': rows[0]!.id });
  // A new trace (root): not under whatever span happened to wake the outbox.
  const span = tracing.startSpan('sms.conversion_post', null, { root: true, attributes, links: rows.map((r) => r.traceparent) });
  const result = await span.run(() => webhook.post(rows));
  if (!result.ok) span.fail(result.error, result.status === null ? 'unreachable' : String(result.status));
  span.end();
  return result;
}

export function conversionOutbox(deps: ConversionOutboxDeps): OutboxKind<ClaimedConversion> {
  const { delivery } = deps;
  return {
    name: 'conversion outbox',
    settings: delivery,
    // A round's claim and marks are transactions of their own, not queued with the sends' and receipts' groups
    // (src/ledger/engine/transaction-queue.ts): sharing those commits saved no measurable CPU and doubled the conversion lag
    // of a batch burst (bench/run.ts --mode e2e, p50 150 → 300 ms), every round waiting for the groups ahead of it.
    claim: (db, limit, now, lease, token) =>
      inTransaction(db, (trx) => claimDueConversions(trx, dialectFlagsOf(trx), limit, now, lease, token, deps.tracing?.enabled)),
    attemptsOf: (r) => r.attempts,
    async send(rows, { claimedAt, markSent }) {
      // Rows an earlier claim already put in a post (its process died before marking them) go out in that post's
      // company again, so the CRM gets the same conversions under the same Idempotency-Key; new rows form one post.
      const groups = new Map<string, ClaimedConversion[]>();
      for (const r of rows) {
        const group = groups.get(r.post_group);
        if (group) group.push(r);
        else groups.set(r.post_group, [r]);
      }
      const outcomes: Array<{ rows: ClaimedConversion[]; result: OutboxOutcome }> = [];
      for (const group of groups.values()) outcomes.push(...(await postIsolatingRefusals(deps, group, claimedAt + delivery.lease / 2, markSent)));
      return outcomes.map(({ rows, result }) => ({ rows, outcome: result, marked: result.ok }));
    },
    markSent: markPosted,
    markFailed,
    again: (round) => round.failed.length === 0,
    report: (round) => reportRound(deps.logger, round),
    onDead: (count) => deps.metrics?.conversionsDeadLettered(count),
  };
}

function reportRound(logger: Logger, round: OutboxRound<ClaimedConversion>): void {
  if (logger.isLevelEnabled('debug')) {
    for (const r of round.sent) {
      logger.debug({ sms_id: r.sms_id, activity_id: r.activity_key, delivery_status: r.delivery_status, conversion_id: r.id }, 'conversion posted');
    }
  }
  let k = 0;
  for (const { rows, outcome } of round.attempts) {
    if (outcome.ok) continue;
    const plans = round.failed.slice(k, k + rows.length);
    k += rows.length;
    const dead = plans.filter((f) => f.plan.dead);
    logger.warn(
      {
        count: rows.length,
        dead: dead.length,
        error: outcome.error,
        ...(rows.length === 1 ? { sms_id: rows[0]!.sms_id, activity_id: rows[0]!.activity_key } : {}),
      },
      'conversion post failed; backing off',
    );
    for (const { row: r } of dead)
      logger.warn(
        { sms_id: r.sms_id, activity_id: r.activity_key, conversion_id: r.id, attempts: r.attempts + 1 },
        'conversion dead-lettered; replay it from the console or /admin',
      );
  }
}
