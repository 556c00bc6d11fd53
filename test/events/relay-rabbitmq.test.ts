/**
 * The RabbitMQ transport against the real broker on 127.0.0.1:5672 (.ci/run starts it): each event is published
 * persistent, with its queue type in the `type` property, and counts as sent only after the broker's confirm. While
 * the exchange does not exist the broker refuses the publishes: the events stay in the outbox and go out once it does.
 * While the exchange exists but no queue is bound, the broker confirms and returns each (mandatory, 312 NO_ROUTE):
 * they are not sent, are counted, retried, and go out once a queue is bound; dead only under relay.max_attempts.
 */
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bonusEvent, catalogueExamples, exactNumberEvents, relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const BROKER = process.env.TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
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

  it('publishes ids above 2^53, 1e400, -1e-400 and 1.0, in the schema’s keys and outside them, byte for byte', async () => {
    const events = exactNumberEvents('rb-digits');
    const sent = new Map<string, string>();
    for (const e of events) {
      // The body as text, so no number passes through a double on the way in.
      const res = await relay(gw, e.method, e.path, e.text);
      expect(res.status, JSON.stringify(res.json)).toBe(202);
      sent.set(res.json.event_id, e.text);
    }
    const got = await waitFor(
      () => {
        const mine = received.filter((m) => sent.has(m.properties.messageId as string));
        return mine.length === sent.size ? mine : undefined;
      },
      30_000,
      'the exact-number events',
    );
    for (const m of got) expect(m.content.toString('utf8')).toBe(sent.get(m.properties.messageId as string));
  }, 60_000);
});

/** A gateway publishing to `exchangeName` (which the test declares, with or without a queue bound). */
function rabbitGateway(exchangeName: string, relayOptions: Record<string, unknown> = {}) {
  return startTestGateway({
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100, ...relayOptions },
    crm: { integration: { transport: 'rabbitmq', rabbitmq: { url: BROKER, exchange: exchangeName, routing_key: 'crm.events' } } },
  });
}

const eventsOf = async (g: TestGateway, user: string) =>
  (await g.get(`/admin/events?user_id=${encodeURIComponent(user)}`, admin)).json.events as Array<Record<string, any>>;
const metric = async (g: TestGateway, pattern: RegExp) =>
  Number(pattern.exec(await fetch(`${g.url}/metrics`, { headers: admin }).then((r) => r.text()))?.[1] ?? 0);

async function renderedConsole(g: TestGateway): Promise<string> {
  const login = await fetch(`${g.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  return (await fetch(`${g.url}/console`, { headers: { cookie } })).text();
}

describe('an exchange with no queue bound (publishes are mandatory)', () => {
  const unbound = `crm-events-unbound-${randomUUID()}`;
  const unboundQueue = `crm-events-unbound-${randomUUID()}`;
  let g: TestGateway;

  beforeAll(async () => {
    await channel.assertExchange(unbound, 'direct', { durable: false, autoDelete: false });
    g = await rabbitGateway(unbound);
  });
  afterAll(async () => {
    await g?.close();
    await channel?.deleteQueue(unboundQueue).catch(() => {});
    await channel?.deleteExchange(unbound).catch(() => {});
  });

  it('a confirmed but returned event is not sent: counted, shown, retried; once a queue is bound each goes out once, in order', async () => {
    const ids: string[] = [];
    for (let n = 0; n < 3; n++)
      ids.push((await relay(g, 'POST', '/v1/integration/custom', thinEvent('rr-1', { notification_type: 'n', data: { n } }))).json.event_id);
    const other = (await relay(g, 'POST', '/v2/integration/login', thinEvent('rr-2'))).json.event_id as string;

    // The broker confirms every one of these publishes (the exchange exists) and returns it: none may count as sent.
    const headOf = async () => (await eventsOf(g, 'rr-1')).find((e) => e.event_id === ids[0]);
    await waitFor(async () => ((await headOf())?.attempts >= 3 ? true : undefined), 20_000, 'three returned attempts');
    const waiting = await eventsOf(g, 'rr-1');
    expect(waiting.map((e) => e.status)).toEqual(['pending', 'pending', 'pending']);
    const head = waiting.find((e) => e.event_id === ids[0])!;
    expect(head.last_error).toMatch(/^not routed: RabbitMQ returned it \(312 NO_ROUTE\): no queue is bound to exchange ".+" for routing key "crm\.events"$/);
    // Per-player order: the later events of rr-1 were never tried while their head was owed.
    expect(waiting.filter((e) => e.event_id !== ids[0]).map((e) => e.attempts)).toEqual([0, 0]);
    expect(await metric(g, /^sms_gateway_crm_events_not_routed_total (\d+)/m)).toBeGreaterThanOrEqual(3);
    expect(await metric(g, /^sms_gateway_crm_events_sent_total (\d+)/m)).toBe(0);
    const page = await renderedConsole(g);
    expect(Number(/<td data-events="not-routed">(\d+)<\/td>/.exec(page)?.[1])).toBeGreaterThanOrEqual(2);

    const got: ConsumeMessage[] = [];
    await channel.assertQueue(unboundQueue, { durable: false, exclusive: false, autoDelete: false });
    await channel.consume(unboundQueue, (m) => m && got.push(m), { noAck: true });
    await channel.bindQueue(unboundQueue, unbound, 'crm.events');
    await waitFor(() => got.length >= 4, 30_000, 'four messages once a queue is bound');
    await waitFor(async () => ((await eventsOf(g, 'rr-1')).every((e) => e.status === 'sent') ? true : undefined), 10_000, 'all marked sent');
    // Nothing more arrives: each event once.
    await new Promise((r) => setTimeout(r, 300));
    expect(got.map((m) => m.properties.messageId).sort()).toEqual([...ids, other].sort());
    expect(got.filter((m) => JSON.parse(m.content.toString()).user_id === 'rr-1').map((m) => m.properties.messageId)).toEqual(ids);
    // Each publish had its own id, the one a return is matched by.
    expect(new Set(got.map((m) => m.properties.headers?.publish_id)).size).toBe(4);
    expect((await g.get('/admin/events?status=dead', admin)).json.events.filter((e: { user_id: string }) => e.user_id.startsWith('rr-'))).toEqual([]);
    expect(Number(/<td data-events="not-routed">(\d+)<\/td>/.exec(await renderedConsole(g))?.[1])).toBe(0);
  }, 60_000);
});

describe('returned events and relay.max_attempts', () => {
  const unbound = `crm-events-unbound-${randomUUID()}`;
  let g: TestGateway;

  beforeAll(async () => {
    await channel.assertExchange(unbound, 'direct', { durable: false, autoDelete: false });
    g = await rabbitGateway(unbound, { max_attempts: 2 });
  });
  afterAll(async () => {
    await g?.close();
    await channel?.deleteExchange(unbound).catch(() => {});
  });

  it('are dead-lettered by the rule that dead-letters any event: out of relay.max_attempts, never at once', async () => {
    const id = (await relay(g, 'POST', '/v2/integration/login', thinEvent('rm-1'))).json.event_id as string;
    const dead = await waitFor(async () => (await eventsOf(g, 'rm-1')).find((e) => e.event_id === id && e.status === 'dead'), 20_000, 'dead');
    expect(dead).toMatchObject({ attempts: 2, last_error: expect.stringMatching(/^not routed: RabbitMQ returned it \(312 NO_ROUTE\)/) });
    expect(await metric(g, /^sms_gateway_crm_events_dead_lettered_total\{reason="attempts"\} (\d+)/m)).toBe(1);
    expect(await metric(g, /^sms_gateway_crm_events_dead_lettered_total\{reason="refused"\} (\d+)/m)).toBe(0);
  }, 30_000);
});
