/**
 * The credits outbox (sql backend) as src/outbox/outbox.ts configures a kind: pushes each committed credit to the
 * operator's bonus engine or wallet at operator.credits.url, one request each, with Idempotency-Key = credit_id so a
 * push repeated after a lost answer is recognised. Each taken push is committed before its lane pushes another
 * (operator.credits.concurrency lanes), so a kill repeats at most the pushes under way. 2xx is delivered; anything else is retried with the outboxes'
 * back-off (src/outbox/decisions.ts) and dead-lettered after operator.credits.max_attempts, to be replayed from
 * POST /admin/credits/replay. The CRM's 200 came earlier, at commit (docs/operator-api.md "What success means to the
 * CRM").
 */
import type { Config } from '../../config/schema.js';
import { claimDueCredits, markCreditDeliveriesFailed, markCreditsDelivered, type DueCredit } from '../../ledger/credit-delivery.js';
import { splitUrl, type OutboundPool } from '../../http/outbound.js';
import { sendEachCommitted, type OutboxDeps, type OutboxKind } from '../../outbox/outbox.js';
import { outcomeOfAnswer, type OutboxOutcome } from '../../outbox/outcome.js';
import { dialectFlagsOf } from '../../ledger/engine/flags.js';
import { referencesOfCredit } from '../../events/bonus-event.js';
import { RawJson, stringifyExact } from '../../http/exact-json.js';
import { exactAmount } from './credit-rows.js';

export type CreditsConfig = Config['operator']['credits'];

export interface CreditOutboxDeps extends OutboxDeps {
  credits: CreditsConfig & { url: string };
  /** operator.credits.url's pool of the receivers' one HTTP client (src/http/outbound.ts). */
  pool: OutboundPool;
  onDelivered?: (count: number) => void;
  onDead?: (count: number) => void;
}

/**
 * What the operator's endpoint receives for one credit, to be written by stringifyExact: every number as the CRM wrote
 * it (the amount, the X-Crm-* ids as integers of any size, the request's own numbers), never a double's rounding.
 */
export function creditPushBody(c: DueCredit) {
  return {
    credit_id: String(c.id),
    kind: c.kind,
    user_id: c.user_id,
    bonus_code: c.bonus_code,
    amount: exactAmount(c),
    currency: c.currency,
    created_at: new Date(c.created_at).toISOString(),
    crm_references: referencesOfCredit(c),
    /** The CRM's request as received, keys the gateway ignores included (validity_amount, say): stored as JSON text. */
    request: new RawJson(c.request_json),
  };
}

const WORDS = {
  answered: (status: number, body: string) => `HTTP ${status}: ${body}`,
  unanswered: (e: Error & { code?: string }) => e.code ?? e.message,
};

async function push(
  credits: CreditOutboxDeps['credits'],
  target: { origin: string; path: string },
  pool: OutboundPool,
  credit: DueCredit,
): Promise<OutboxOutcome> {
  const answer = await pool.send({
    ...target,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': String(credit.id), ...credits.headers },
    body: stringifyExact(creditPushBody(credit)),
  });
  return outcomeOfAnswer(answer, WORDS);
}

export function creditOutbox(deps: CreditOutboxDeps): OutboxKind<DueCredit> {
  const { credits } = deps;
  const target = splitUrl(credits.url);
  return {
    name: 'credit outbox',
    settings: credits,
    claim: (db, limit, now, lease, token) => claimDueCredits(db, dialectFlagsOf(db), limit, now, lease, token),
    attemptsOf: (c) => c.delivery_attempts,
    // Not all of a round at once with one mark at its end: a kill then pushed the whole round again (docs/crash-windows.md).
    send: sendEachCommitted((c) => push(credits, target, deps.pool, c), { lanes: credits.concurrency, leaseMs: credits.lease, now: deps.now }),
    markSent: (db, ids, token, at) => markCreditsDelivered(db, ids, token, at),
    markFailed: (db, failed, token) => markCreditDeliveriesFailed(db, failed, token),
    again: (round) => round.sent.length > 0,
    report({ sent, failed }) {
      const dead = failed.filter((f) => f.plan.dead);
      if (sent.length > 0) deps.onDelivered?.(sent.length);
      if (failed.length > 0)
        deps.logger.warn({ count: failed.length, dead: dead.length, error: failed[0]!.error }, 'credits not taken by operator.credits.url; backing off');
      for (const d of dead) deps.logger.warn({ credit_id: String(d.row.id) }, 'credit dead-lettered; replay it with POST /admin/credits/replay');
    },
    onDead: (count) => deps.onDead?.(count),
  };
}
