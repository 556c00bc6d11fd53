/**
 * Several gateway instances on one database (PostgreSQL in CI's second run, one SQLite file in the first):
 * two `serve` processes behind a round-robin balancer for receipts, and a concurrent cron `flush`. Everything
 * that must happen once happens once: each activity.id is sent once, each conversion reaches the CRM once.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLedger } from '../../src/ledger/engine/db.js';
import { FakeCrm } from '../fakes/crm.js';
import { runCli, startServe, writeConfig } from '../helpers/child.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { smsMessage, TEST_API_KEY, testConfigDocument, waitFor } from '../helpers/gateway.js';

const MESSAGES = 2_000;
let dir: string;
let database: TestDatabase;
let balancer: Server;
const crm = new FakeCrm();
const instances: Array<Awaited<ReturnType<typeof startServe>>> = [];

/** Forwards each request to the next instance in turn, as a load balancer in front of the gateways would. */
function startBalancer(targets: () => string[]): Promise<string> {
  let next = 0;
  const pools = new Map<string, Pool>();
  balancer = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const list = targets();
    const target = list[next++ % list.length]!;
    const pool = pools.get(target) ?? pools.set(target, new Pool(target, { connections: 8 })).get(target)!;
    const upstream = await pool.request({
      method: req.method as 'POST',
      path: req.url!,
      headers: { 'content-type': req.headers['content-type'] ?? '', 'x-sandbox-signature': String(req.headers['x-sandbox-signature'] ?? '') },
      body: Buffer.concat(chunks),
    });
    res.writeHead(upstream.statusCode, { 'content-type': 'application/json' });
    res.end(Buffer.from(await upstream.body.arrayBuffer()));
  });
  return new Promise((resolve) => balancer.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(balancer.address() as AddressInfo).port}`)));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-multi-'));
  database = await createTestDatabase(dir);
  await crm.start();
  const balancerUrl = await startBalancer(() => instances.map((i) => i.url));
  const file = writeConfig(
    dir,
    testConfigDocument(dir, {
      database: { url: database.url },
      server: { host: '127.0.0.1', port: 0, public_url: balancerUrl },
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', batch_size: 100 },
      providers: { sandbox: { type: 'sandbox', dlr_delay_ms: 50 } },
      log: { level: 'info' },
    }),
  );
  instances.push(await startServe(file), await startServe(file));
}, 60_000);

afterAll(async () => {
  for (const i of instances) i.child.kill('SIGKILL');
  await new Promise((resolve) => balancer?.close(resolve));
  await crm.stop();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('two instances and a cron flush on one database', () => {
  it('send each message once and post each conversion once, with retries of the same ids to either instance', async () => {
    const file = join(dir, 'config.yaml');
    const clients = instances.map((i) => new Pool(i.url, { connections: 16 }));
    const send = async (instance: number, id: string, k: number) => {
      const res = await clients[instance]!.request({
        method: 'POST',
        path: '/channels/sms/single',
        headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
        body: JSON.stringify(smsMessage(id, { recipient: `+4477009${String(20_000 + k).slice(-5)}`.replace(/000[1-5]$/, '0009') })),
      });
      return { status: res.statusCode, body: (await res.body.json()) as { sms_id?: string; error?: string } };
    };

    // Cron keeps flushing while both instances' workers post too.
    let sending = true;
    const flushing = (async () => {
      const results: Array<Awaited<ReturnType<typeof runCli>>> = [];
      while (sending) results.push(await runCli(['flush', '--config', file]));
      return results;
    })();
    const smsIdByActivity = new Map<string, Set<string>>();
    let k = 0;
    const worker = async () => {
      while (k < MESSAGES) {
        const n = k++;
        const id = `multi-${n}`;
        // Every fifth id is sent to both instances at once, the way a CRM retry after a timeout might land.
        const attempts = n % 5 === 0 ? [send(n % 2, id, n), send((n + 1) % 2, id, n)] : [send(n % 2, id, n)];
        for (const { status, body } of await Promise.all(attempts)) {
          // A concurrent duplicate on the other instance may be told to retry (503); the CRM would retry.
          if (status === 503) continue;
          expect(status, JSON.stringify(body)).toBe(200);
          const ids = smsIdByActivity.get(id) ?? smsIdByActivity.set(id, new Set()).get(id)!;
          ids.add(body.sms_id!);
        }
        if (!smsIdByActivity.has(id)) {
          const retry = await send((n + 1) % 2, id, n);
          expect(retry.status).toBe(200);
          smsIdByActivity.set(id, new Set([retry.body.sms_id!]));
        }
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    sending = false;
    const flushResults = await flushing;
    expect(flushResults.length).toBeGreaterThan(0);
    for (const f of flushResults) expect(f.code, f.stdout + f.stderr).toBe(0);
    await Promise.all(clients.map((c) => c.close()));

    expect(smsIdByActivity.size).toBe(MESSAGES);
    for (const [id, smsIds] of smsIdByActivity) expect(smsIds.size, id).toBe(1);
    const smsIds = [...smsIdByActivity.values()].map((s) => [...s][0]!);

    await waitFor(() => new Set(crm.conversions.map((c) => c.sms_id)).size === MESSAGES, 90_000, 'every conversion at the CRM');
    const posted = new Map<string, number>();
    for (const c of crm.conversions) posted.set(c.sms_id, (posted.get(c.sms_id) ?? 0) + 1);
    expect([...posted.values()].filter((n) => n > 1)).toEqual([]);
    expect(smsIds.every((id) => posted.get(id) === 1)).toBe(true);

    // Sent exactly once: one provider message id per sms_id, and no message needed a second attempt.
    const ledger = openLedger({ url: database.url, sqlite_synchronous: 'normal', pool_size: 2 });
    try {
      const attempts = await ledger.db.selectFrom('messages').select(['sms_id', 'attempts']).where('attempts', '!=', 1).execute();
      expect(attempts).toEqual([]);
      const receipts = await ledger.db
        .selectFrom('receipts')
        .select(['sms_id', (eb) => eb.fn.count<number>('provider_message_id').distinct().as('sends')])
        .groupBy('sms_id')
        .execute();
      expect(receipts).toHaveLength(MESSAGES);
      expect(receipts.filter((r) => Number(r.sends) !== 1)).toEqual([]);
    } finally {
      await ledger.close();
    }
  }, 180_000);
});
