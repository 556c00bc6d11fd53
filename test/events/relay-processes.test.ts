/**
 * The relay as operators run it: the real CLI in child processes on one database (PostgreSQL under
 * TEST_DATABASE_URL, else one SQLite file). An event accepted (202) survives SIGKILL before its delivery, and two
 * instances plus a cron flush deliver every event once, each user's in the order accepted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLedger } from '../../src/ledger/engine/db.js';
import amqp, { type ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { FakeKafkaBroker } from '../fakes/kafka.js';
import { runCli, startServe, writeConfig } from '../helpers/child.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { bonusEvent, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { testConfigDocument, waitFor } from '../helpers/gateway.js';

let dir: string;
let database: TestDatabase;
const crm = new FakeIntegrationApi();
const children: Array<Awaited<ReturnType<typeof startServe>>> = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crm-relay-proc-'));
  database = await createTestDatabase(dir);
  await crm.start();
});

afterAll(async () => {
  for (const c of children) c.child.kill('SIGKILL');
  await crm.stop();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

function configFile(name: string, integration: Record<string, unknown> = { url: crm.url }, lease = '3s') {
  return writeConfig(
    dir,
    testConfigDocument(dir, {
      database: { url: database.url },
      // A claim the killed process held is taken over after relay.lease; kept short here, above the send timeout.
      relay: { api_keys: [RELAY_KEY], poll_interval: '20ms', retry_initial_ms: 50, retry_max_ms: 200, batch_size: 200, lease },
      crm: { integration: { timeout: '2s', ...integration } },
      log: { level: 'info' },
    }),
    name,
  );
}

async function post(pool: Pool, path: string, body: unknown): Promise<{ status: number; eventId: string }> {
  const res = await pool.request({ method: 'POST', path, headers: { 'content-type': 'application/json', 'x-api-key': RELAY_KEY }, body: JSON.stringify(body) });
  const json = (await res.body.json()) as { event_id: string };
  return { status: res.statusCode, eventId: json.event_id };
}

/** Outbox ids of every event in acceptance order, per user, read from the database itself. */
async function acceptanceOrder(): Promise<Map<string, string[]>> {
  const ledger = openLedger({ url: database.url, sqlite_synchronous: 'normal', pool_size: 2 });
  try {
    const rows = await ledger.db.selectFrom('crm_events').select(['user_id', 'event_id']).orderBy('id').execute();
    const byUser = new Map<string, string[]>();
    for (const r of rows) byUser.set(r.user_id, [...(byUser.get(r.user_id) ?? []), r.event_id]);
    return byUser;
  } finally {
    await ledger.close();
  }
}

function expectEachOnceInOrder(order: Map<string, string[]>) {
  const counts = new Map<string, number>();
  for (const r of crm.accepted) counts.set(r.eventId, (counts.get(r.eventId) ?? 0) + 1);
  expect([...counts.entries()].filter(([, n]) => n > 1)).toEqual([]);
  for (const [user, ids] of order)
    expect(
      crm.accepted.filter((r) => r.body.user_id === user).map((r) => r.eventId),
      user,
    ).toEqual(ids);
}

describe('the relay across processes', () => {
  it('delivers every event accepted before a SIGKILL, once, after the restart', async () => {
    await crm.stop();
    const file = configFile('kill.yaml');
    const first = await startServe(file);
    children.push(first);
    const pool = new Pool(first.url, { connections: 8 });
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async (_, u) => {
        for (let n = 0; n < 10; n++) {
          const res = await post(pool, '/relay/v1/integration/bonus', bonusEvent(`kill-${u}`, `kill-ub-${u}-${n}`, 'Created'));
          expect(res.status).toBe(202);
          ids.push(res.eventId);
        }
      }),
    );
    await pool.close();
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    await crm.start();
    const second = await startServe(file);
    children.push(second);
    await waitFor(() => ids.every((id) => crm.accepted.some((r) => r.eventId === id)), 20_000, 'all 100 events after the restart');
    expectEachOnceInOrder(await acceptanceOrder());
    second.child.kill('SIGTERM');
    await new Promise((resolve) => second.child.once('exit', resolve));
  }, 60_000);

  it('two instances and a cron flush deliver each event once, in per-user order', async () => {
    crm.accepted.length = 0;
    const file = configFile('multi.yaml');
    const a = await startServe(file);
    const b = await startServe(file);
    children.push(a, b);
    const pools = [new Pool(a.url, { connections: 8 }), new Pool(b.url, { connections: 8 })];
    let accepting = true;
    const flushes = (async () => {
      const results: Array<Awaited<ReturnType<typeof runCli>>> = [];
      while (accepting) results.push(await runCli(['flush', '--config', file]));
      return results;
    })();
    const ids: string[] = [];
    // 40 users, 15 events each, every event of a user alternating between the two instances.
    await Promise.all(
      Array.from({ length: 40 }, async (_, u) => {
        for (let n = 0; n < 15; n++) {
          const res = await post(pools[n % 2]!, '/relay/v1/integration/custom', thinEvent(`multi-${u}`, { notification_type: 'step', data: { n: String(n) } }));
          expect(res.status).toBe(202);
          ids.push(res.eventId);
        }
      }),
    );
    accepting = false;
    for (const f of await flushes) expect(f.code, f.stdout + f.stderr).toBe(0);
    await Promise.all(pools.map((p) => p.close()));
    await waitFor(() => new Set(crm.accepted.map((r) => r.eventId)).size >= ids.length, 30_000, 'all 600 events');
    const order = await acceptanceOrder();
    expectEachOnceInOrder(new Map([...order].filter(([user]) => user.startsWith('multi-'))));
    expect(crm.accepted.filter((r) => r.body.user_id.startsWith('multi-'))).toHaveLength(600);
    // The instances go, so the tests after this one have the database to themselves.
    for (const c of [a, b]) c.child.kill('SIGTERM');
    await Promise.all([a, b].map((c) => new Promise((resolve) => (c.child.exitCode === null ? c.child.once('exit', resolve) : resolve(null)))));
  }, 90_000);

  /** Accepts 10 events of each of 10 users on a fresh `serve`, SIGKILLs it, and answers the event ids in order per user. */
  async function acceptThenKill(file: string, prefix: string): Promise<Map<string, string[]>> {
    const first = await startServe(file);
    children.push(first);
    const pool = new Pool(first.url, { connections: 8 });
    const byUser = new Map<string, string[]>();
    await Promise.all(
      Array.from({ length: 10 }, async (_, u) => {
        const ids: string[] = [];
        byUser.set(`${prefix}-${u}`, ids);
        for (let n = 0; n < 10; n++) {
          const res = await post(pool, '/relay/v1/integration/payment', {
            user_id: `${prefix}-${u}`,
            timestamp: '2026-11-25T10:00:00Z',
            origin: 'o',
            amount: n,
            currency: 'USDT',
            payment_id: n,
            vendor_id: 'v',
            status: 'Approved',
            type: 'Credit',
          });
          expect(res.status).toBe(202);
          ids.push(res.eventId);
        }
      }),
    );
    await pool.close();
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    return byUser;
  }

  it('RabbitMQ: every event accepted before a SIGKILL (broker refusing: no exchange yet) is published once, in order, after the restart', async () => {
    const url = process.env.TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
    const exchange = `crm-kill-${randomUUID()}`;
    const file = configFile('kill-rabbit.yaml', { transport: 'rabbitmq', rabbitmq: { url, exchange, routing_key: 'k' } });
    const expected = await acceptThenKill(file, 'rkill');
    const connection = await amqp.connect(url);
    const channel = await connection.createChannel();
    const received: ConsumeMessage[] = [];
    try {
      await channel.assertExchange(exchange, 'direct', { durable: false });
      const { queue } = await channel.assertQueue('', { exclusive: true });
      await channel.bindQueue(queue, exchange, 'k');
      await channel.consume(queue, (m) => m && received.push(m), { noAck: true });
      const second = await startServe(file);
      children.push(second);
      await waitFor(() => received.length >= 100, 30_000, 'all 100 messages after the restart');
      await new Promise((r) => setTimeout(r, 300));
      expect(received).toHaveLength(100);
      for (const [user, ids] of expected) {
        expect(
          received.filter((m) => JSON.parse(m.content.toString()).user_id === user).map((m) => m.properties.messageId),
          user,
        ).toEqual(ids);
      }
      second.child.kill('SIGTERM');
      await new Promise((resolve) => second.child.once('exit', resolve));
    } finally {
      await channel.deleteExchange(exchange).catch(() => {});
      await connection.close();
    }
  }, 60_000);

  it('Kafka: every event accepted before a SIGKILL (broker down) is published once, in order, after the restart', async () => {
    const broker = new FakeKafkaBroker({ 'crm-kill': 3 });
    await broker.start();
    await broker.stop();
    const file = configFile('kill-kafka.yaml', { transport: 'kafka', kafka: { brokers: [broker.broker], topic: 'crm-kill' } }, '8s');
    const expected = await acceptThenKill(file, 'kkill');
    await broker.start();
    try {
      const second = await startServe(file);
      children.push(second);
      await waitFor(() => broker.records.length >= 100, 30_000, 'all 100 records after the restart');
      await new Promise((r) => setTimeout(r, 300));
      expect(broker.records).toHaveLength(100);
      for (const [user, ids] of expected)
        expect(
          broker.records.filter((r) => r.key === user).map((r) => r.headers.event_id),
          user,
        ).toEqual(ids);
      expect(broker.records.every((r) => r.headers.type === 'PAYMENT')).toBe(true);
      second.child.kill('SIGTERM');
      await new Promise((resolve) => second.child.once('exit', resolve));
    } finally {
      await broker.stop();
    }
  }, 60_000);
});
