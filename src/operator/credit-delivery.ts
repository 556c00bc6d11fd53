/**
 * The credits worker (sql backend): pushes each committed credit to the operator's bonus engine or wallet at
 * operator.credits.url, with Idempotency-Key = credit_id so a push repeated after a lost answer is recognised.
 * 2xx is delivered; anything else is retried with the outboxes' back-off (src/events/retry.ts) and dead-lettered
 * after operator.credits.max_attempts, to be replayed from POST /admin/credits/replay. The CRM's 200 came earlier,
 * at commit (docs/operator-api.md "What success means to the CRM").
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { request } from 'undici';
import type { Config } from '../config/schema.js';
import { claimDueCredits, markCreditDeliveriesFailed, markCreditsDelivered, type DueCredit, type FailedCreditDelivery } from '../ledger/credit-delivery.js';
import { inTransaction, type DialectFlags } from '../ledger/db.js';
import type { Database } from '../ledger/schema.js';
import { planRetry } from '../events/retry.js';
import { startWorkerLoop, type WorkerLoop } from '../kit/worker-loop.js';
import { crmReferencesObject } from '../crm/references.js';

export type CreditsConfig = Config['operator']['credits'];

export interface CreditWorkerDeps {
  db: Kysely<Database>;
  flags: DialectFlags;
  credits: CreditsConfig & { url: string };
  logger: Logger;
  now: () => number;
  random?: () => number;
  onDelivered?: (count: number) => void;
  onDead?: (count: number) => void;
}

/** What the operator's endpoint receives for one credit. */
export function creditPushBody(c: DueCredit) {
  return {
    credit_id: String(c.id),
    kind: c.kind,
    user_id: c.user_id,
    bonus_code: c.bonus_code,
    amount: c.amount,
    currency: c.currency,
    created_at: new Date(c.created_at).toISOString(),
    crm_references: crmReferencesObject({
      id: c.crm_id,
      action_id: c.crm_action_id,
      action_group_id: c.crm_action_group_id,
      action_communication_profile_id: c.crm_action_communication_profile_id,
      activity_id: c.crm_activity_id,
      trigger_hash: c.crm_trigger_hash,
      player_origin_id: c.crm_player_origin_id,
    }),
    /** The CRM's request as received, keys the gateway ignores included (validity_amount, say). */
    request: JSON.parse(c.request_json) as unknown,
  };
}

async function push(credits: CreditWorkerDeps['credits'], credit: DueCredit): Promise<{ ok: true } | { ok: false; error: string }> {
  try {
    const res = await request(credits.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': String(credit.id), ...credits.headers },
      body: JSON.stringify(creditPushBody(credit)),
      headersTimeout: credits.timeout,
      bodyTimeout: credits.timeout,
      signal: AbortSignal.timeout(credits.timeout),
    });
    const text = (await res.body.text()).slice(0, 300);
    return res.statusCode >= 200 && res.statusCode <= 299 ? { ok: true } : { ok: false, error: `HTTP ${res.statusCode}: ${text}` };
  } catch (error) {
    return { ok: false, error: (error as { code?: string }).code ?? (error as Error).message };
  }
}

export async function deliverDueCredits(deps: CreditWorkerDeps): Promise<{ claimed: number; delivered: number; failed: number; dead: number }> {
  const { credits, now } = deps;
  const token = randomUUID();
  const due = await claimDueCredits(deps.db, deps.flags, credits.batch_size, now(), credits.lease, token);
  if (due.length === 0) return { claimed: 0, delivered: 0, failed: 0, dead: 0 };
  const outcomes = await Promise.all(due.map((c) => push(credits, c)));
  const at = now();
  const delivered: number[] = [];
  const failed: FailedCreditDelivery[] = [];
  const policy = { initialMs: credits.retry_initial_ms, maxMs: credits.retry_max_ms, maxAttempts: credits.max_attempts };
  due.forEach((c, i) => {
    const outcome = outcomes[i]!;
    if (outcome.ok) delivered.push(c.id);
    else failed.push({ id: c.id, error: outcome.error, ...planRetry(c.delivery_attempts, at, policy, deps.random) });
  });
  await inTransaction(deps.db, async (trx) => {
    await markCreditsDelivered(trx, delivered, token, at);
    await markCreditDeliveriesFailed(trx, failed, token);
  });
  const dead = failed.filter((f) => f.dead);
  if (delivered.length > 0) deps.onDelivered?.(delivered.length);
  if (failed.length > 0)
    deps.logger.warn({ count: failed.length, dead: dead.length, error: failed[0]!.error }, 'credits not taken by operator.credits.url; backing off');
  for (const d of dead) deps.logger.warn({ credit_id: String(d.id) }, 'credit dead-lettered; replay it with POST /admin/credits/replay');
  if (dead.length > 0) deps.onDead?.(dead.length);
  return { claimed: due.length, delivered: delivered.length, failed: failed.length - dead.length, dead: dead.length };
}

export function startCreditWorker(deps: CreditWorkerDeps): WorkerLoop {
  return startWorkerLoop(
    async () => {
      const round = await deliverDueCredits(deps);
      return round.claimed > 0 && round.delivered > 0;
    },
    { idleMs: deps.credits.poll_interval, logger: deps.logger, name: 'credit worker' },
  );
}
