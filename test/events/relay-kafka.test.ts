/**
 * The Kafka transport against the fake broker of test/fakes/kafka.ts (no Kafka broker can run here): every event
 * published with its queue type in the header `type`, the player as key, acks -1 by an idempotent producer, on the
 * configured topic; counted sent only once acknowledged. Refusals, a stalled broker and dropped connections lose
 * and double nothing; a record the broker will never take is dead-lettered; an event with no documented queue type
 * name waits for one to be configured.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createKafkaTransport } from '../../src/events/kafka-transport.js';
import type { OutgoingEvent } from '../../src/events/transport.js';
import { FakeKafkaBroker, KafkaError } from '../fakes/kafka.js';
import { catalogueExamples, exactNumberEvents, relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const broker = new FakeKafkaBroker({ 'crm-events': 4, 'crm-payments': 2 });
let gw: TestGateway;
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

beforeAll(async () => {
  await broker.start();
  gw = await startTestGateway({
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 50, retry_max_ms: 200, lease: '5s' },
    crm: {
      integration: {
        transport: 'kafka',
        timeout: '1s',
        kafka: { brokers: [broker.broker], topic: 'crm-events' },
        events: { payment: { topic: 'crm-payments' }, device_unlink: { type: 'DEVICE_TOKEN_UNLINK' } },
      },
    },
  });
});

afterAll(async () => {
  await gw.close();
  await broker.stop();
});

beforeEach(() => {
  broker.refuseProduce = undefined;
  broker.stall = false;
});

const published = (eventId: string) => waitFor(() => broker.recordsWithHeader('event_id', eventId)[0], 15_000, `event ${eventId} at the broker`);
const eventsOf = async (user: string) => (await gw.get(`/admin/events?user_id=${encodeURIComponent(user)}`, admin)).json.events as Array<Record<string, any>>;

describe('crm.integration.transport kafka', () => {
  it('publishes each event once: header type, key user_id, acks -1, an idempotent producer id, the body unchanged, per-player order in one partition', async () => {
    const ids: Record<string, string[]> = {};
    for (let n = 0; n < 5; n++) {
      for (const user of ['k-1', 'k-2', 'k-3']) {
        const res = await relay(gw, 'POST', '/v1/integration/custom', thinEvent(user, { notification_type: 'step', data: { n } }));
        expect(res.status).toBe(202);
        (ids[user] ??= []).push(res.json.event_id);
      }
    }
    const all = Object.values(ids).flat();
    await waitFor(() => all.every((id) => broker.recordsWithHeader('event_id', id).length > 0), 15_000, 'all 15 published');
    for (const [user, expected] of Object.entries(ids)) {
      const records = broker.records.filter((r) => r.key === user);
      expect(records.map((r) => r.headers.event_id)).toEqual(expected);
      expect(new Set(records.map((r) => r.partition)).size).toBe(1);
      for (const r of records) {
        expect(r).toMatchObject({ topic: 'crm-events', acks: -1, headers: { type: 'CUSTOM' } });
        expect(r.producerId).toBeGreaterThanOrEqual(0n);
        expect(JSON.parse(r.value!)).toMatchObject({ user_id: user, notification_type: 'step' });
      }
    }
    expect((await eventsOf('k-1')).every((e) => e.status === 'sent')).toBe(true);
  });

  it('publishes ids above 2^53, 1e400, -1e-400 and 1.0, in the schema’s keys and outside them, byte for byte', async () => {
    for (const e of exactNumberEvents('k-digits')) {
      // The body as text, so no number passes through a double on the way in.
      const res = await relay(gw, e.method, e.path, e.text);
      expect(res.status, JSON.stringify(res.json)).toBe(202);
      expect((await published(res.json.event_id)).value).toBe(e.text);
    }
  });

  it('puts a kind on its own topic when configured, and uses a configured queue type name', async () => {
    const pay = await relay(gw, 'POST', '/v1/integration/payment', catalogueExamples('k-pay').payment!.valid);
    const unlink = await relay(gw, 'POST', '/v1/integration/user/device/unlink', catalogueExamples('k-pay').device_unlink!.valid);
    expect(await published(pay.json.event_id)).toMatchObject({ topic: 'crm-payments', headers: { type: 'PAYMENT' }, key: 'k-pay' });
    expect(await published(unlink.json.event_id)).toMatchObject({ topic: 'crm-events', headers: { type: 'DEVICE_TOKEN_UNLINK' } });
  });

  it('dead-letters a device link (no queue type name documented or configured) without holding back the player', async () => {
    const link = await relay(gw, 'POST', '/v1/integration/user/device/link', catalogueExamples('k-dev').device_link!.valid);
    const next = await relay(gw, 'POST', '/v2/integration/login', thinEvent('k-dev'));
    await published(next.json.event_id);
    const dead = (await eventsOf('k-dev')).find((e) => e.event_id === link.json.event_id)!;
    expect(dead.status).toBe('dead');
    expect(dead.last_error).toContain('crm.integration.events.device_link.type');
    expect(broker.recordsWithHeader('event_id', link.json.event_id)).toEqual([]);
  });

  it('keeps events while the broker refuses them, then publishes each once', async () => {
    broker.refuseProduce = KafkaError.NOT_ENOUGH_REPLICAS;
    const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent('k-refused'));
    await waitFor(async () => ((await eventsOf('k-refused'))[0]?.attempts >= 2 ? true : undefined), 15_000, 'refused twice');
    expect((await eventsOf('k-refused'))[0]).toMatchObject({ status: 'pending' });
    expect(broker.recordsWithHeader('event_id', res.json.event_id)).toEqual([]);
    broker.refuseProduce = undefined;
    await published(res.json.event_id);
    await waitFor(async () => ((await eventsOf('k-refused'))[0]?.status === 'sent' ? true : undefined));
    expect(broker.recordsWithHeader('event_id', res.json.event_id)).toHaveLength(1);
  });

  it('does not count an event sent while the broker stalls; it goes out once the broker answers again', async () => {
    broker.stall = true;
    const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent('k-stall'));
    await waitFor(() => broker.stalled.length > 0, 15_000, 'a produce request held by the broker');
    await waitFor(async () => ((await eventsOf('k-stall'))[0]?.attempts >= 1 ? true : undefined), 15_000, 'a timed-out attempt');
    expect((await eventsOf('k-stall'))[0]).toMatchObject({ status: 'pending' });
    expect(broker.recordsWithHeader('event_id', res.json.event_id)).toEqual([]);
    broker.stall = false;
    broker.dropConnections();
    await published(res.json.event_id);
    await waitFor(async () => ((await eventsOf('k-stall'))[0]?.status === 'sent' ? true : undefined));
    expect(broker.recordsWithHeader('event_id', res.json.event_id)).toHaveLength(1);
  });

  it('does not double an event the broker wrote late, after the gateway had given up on it: the same producer sends it again and the broker drops the repeat', async () => {
    broker.stall = true;
    const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent('k-late'));
    await waitFor(async () => ((await eventsOf('k-late'))[0]?.attempts >= 1 ? true : undefined), 15_000, 'a timed-out attempt');
    // Counted before the held requests are written: on a slow machine the retry is held too, and is the repeat dropped.
    const dropped = broker.duplicatesDropped;
    broker.writeStalled();
    expect(broker.recordsWithHeader('event_id', res.json.event_id)).toHaveLength(1);
    broker.stall = false;
    await waitFor(async () => ((await eventsOf('k-late'))[0]?.status === 'sent' ? true : undefined), 15_000, 'sent');
    expect(broker.recordsWithHeader('event_id', res.json.event_id)).toHaveLength(1);
    expect(broker.duplicatesDropped).toBeGreaterThan(dropped);
  });

  it('rides out dropped connections while publishing: every event once, in order', async () => {
    const ids: string[] = [];
    const sending = (async () => {
      for (let n = 0; n < 30; n++)
        ids.push((await relay(gw, 'POST', '/v1/integration/custom', thinEvent('k-drop', { notification_type: 'n', data: { n } }))).json.event_id);
    })();
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 60));
      broker.dropConnections();
    }
    await sending;
    await waitFor(() => ids.every((id) => broker.recordsWithHeader('event_id', id).length > 0), 20_000, 'all 30 published');
    const got = broker.records.filter((r) => r.key === 'k-drop').map((r) => r.headers.event_id);
    expect(got).toEqual(ids);
  });

  it('dead-letters at once an event the broker will never take (MESSAGE_TOO_LARGE)', async () => {
    broker.refuseNext(1, KafkaError.MESSAGE_TOO_LARGE);
    const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent('k-large'));
    expect(res.status).toBe(202);
    await waitFor(async () => ((await eventsOf('k-large'))[0]?.status === 'dead' ? true : undefined), 15_000, 'dead');
    expect((await eventsOf('k-large'))[0]!.last_error).toMatch(/Kafka: .*large/i);
  });
});

/**
 * What a broker says about where a record can go: a topic that does not exist (auto-creation off), partitions with
 * no leader, a produce answered by a broker that is no longer the leader. None may count as sent before a partition
 * holds the event, and none may hold back events bound for topics that are fine.
 */
describe('kafka: unknown topics and missing leaders', () => {
  const wire = new FakeKafkaBroker({ 'crm-main': 2 });
  let g: TestGateway;
  const eventsIn = async (user: string) => (await g.get(`/admin/events?user_id=${encodeURIComponent(user)}`, admin)).json.events as Array<Record<string, any>>;
  const metric = async (pattern: RegExp) => Number(pattern.exec(await fetch(`${g.url}/metrics`, { headers: admin }).then((r) => r.text()))?.[1] ?? 0);
  const at = (eventId: string) => waitFor(() => wire.recordsWithHeader('event_id', eventId)[0], 15_000, `event ${eventId} at the broker`);

  beforeAll(async () => {
    await wire.start();
    g = await startTestGateway({
      relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 50, retry_max_ms: 200, lease: '5s' },
      crm: {
        integration: { transport: 'kafka', timeout: '1s', kafka: { brokers: [wire.broker], topic: 'crm-main' }, events: { payment: { topic: 'crm-late' } } },
      },
    });
  });
  afterAll(async () => {
    await g.close();
    await wire.stop();
  });

  it('an event for a topic the broker does not have stays owed (counted not routed) without holding back other topics; it goes out once the topic exists', async () => {
    const pay = await relay(g, 'POST', '/v1/integration/payment', catalogueExamples('kt-pay').payment!.valid);
    await waitFor(async () => ((await eventsIn('kt-pay'))[0]?.attempts >= 2 ? true : undefined), 15_000, 'two attempts on the unknown topic');
    // Events of other players and kinds keep flowing meanwhile, also when they fall in the same round.
    const logins: string[] = [];
    for (let n = 0; n < 5; n++) logins.push((await relay(g, 'POST', '/v2/integration/login', thinEvent(`kt-${n}`))).json.event_id);
    for (const id of logins) await at(id);
    const owed = (await eventsIn('kt-pay'))[0]!;
    expect(owed).toMatchObject({ status: 'pending', last_error: expect.stringMatching(/^not routed: Kafka: .*topic "crm-late"/) });
    expect(wire.records.filter((r) => r.topic === 'crm-late')).toEqual([]);
    expect(await metric(/^sms_gateway_crm_events_not_routed_total (\d+)/m)).toBeGreaterThanOrEqual(2);

    wire.topics['crm-late'] = 1;
    expect(await at(pay.json.event_id)).toMatchObject({ topic: 'crm-late', headers: { type: 'PAYMENT' }, acks: -1 });
    await waitFor(async () => ((await eventsIn('kt-pay'))[0]?.status === 'sent' ? true : undefined), 15_000, 'sent');
    expect(wire.recordsWithHeader('event_id', pay.json.event_id)).toHaveLength(1);
    for (const id of logins) expect(wire.recordsWithHeader('event_id', id)).toHaveLength(1);
  });

  it('no leader for the partitions (LEADER_NOT_AVAILABLE): nothing counts as sent; each event goes out once, in order, after the election', async () => {
    wire.leaderless.add('crm-main');
    try {
      const ids: string[] = [];
      for (let n = 0; n < 3; n++)
        ids.push((await relay(g, 'POST', '/v1/integration/custom', thinEvent('kt-lead', { notification_type: 'n', data: { n } }))).json.event_id);
      await waitFor(async () => ((await eventsIn('kt-lead')).find((e) => e.event_id === ids[0])?.attempts >= 2 ? true : undefined), 15_000, 'two attempts');
      expect((await eventsIn('kt-lead')).map((e) => e.status)).toEqual(['pending', 'pending', 'pending']);
      expect(wire.records.filter((r) => r.key === 'kt-lead')).toEqual([]);
      wire.leaderless.delete('crm-main');
      await waitFor(() => ids.every((id) => wire.recordsWithHeader('event_id', id).length > 0), 15_000, 'all three after the election');
      expect(wire.records.filter((r) => r.key === 'kt-lead').map((r) => r.headers.event_id)).toEqual(ids);
      await waitFor(async () => ((await eventsIn('kt-lead')).every((e) => e.status === 'sent') ? true : undefined), 15_000, 'sent');
    } finally {
      wire.leaderless.delete('crm-main');
    }
  });

  it('a produce answered NOT_LEADER_OR_FOLLOWER (leadership moved) is written once after the client learns the new leader', async () => {
    const metadataBefore = wire.metadataRequests.length;
    wire.refuseNext(1, KafkaError.NOT_LEADER_OR_FOLLOWER);
    const res = await relay(g, 'POST', '/v2/integration/login', thinEvent('kt-moved'));
    expect(await at(res.json.event_id)).toMatchObject({ topic: 'crm-main', acks: -1 });
    await waitFor(async () => ((await eventsIn('kt-moved'))[0]?.status === 'sent' ? true : undefined), 15_000, 'sent');
    expect(wire.recordsWithHeader('event_id', res.json.event_id)).toHaveLength(1);
    // The client asked for metadata again (where the leader is now) before writing it.
    expect(wire.metadataRequests.length).toBeGreaterThan(metadataBefore);
  });
});

describe('kafka transport: one produce round with a topic the broker lacks', () => {
  const wire = new FakeKafkaBroker({ 'crm-there': 1 });
  beforeAll(async () => void (await wire.start()));
  afterAll(async () => wire.stop());

  const event = (n: number, topic: string): OutgoingEvent => ({
    id: n,
    event_id: `kt-direct-${n}`,
    type: 'LOGIN_V2',
    method: 'POST',
    path: '/v2/integration/login',
    user_id: `kt-direct-${n}`,
    payload_json: JSON.stringify({ user_id: `kt-direct-${n}` }),
    attempts: 0,
    created_at: 0,
    traceparent: null,
    topic,
    channel: 'integration',
  });

  it('sends the events of topics that exist and answers the others not routed, naming the topic', async () => {
    const transport = createKafkaTransport({ brokers: [wire.broker], topic: 'crm-there', client_id: 'test', ssl: false }, 1_000);
    try {
      // Sent in one tick: the transport gathers them into one produce round.
      const outcomes = await Promise.all([event(1, 'crm-there'), event(2, 'crm-absent'), event(3, 'crm-there')].map((e) => transport.send(e)));
      expect(outcomes[0]).toEqual({ ok: true, status: null });
      expect(outcomes[2]).toEqual({ ok: true, status: null });
      expect(outcomes[1]).toEqual({
        ok: false,
        status: null,
        notRouted: true,
        error: 'not routed: Kafka: the broker has no topic "crm-absent" (UNKNOWN_TOPIC_OR_PARTITION); it is not created by the gateway',
      });
      expect(wire.records.map((r) => [r.topic, r.headers.event_id])).toEqual([
        ['crm-there', 'kt-direct-1'],
        ['crm-there', 'kt-direct-3'],
      ]);
    } finally {
      await transport.close();
    }
  });
});
