/**
 * The RabbitMQ transport against the real broker on 127.0.0.1:5672 (.ci/run starts it): each event is published
 * persistent, with its queue type in the `type` property, and counts as sent only after the broker's confirm. While
 * the exchange does not exist the broker refuses the publishes: the events stay in the outbox and go out once it does.
 */
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bonusEvent, catalogueExamples, relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const BROKER = process.env.TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const exchange = `crm-events-test-${randomUUID()}`;
const queue = `crm-events-test-${randomUUID()}`;
let connection: ChannelModel;
let channel: Channel;
let gw: TestGateway;
const received: ConsumeMessage[] = [];
/** The gateway's warnings, shown when a wait times out (what the broker said). */
const warnings: string[] = [];
const logStream = new Writable({ write: (chunk, _e, done) => (warnings.push(String(chunk)), done()) });

beforeAll(async () => {
  connection = await amqp.connect(BROKER);
  channel = await connection.createChannel();
  gw = await startTestGateway(
    {
      relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100 },
      crm: {
        integration: {
          transport: 'rabbitmq',
          rabbitmq: { url: BROKER, exchange, routing_key: 'crm.events' },
          events: { device_link: { type: 'OPERATOR_DEVICE_LINK' } },
        },
      },
    },
    { logger: pino({ level: 'warn' }, logStream) },
  );
});

afterAll(async () => {
  await gw?.close();
  await channel?.deleteQueue(queue).catch(() => {});
  await channel?.deleteExchange(exchange).catch(() => {});
  await connection?.close();
});

describe('crm.integration.transport rabbitmq', () => {
  it('keeps events while the broker refuses them (no exchange yet), then publishes each once, persistent, typed, in order', async () => {
    const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    const first = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('rb-1', 'rb-ub', 'Created'));
    expect(first.status).toBe(202);
    await waitFor(
      async () => {
        const page = await gw.get('/admin/events?user_id=rb-1', admin);
        return page.json.events[0]?.attempts >= 2 && page.json.events[0].status === 'pending' ? page : undefined;
      },
      20_000,
      'refused publishes',
    );
    const second = await relay(gw, 'PUT', '/v2/integration/user/consents', thinEvent('rb-1'));
    const other = await relay(
      gw,
      'POST',
      '/v1/integration/user/device/link',
      thinEvent('rb-2', { tokens: [{ token: 't', channel: 'android', provider: 'fcm' }] }),
    );
    // No queue type name is documented for device unlink and none is configured here: dead-lettered, never published.
    const unlink = await relay(gw, 'POST', '/v1/integration/user/device/unlink', catalogueExamples('rb-3').device_unlink!.valid);
    const payment = await relay(gw, 'POST', '/v1/integration/payment', catalogueExamples('rb-3').payment!.valid);

    await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
    await channel.assertQueue(queue, { durable: false, exclusive: false, autoDelete: false });
    await channel.bindQueue(queue, exchange, 'crm.events');
    await channel.consume(queue, (m) => m && received.push(m), { noAck: true });

    await waitFor(() => received.length >= 4, 30_000, 'four messages').catch((error: Error) => {
      throw new Error(`${error.message}; received ${received.length}; last warnings: ${warnings.slice(-3).join('')}`);
    });
    const byId = new Map(received.map((m) => [m.properties.messageId as string, m]));
    expect(received.map((m) => m.properties.messageId).sort()).toEqual(
      [first.json.event_id, second.json.event_id, other.json.event_id, payment.json.event_id].sort(),
    );
    const bonus = byId.get(first.json.event_id)!;
    expect(bonus.properties.type).toBe('BONUS');
    expect(bonus.properties.deliveryMode).toBe(2);
    expect(bonus.properties.contentType).toBe('application/json');
    expect(JSON.parse(bonus.content.toString())).toEqual(bonusEvent('rb-1', 'rb-ub', 'Created'));
    expect(byId.get(second.json.event_id)!.properties.type).toBe('USER_CONSENTS_V2');
    expect(byId.get(other.json.event_id)!.properties.type).toBe('OPERATOR_DEVICE_LINK');
    expect(byId.get(payment.json.event_id)!.properties.type).toBe('PAYMENT');
    const dead = (await gw.get('/admin/events?user_id=rb-3&status=dead', admin)).json.events;
    expect(dead.map((e: { event_id: string }) => e.event_id)).toEqual([unlink.json.event_id]);
    expect(dead[0].last_error).toContain('crm.integration.events.device_unlink.type');
    // rb-1's consents event waited for its bonus event.
    const order = received.filter((m) => JSON.parse(m.content.toString()).user_id === 'rb-1').map((m) => m.properties.messageId);
    expect(order).toEqual([first.json.event_id, second.json.event_id]);
    await waitFor(async () => (await gw.get('/admin/events?status=pending', admin)).json.events.length === 0, 20_000, 'nothing pending');
    expect(received).toHaveLength(4);
  }, 60_000);
});
