/**
 * Where a stored event goes now. The outbox stores an event under the catalogue's type name; its method, path,
 * queue type name and topic are looked up when it is sent, so a dead-lettered event replayed after a fix of
 * crm.integration.events goes to the fixed destination. Pure.
 */
import type { ClaimedEvent } from '../ledger/events.js';
import { resolveCatalogue, type EventKind, type EventOverride, type EventRoute } from '../crm/event-catalogue.js';
import type { OutgoingEvent } from './transport.js';

export interface Destinations {
  /** The route of each kind by the name the outbox stores it under (EventRoute.storedKind). */
  byStoredKind: ReadonlyMap<string, EventRoute>;
  /** RabbitMQ or Kafka: the queue type name is what the CRM reads. */
  queue: boolean;
}

export function createDestinations(integration: { transport: string; events?: Partial<Record<EventKind, EventOverride | undefined>> }): Destinations {
  return { byStoredKind: new Map(resolveCatalogue(integration.events).map((r) => [r.storedKind, r])), queue: integration.transport !== 'http' };
}

export type Destined = { ok: true; event: OutgoingEvent } | { ok: false; error: string };

export function destinationOf(event: ClaimedEvent, destinations: Destinations): Destined {
  const route = destinations.byStoredKind.get(event.type);
  // A type the catalogue no longer has goes where it was stored to go.
  if (!route) return { ok: true, event: { ...event, channel: 'integration' } };
  if (route.channel === 'integration' && destinations.queue && !route.queueTypeKnown) {
    return {
      ok: false,
      error: `no queue type name is documented for ${route.kind}: set crm.integration.events.${route.kind}.type to the one the CRM gave you, then replay`,
    };
  }
  return { ok: true, event: { ...event, method: route.method, path: route.path, type: route.queueType, topic: route.topic, channel: route.channel } };
}
