/**
 * /metrics series of the credits outbox (credit-delivery.ts), beside the CRM events' (src/events/metrics.ts):
 * credits delivered and dead-lettered, and the backlog read at scrape time.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CreditBacklog } from '../ledger/credit-delivery.js';

export function registerCreditMetrics(registry: Registry, countBacklog: () => Promise<CreditBacklog>) {
  const registers = [registry];
  const delivered = new Counter({ name: 'sms_gateway_operator_credits_delivered_total', help: 'Credits operator.credits.url took (2xx)', registers });
  const dead = new Counter({
    name: 'sms_gateway_operator_credits_dead_lettered_total',
    help: 'Credits dead-lettered after operator.credits.max_attempts',
    registers,
  });
  new Gauge({
    name: 'sms_gateway_operator_credits_outbox',
    help: 'Credits not yet delivered to the operator: due (pending or backing off), dead (needs a replay)',
    labelNames: ['state'],
    registers,
    async collect() {
      const backlog = await countBacklog();
      this.set({ state: 'due' }, backlog.due);
      this.set({ state: 'dead' }, backlog.dead);
    },
  });
  return { delivered: (n: number) => delivered.inc(n), dead: (n: number) => dead.inc(n) };
}
