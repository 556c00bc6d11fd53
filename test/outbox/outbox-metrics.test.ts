/** The series src/outbox/metrics.ts registers for a kind, as the credits and the CRM events name them. */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerEventMetrics } from '../../src/events/metrics.js';
import { registerCreditMetrics } from '../../src/operator/credits/credit-metrics.js';

const series = async (registry: Registry) =>
  (await registry.metrics()).split('\n').filter((line) => line !== '' && !line.startsWith('#') && !line.includes('_bucket'));

describe('outbox metrics', () => {
  it('counts credits delivered and dead without a reason label, and shows the backlog by state', async () => {
    const registry = new Registry();
    const credits = registerCreditMetrics(registry, async () => ({ due: 3, retrying: 1, dead: 2, oldestDueAt: null }));
    credits.delivered(4);
    credits.dead(1);
    expect(await series(registry)).toEqual([
      'sms_gateway_operator_credits_delivered_total 4',
      'sms_gateway_operator_credits_dead_lettered_total 1',
      'sms_gateway_operator_credits_outbox{state="due"} 3',
      'sms_gateway_operator_credits_outbox{state="dead"} 2',
    ]);
  });

  it('counts CRM events dead by reason, and shows pending apart from retrying', async () => {
    const registry = new Registry();
    const events = registerEventMetrics(
      registry,
      { countBacklog: async () => ({ unsent: 5, retrying: 2, dead: 1 }), oldestUnsent: async () => 1_000 },
      () => 11_000,
    );
    events.eventsSent(2, [0.1]);
    events.eventsDead(1, 'refused');
    events.eventsDead(2, 'attempts');
    events.eventsNotRouted();
    expect(await series(registry)).toEqual([
      'sms_gateway_crm_events_sent_total 2',
      'sms_gateway_crm_events_dead_lettered_total{reason="refused"} 1',
      'sms_gateway_crm_events_dead_lettered_total{reason="attempts"} 2',
      'sms_gateway_crm_events_outbox{state="pending"} 3',
      'sms_gateway_crm_events_outbox{state="retrying"} 2',
      'sms_gateway_crm_events_outbox{state="dead"} 1',
      'sms_gateway_crm_event_delivery_seconds_sum 0.1',
      'sms_gateway_crm_event_delivery_seconds_count 1',
      'sms_gateway_crm_events_oldest_unsent_age_seconds 10',
      'sms_gateway_crm_events_not_routed_total 1',
    ]);
  });
});
