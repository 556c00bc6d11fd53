/** The transport crm.integration chooses, or undefined when none is configured (events then wait in the outbox). */
import type { Config } from '../config/schema.js';
import { createHttpTransport } from './http-transport.js';
import { createRabbitMqTransport } from './rabbitmq-transport.js';
import type { EventTransport } from './transport.js';

export function createEventTransport(integration: Config['crm']['integration']): EventTransport | undefined {
  if (integration.transport === 'rabbitmq') return integration.rabbitmq && createRabbitMqTransport(integration.rabbitmq, integration.timeout);
  return integration.url ? createHttpTransport({ ...integration, url: integration.url }) : undefined;
}
