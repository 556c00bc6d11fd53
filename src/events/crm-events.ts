/**
 * The CRM event outbox as one unit (src/outbox/descriptor.ts): events to the CRM's Integration API, RabbitMQ or Kafka
 * (create-transport.ts, each stored event's destination looked up at send time by destination.ts), claimed and sent by
 * event-outbox.ts when relay.worker is on, with its /metrics series (metrics.ts), its console panel and dead list
 * (dead-events-page.ts) and its /admin routes (admin-routes.ts). Listed in src/outboxes.ts.
 */
import { countEventBacklog, countNotRoutedEvents, oldestUnsentEvent } from '../ledger/events.js';
import type { OutboxDescriptor } from '../outbox/descriptor.js';
import { eventAdminRoutes } from './admin-routes.js';
import { createEventTransport } from './create-transport.js';
import { deadEventsList, eventPanel } from './dead-events-page.js';
import { createDestinations, type Destinations } from './destination.js';
import { eventOutbox } from './event-outbox.js';
import { registerEventMetrics } from './metrics.js';
import type { EventTransport } from './transport.js';

export const crmEvents: OutboxDescriptor<{ transport: EventTransport; destinations: Destinations }, ReturnType<typeof registerEventMetrics>> = {
  name: 'events',
  flushLine: { prefix: 'flush events', sent: 'sent', unreachable: 'CRM unreachable' },
  receiver(config, { purpose, logger, tracing, http }) {
    if (purpose === 'serve' && !config.relay.worker) return undefined;
    const transport = createEventTransport(config.crm.integration, http, tracing);
    if (!transport) {
      if (purpose === 'serve' && config.relay.api_keys.length > 0)
        logger.warn('crm.integration has no url (or rabbitmq, kafka): relayed events wait in the outbox');
      return undefined;
    }
    const destinations = createDestinations(config.crm.integration);
    const untyped = [...destinations.byStoredKind.values()].filter((r) => r.channel === 'integration' && !r.queueTypeKnown).map((r) => r.kind);
    if (purpose === 'serve' && destinations.queue && untyped.length > 0) {
      logger.warn(
        { kinds: untyped },
        'no queue type name is documented for these events: set crm.integration.events.<kind>.type, or they are dead-lettered (docs/events.md)',
      );
    }
    return { client: { transport, destinations }, abort: () => transport.abort(), close: () => transport.close() };
  },
  outbox: (config, { transport, destinations }, deps) =>
    eventOutbox({
      ...deps,
      transport,
      destinations,
      relay: config.relay,
      onSent: deps.metrics?.eventsSent,
      onDead: deps.metrics?.eventsDead,
      onNotRouted: deps.metrics?.eventsNotRouted,
    }),
  async backlog(db) {
    const { unsent, dead } = await countEventBacklog(db);
    return { left: unsent, dead, counts: { not_routed: await countNotRoutedEvents(db) } };
  },
  metrics: (registry, { readDb, now }) =>
    registerEventMetrics(registry, { countBacklog: () => countEventBacklog(readDb), oldestUnsent: () => oldestUnsentEvent(readDb) }, now),
  panel: () => eventPanel,
  deadList: deadEventsList,
  adminRoutes: eventAdminRoutes,
};
