/**
 * /metrics series of the event relay, registered on the gateway's registry beside the others
 * (src/observability/metrics.ts), the outbox's as src/outbox/metrics.ts names them: the outbox backlog and the age of its oldest unsent event, read at scrape time;
 * events sent, dead-lettered and not routed by the broker; accept-to-sent latency.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { EventBacklog } from '../ledger/events.js';
import { registerOutboxMetrics } from '../outbox/metrics.js';

const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600];

export interface EventBacklogSources {
  countBacklog: () => Promise<EventBacklog>;
  /** Acceptance time of the oldest unsent event, null when none is owed. */
  oldestUnsent: () => Promise<number | null>;
}

export function registerEventMetrics(registry: Registry, sources: EventBacklogSources, now: () => number) {
  const registers = [registry];
  const series = registerOutboxMetrics(
    registry,
    {
      sent: { name: 'sms_gateway_crm_events_sent_total', help: 'Real-time events the CRM took (an HTTP 2xx or a broker acknowledgement)' },
      dead: {
        name: 'sms_gateway_crm_events_dead_lettered_total',
        help: 'Real-time events dead-lettered: refused by the CRM (a 4xx or a destination not configured) or out of relay.max_attempts',
        byReason: true,
      },
      backlog: {
        name: 'sms_gateway_crm_events_outbox',
        help: 'Real-time events not yet sent: pending (never tried), retrying (backing off), dead (needs a replay)',
        states: (backlog) => ({ pending: backlog.unsent - backlog.retrying, retrying: backlog.retrying, dead: backlog.dead }),
      },
    },
    sources.countBacklog,
  );
  const latency = new Histogram({
    name: 'sms_gateway_crm_event_delivery_seconds',
    help: 'Time from accepting an event to the CRM taking it',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  new Gauge({
    name: 'sms_gateway_crm_events_oldest_unsent_age_seconds',
    help: 'Age of the oldest event not yet sent (dead ones excluded); 0 when none is owed',
    registers,
    async collect() {
      const oldest = await sources.oldestUnsent();
      this.set(oldest === null ? 0 : Math.max(0, (now() - oldest) / 1000));
    },
  });
  const notRouted = new Counter({
    name: 'sms_gateway_crm_events_not_routed_total',
    help: 'Attempts the broker took but routed to no queue or partition (a RabbitMQ return, an unknown Kafka topic); each is retried',
    registers,
  });
  return {
    eventsNotRouted: () => notRouted.inc(),
    eventsSent(count: number, latenciesSeconds: number[]) {
      series.sent(count);
      for (const s of latenciesSeconds) latency.observe(Math.max(0, s));
    },
    eventsDead: series.dead,
  };
}
