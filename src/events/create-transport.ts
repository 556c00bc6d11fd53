/**
 * The transport crm.integration chooses, or undefined when none is configured (events then wait in the outbox).
 * Push conversions always go over HTTP to {crm.integration.url}/webhook/callback/push/ with Basic auth
 * (crm.integration.push), whichever transport carries the other events.
 */
import type { Config } from '../config/schema.js';
import type { OutboundClient } from '../http/outbound.js';
import { TRACING_OFF, type Tracing } from '../observability/tracing.js';
import { createHttpTransport } from './http-transport.js';
import { createKafkaTransport } from './kafka-transport.js';
import { createRabbitMqTransport } from './rabbitmq-transport.js';
import type { OutboxOutcome } from '../outbox/outcome.js';
import type { EventTransport, OutgoingEvent } from './transport.js';

type Integration = Config['crm']['integration'];

function createMainTransport(integration: Integration, tracing: Tracing, http: OutboundClient): EventTransport | undefined {
  if (integration.transport === 'rabbitmq') return integration.rabbitmq && createRabbitMqTransport(integration.rabbitmq, integration.timeout, tracing);
  if (integration.transport === 'kafka') return integration.kafka && createKafkaTransport(integration.kafka, integration.timeout, tracing);
  return integration.url ? createHttpTransport({ ...integration, url: integration.url }, http) : undefined;
}

function createPushTransport(integration: Integration, http: OutboundClient): EventTransport | undefined {
  if (!integration.url) return undefined;
  const { username, password } = integration.push;
  const basic = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return createHttpTransport(
    {
      url: integration.url,
      headers: { authorization: basic },
      timeout: integration.timeout,
      max_connections: integration.max_connections,
    },
    http,
  );
}

const notConfigured = (what: string): OutboxOutcome => ({ ok: false, status: null, error: `${what} is not configured; the event waits in the outbox` });

/**
 * With tracing on, each event's sending is a span of its own trace linked to the relay request that queued it (stored
 * with the event): its HTTP request (the undici instrumentation's CLIENT span) or its broker publish (a PRODUCER span)
 * is that span's child and carries it on (docs/tracing.md).
 */
export function createEventTransport(integration: Integration, http: OutboundClient, tracing: Tracing = TRACING_OFF): EventTransport | undefined {
  const main = createMainTransport(integration, tracing, http);
  if (!main) return undefined;
  const push = createPushTransport(integration, http);
  const send = (event: OutgoingEvent): Promise<OutboxOutcome> => {
    if (event.channel !== 'push_webhook') return main.send(event);
    return push ? push.send(event) : Promise.resolve(notConfigured('crm.integration.url (the push conversion webhook)'));
  };
  const sendTraced = async (event: OutgoingEvent): Promise<OutboxOutcome> => {
    const span = tracing.startSpan('event.send', null, {
      root: true,
      links: [event.traceparent],
      attributes: { 'crm.event_id': event.event_id, 'crm.event_type': event.type },
    });
    const outcome = await span.run(() => send(event));
    if (!outcome.ok) span.fail(outcome.error, outcome.status === null ? 'unreachable' : String(outcome.status));
    span.end();
    return outcome;
  };
  return {
    target: main.target,
    send: tracing.enabled ? sendTraced : send,
    abort() {
      main.abort();
      push?.abort();
    },
    async close() {
      await Promise.all([main.close(), push?.close()]);
    },
  };
}
