/**
 * Traces of broker publishes (docs/tracing.md "Messages published"): with tracing on, an event published to RabbitMQ
 * (the real broker on 127.0.0.1:5672) or to Kafka (the wire-format fake of test/fakes/kafka.ts) is a PRODUCER span
 * with the messaging.* attributes, linked to the relay request that queued the event, and the message carries that
 * span's W3C traceparent in its headers for the CRM's consumer to continue from.
 */
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFlush } from '../../src/commands/flush.js';
import { FakeKafkaBroker } from '../fakes/kafka.js';
import { startOtlpFake, type OtlpFake } from '../fakes/otlp.js';
import { relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

const BROKER = process.env.TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const TRACE_ID = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
const RELAY_CALLER = `00-${TRACE_ID}-1122334455667788-01`;
const PRODUCER = 4;
const tracing = (otlp: OtlpFake) => ({ tracing: { enabled: true, endpoint: otlp.url, export_interval: '50ms' } });
const relaySettings = { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100 };

/** The relay request's span, the event span linked to it, and the producer span under that. */
async function spansOf(otlp: OtlpFake, eventId: string) {
  const relayed = await waitFor(
    () => otlp.spans.find((s) => s.traceId === TRACE_ID && s.name === 'PUT /relay/v2/integration/user/consents'),
    10_000,
    'the relay span',
  );
  const eventSpan = await waitFor(() => otlp.spans.find((s) => s.name === 'event.send' && s.attributes['crm.event_id'] === eventId), 10_000, 'the event span');
  const producer = await waitFor(() => otlp.spans.find((s) => s.kind === PRODUCER && s.parentSpanId === eventSpan.spanId), 10_000, 'the producer span');
  return { relayed, eventSpan, producer };
}

describe('RabbitMQ', () => {
  const exchange = `crm-events-trace-${randomUUID()}`;
  const queue = `crm-events-trace-${randomUUID()}`;
  const received: ConsumeMessage[] = [];
  let connection: ChannelModel;
  let channel: Channel;
  let otlp: OtlpFake;
  let gw: TestGateway;

  beforeAll(async () => {
    connection = await amqp.connect(BROKER);
    channel = await connection.createChannel();
    await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
    await channel.assertQueue(queue, { durable: false, exclusive: false, autoDelete: false });
    await channel.bindQueue(queue, exchange, 'crm.events');
    await channel.consume(queue, (m) => m && received.push(m), { noAck: true });
    otlp = await startOtlpFake();
    gw = await startTestGateway({
      relay: relaySettings,
      crm: { integration: { transport: 'rabbitmq', rabbitmq: { url: BROKER, exchange, routing_key: 'crm.events' } } },
      observability: tracing(otlp),
    });
  });

  afterAll(async () => {
    await gw?.close();
    await channel?.deleteQueue(queue).catch(() => {});
    await channel?.deleteExchange(exchange).catch(() => {});
    await connection?.close();
    await otlp?.close();
  });

  it('publishes in a PRODUCER span with the messaging attributes, its traceparent in the message headers', async () => {
    const res = await relay(gw, 'PUT', '/v2/integration/user/consents', thinEvent('u-rabbit-trace'), RELAY_KEY, { traceparent: RELAY_CALLER });
    expect(res.status).toBe(202);
    const eventId: string = res.json.event_id;
    const message = await waitFor(() => received.find((m) => m.properties.messageId === eventId), 20_000, 'the message at the broker');
    const { relayed, eventSpan, producer } = await spansOf(otlp, eventId);
    expect(eventSpan.links).toEqual([{ traceId: TRACE_ID, spanId: relayed.spanId }]);
    expect(producer).toMatchObject({
      name: `send ${exchange}`,
      traceId: eventSpan.traceId,
      links: [{ traceId: TRACE_ID, spanId: relayed.spanId }],
      attributes: {
        'messaging.system': 'rabbitmq',
        'messaging.destination.name': exchange,
        'messaging.operation.type': 'send',
        'messaging.message.id': eventId,
      },
    });
    expect(String(message.properties.headers?.traceparent)).toBe(`00-${producer.traceId}-${producer.spanId}-01`);
  });
});

/** A gateway relaying to the Kafka fake, tracing to the OTLP fake: `relay` on top of relaySettings. */
function tracedKafkaGateway(relay: Record<string, unknown>, partitions: number) {
  const parts = { broker: new FakeKafkaBroker({ 'crm-events': partitions }) } as { broker: FakeKafkaBroker; otlp: OtlpFake; gw: TestGateway };
  beforeAll(async () => {
    await parts.broker.start();
    parts.otlp = await startOtlpFake();
    parts.gw = await startTestGateway({
      relay: { ...relaySettings, ...relay },
      crm: { integration: { transport: 'kafka', timeout: '1s', kafka: { brokers: [parts.broker.broker], topic: 'crm-events' } } },
      observability: tracing(parts.otlp),
    });
  });
  afterAll(async () => {
    await parts.gw?.close();
    await parts.broker.stop();
    await parts.otlp?.close();
  });
  return parts;
}

/** The event's record at the broker and its producer span, the record carrying that span's traceparent. */
async function tracedRecord({ broker, otlp }: { broker: FakeKafkaBroker; otlp: OtlpFake }, eventId: string) {
  const record = await waitFor(() => broker.recordsWithHeader('event_id', eventId)[0], 15_000, 'the record at the broker');
  const { relayed, producer } = await spansOf(otlp, eventId);
  expect(record.headers).toMatchObject({ event_id: eventId, traceparent: `00-${producer.traceId}-${producer.spanId}-01` });
  return { relayed, producer };
}

describe('Kafka', () => {
  const kafka = tracedKafkaGateway({ lease: '5s' }, 2);

  it('publishes in a PRODUCER span with the messaging attributes, its traceparent in the record headers', async () => {
    const res = await relay(kafka.gw, 'PUT', '/v2/integration/user/consents', thinEvent('u-kafka-trace'), RELAY_KEY, { traceparent: RELAY_CALLER });
    expect(res.status).toBe(202);
    const eventId: string = res.json.event_id;
    const { relayed, producer } = await tracedRecord(kafka, eventId);
    expect(producer).toMatchObject({
      name: 'send crm-events',
      links: [{ traceId: TRACE_ID, spanId: relayed.spanId }],
      attributes: {
        'messaging.system': 'kafka',
        'messaging.destination.name': 'crm-events',
        'messaging.operation.type': 'send',
        'messaging.message.id': eventId,
      },
    });
  });
});

describe('the cron flush', () => {
  // serve takes the event and leaves it owed (relay.worker false): only flush sends it.
  const kafka = tracedKafkaGateway({ worker: false }, 1);

  it('publishes what it flushes in a PRODUCER span too, linked to the relay request, its traceparent in the record headers', async () => {
    const res = await relay(kafka.gw, 'PUT', '/v2/integration/user/consents', thinEvent('u-flush-trace'), RELAY_KEY, { traceparent: RELAY_CALLER });
    expect(res.status).toBe(202);
    const eventId: string = res.json.event_id;
    const out = new PassThrough();
    expect(await runFlush(kafka.gw.config, out)).toBe(0);
    expect(String(out.read())).toContain('flush events: sent=1');
    const { relayed, producer } = await tracedRecord(kafka, eventId);
    expect(producer).toMatchObject({ name: 'send crm-events', links: [{ traceId: TRACE_ID, spanId: relayed.spanId }] });
  });
});
