/**
 * A start-up that fails releases what it started (src/gateway.ts): each part of `serve` is made to fail in turn, right
 * after it started (GatewayOptions.afterStart, the gateway's own seam), and then no listener, timer, socket or broker
 * connection is left: the port is free again and the process holds no more handles than before the attempt
 * (process.getActiveResourcesInfo). The outboxes publish to a real RabbitMQ, so the parts after them fail with a broker
 * connection open.
 */
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { startGateway, type GatewayPart } from '../../src/gateway.js';
import { dropTestDatabase } from '../helpers/database.js';
import { RELAY_KEY, relay, thinEvent } from '../helpers/events.js';
import { startTestGateway, testConfigDocument, waitFor } from '../helpers/gateway.js';

const BROKER = process.env.TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const PARTS: GatewayPart[] = [
  'ledger',
  'tracing',
  'metrics',
  'listeners',
  'provider health',
  'outboxes',
  'receipt intake',
  'operator backend',
  'providers',
  'dispatcher',
  'timers',
  'app',
];
/** The parts after which the event outbox has published, so its broker connection is open when the start fails. */
const AFTER_OUTBOXES = new Set(PARTS.slice(PARTS.indexOf('outboxes')));

const exchange = `failed-start-${randomUUID()}`;
const queue = `failed-start-${randomUUID()}`;
const dir = mkdtempSync(join(tmpdir(), 'crm-sms-failed-start-'));
let connection: ChannelModel;
let channel: Channel;
let published = 0;

beforeAll(async () => {
  connection = await amqp.connect(BROKER);
  channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
  await channel.assertQueue(queue, { durable: false, autoDelete: false });
  await channel.bindQueue(queue, exchange, 'crm.events');
  await channel.consume(queue, () => void (published += 1), { noAck: true });
});
afterAll(async () => {
  await channel?.deleteQueue(queue).catch(() => {});
  await channel?.deleteExchange(exchange).catch(() => {});
  await connection?.close();
  await dropTestDatabase(dir);
  rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether `port` can be listened on again (no listener of the failed gateway holds it). */
async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}

/** The process's handles by kind (TCPServerWrap, TCPSocketWrap, Timeout, …). */
function handles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** The kinds of which there are more handles now than in `before`. */
function leftBehind(before: Map<string, number>): string[] {
  return [...handles()].filter(([kind, n]) => n > (before.get(kind) ?? 0)).map(([kind, n]) => `${kind}: ${before.get(kind) ?? 0} → ${n}`);
}

describe('a start-up that fails after some parts started', () => {
  it.each(PARTS)('releases everything when it fails after %s', async (part) => {
    // One event owed, accepted by a gateway whose outbox does not run, so the failing one has something to publish.
    const seeding = await startTestGateway({ relay: { api_keys: [RELAY_KEY], worker: false } }, { dir });
    expect((await relay(seeding, 'PUT', '/v2/integration/user/consents', thinEvent(`fs-${part}`))).status).toBe(202);
    await seeding.close();

    const port = await freePort();
    const config = parseConfig(
      testConfigDocument(dir, {
        server: { port },
        relay: { api_keys: [RELAY_KEY], worker: true, poll_interval: '10ms' },
        crm: { integration: { transport: 'rabbitmq', rabbitmq: { url: BROKER, exchange, routing_key: 'crm.events' } } },
      }),
      {},
    );
    const before = handles();
    const publishedBefore = published;
    const fault = new Error(`made to fail after ${part}`);
    const start = startGateway(config, {
      logger: pino({ level: 'silent' }),
      async afterStart(started) {
        if (started !== part) return;
        // The broker connection is open (the event went out on it) when the start-up fails.
        if (AFTER_OUTBOXES.has(part)) await waitFor(() => published > publishedBefore, 10_000, 'the event published');
        throw fault;
      },
    });
    await expect(start).rejects.toBe(fault);
    expect(await portIsFree(port)).toBe(true);
    // Sockets close a turn or two after their close is asked for.
    await waitFor(() => leftBehind(before).length === 0, 3_000, 'the handles released').catch(() => undefined);
    expect(leftBehind(before)).toEqual([]);
  });
});
