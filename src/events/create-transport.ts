/**
 * The transport crm.integration chooses, or undefined when none is configured (events then wait in the outbox).
 * Push conversions always go over HTTP to {crm.integration.url}/webhook/callback/push/ with Basic auth
 * (crm.integration.push), whichever transport carries the other events.
 */
import type { Config } from '../config/schema.js';
import { createHttpTransport } from './http-transport.js';
import { createKafkaTransport } from './kafka-transport.js';
import { createRabbitMqTransport } from './rabbitmq-transport.js';
import type { EventTransport, TransportOutcome } from './transport.js';

type Integration = Config['crm']['integration'];

function createMainTransport(integration: Integration): EventTransport | undefined {
  if (integration.transport === 'rabbitmq') return integration.rabbitmq && createRabbitMqTransport(integration.rabbitmq, integration.timeout);
  if (integration.transport === 'kafka') return integration.kafka && createKafkaTransport(integration.kafka, integration.timeout);
  return integration.url ? createHttpTransport({ ...integration, url: integration.url }) : undefined;
}

function createPushTransport(integration: Integration): EventTransport | undefined {
  if (!integration.url) return undefined;
  const { username, password } = integration.push;
  const basic = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return createHttpTransport({
    url: integration.url,
    headers: { authorization: basic },
    timeout: integration.timeout,
    max_connections: integration.max_connections,
  });
}

const notConfigured = (what: string): TransportOutcome => ({ ok: false, status: null, error: `${what} is not configured; the event waits in the outbox` });

export function createEventTransport(integration: Integration): EventTransport | undefined {
  const main = createMainTransport(integration);
  if (!main) return undefined;
  const push = createPushTransport(integration);
  return {
    target: main.target,
    send: (event) => {
      if (event.channel !== 'push_webhook') return main.send(event);
      return push ? push.send(event) : Promise.resolve(notConfigured('crm.integration.url (the push conversion webhook)'));
    },
    abort() {
      main.abort();
      push?.abort();
    },
    async close() {
      await Promise.all([main.close(), push?.close()]);
    },
  };
}
