/**
 * /metrics series of the credits outbox (credit-outbox.ts), as src/outbox/metrics.ts names an outbox's series: credits
 * delivered and dead-lettered, and the backlog read at scrape time.
 */
import type { Registry } from 'prom-client';
import type { CreditBacklog } from '../../ledger/credit-delivery.js';
import { registerOutboxMetrics } from '../../outbox/metrics.js';

export function registerCreditMetrics(registry: Registry, countBacklog: () => Promise<CreditBacklog>) {
  const series = registerOutboxMetrics(
    registry,
    {
      sent: { name: 'sms_gateway_operator_credits_delivered_total', help: 'Credits operator.credits.url took (2xx)' },
      dead: { name: 'sms_gateway_operator_credits_dead_lettered_total', help: 'Credits dead-lettered after operator.credits.max_attempts' },
      backlog: {
        name: 'sms_gateway_operator_credits_outbox',
        help: 'Credits not yet delivered to the operator: due (pending or backing off), dead (needs a replay)',
        states: (backlog) => ({ due: backlog.due, dead: backlog.dead }),
      },
    },
    countBacklog,
  );
  return { delivered: series.sent, dead: (n: number) => series.dead(n, 'attempts') };
}
