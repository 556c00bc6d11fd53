/**
 * `server.workers: 2` (src/cluster.ts): two gateway processes on one port. Messages are sent once and their
 * conversions posted once, /metrics on either worker counts both, a killed worker is replaced, and SIGTERM stops
 * the whole cluster cleanly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childPids } from '../bench/server-process.js';
import { shareOfLimit } from '../src/cluster.js';
import { FakeCrm } from './fakes/crm.js';
import { runCli, startServe, writeConfig } from './helpers/child.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { smsMessage, TEST_ADMIN_KEY, TEST_API_KEY, testConfigDocument, waitFor } from './helpers/gateway.js';
import { parsePrometheusText, valueOf } from './helpers/prometheus.js';

let dir: string;
let database: TestDatabase;
let serve: Awaited<ReturnType<typeof startServe>>;
let client: Pool;
const crm = new FakeCrm();

const logLines = () =>
  serve
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; cluster_worker?: number; level: number });

/** The primary's worker processes. */
const workerPids = () => childPids(serve.child.pid!);

async function send(id: string, k: number) {
  const res = await client.request({
    method: 'POST',
    path: '/channels/sms/single',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
    body: JSON.stringify(smsMessage(id, { recipient: `+4477009${String(10_000 + k).slice(-5)}`.replace(/000[1-5]$/, '0009') })),
  });
  return { status: res.statusCode, body: (await res.body.json()) as { sms_id?: string } };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-cluster-'));
  database = await createTestDatabase(dir);
  await crm.start();
  const file = writeConfig(
    dir,
    testConfigDocument(dir, {
      database: { url: database.url },
      server: { host: '127.0.0.1', port: 0, workers: 2 },
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms' },
      // No receipt_secret: the workers sign and check receipts with the cluster's shared random key, so a receipt
      // one worker's sandbox posts is accepted by whichever worker the connection lands on.
      providers: { sandbox: { type: 'sandbox', dlr_delay_ms: 50, receipt_secret: undefined } },
      // debug: each `sms dispatched` line names the worker that sent it.
      log: { level: 'debug' },
    }),
  );
  serve = await startServe(file);
  await waitFor(() => logLines().filter((l) => l.msg === 'gateway listening').length === 2, 15_000, 'both workers listening');
  client = new Pool(serve.url, { connections: 8 });
}, 30_000);

afterAll(async () => {
  if (client && !client.closed) await client.close();
  serve?.child.kill('SIGKILL');
  for (const pid of serve ? workerPids() : []) process.kill(pid, 'SIGKILL');
  await crm.stop();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('server.workers: 2', () => {
  it('sends through both workers, once per activity id, and posts each conversion once', async () => {
    const ids = Array.from({ length: 200 }, (_, k) => `cluster-${k}`);
    const answers = await Promise.all(ids.map((id, k) => send(id, k)));
    expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
    // A retry of every id, now that they are known, answers the same sms_id from whichever worker gets it.
    const retries = await Promise.all(ids.map((id, k) => send(id, k)));
    expect(retries.map((r) => r.body.sms_id)).toEqual(answers.map((a) => a.body.sms_id));

    const senders = new Set(
      logLines()
        .filter((l) => l.msg === 'sms dispatched')
        .map((l) => l.cluster_worker),
    );
    expect([...senders].sort()).toEqual([0, 1]);

    await waitFor(() => new Set(crm.conversions.map((c) => c.sms_id)).size === ids.length, 20_000, 'every conversion at the CRM');
    expect(crm.conversions).toHaveLength(ids.length);
  });

  it('answers /metrics on any worker with the counts of both', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await client.request({ method: 'GET', path: '/metrics', headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
      expect(res.statusCode).toBe(200);
      const metrics = parsePrometheusText(await res.body.text());
      expect(valueOf(metrics, 'sms_gateway_messages_sent_total', { provider: 'sandbox', outcome: 'submitted' })).toBe(200);
      // A figure read from the shared database is reported once, not once per worker.
      expect(valueOf(metrics, 'sms_gateway_conversion_outbox', { state: 'due' })).toBe(0);
    }
  });

  it('replaces a worker that dies and keeps serving', async () => {
    const [victim] = workerPids();
    process.kill(victim!, 'SIGKILL');
    await waitFor(() => logLines().some((l) => l.msg === 'worker exited; starting a new one'), 10_000, 'the primary noticing');
    await waitFor(() => logLines().filter((l) => l.msg === 'gateway listening').length === 3, 15_000, 'the new worker listening');
    expect(workerPids()).toHaveLength(2);
    const after = await Promise.all(Array.from({ length: 20 }, (_, k) => send(`cluster-after-${k}`, 500 + k)));
    expect(after.map((a) => a.status)).toEqual(after.map(() => 200));
  });

  it('stops every worker and exits 0 on SIGTERM', async () => {
    await client.close();
    const exited = new Promise<number | null>((resolve) => serve.child.once('exit', (code) => resolve(code)));
    serve.child.kill('SIGTERM');
    // On a failure, the log says which step of the shutdown a worker was still in.
    expect(await exited, serve.output().slice(-4_000)).toBe(0);
    expect(workerPids()).toEqual([]);
  });
});

describe('a worker that cannot start', () => {
  it('stops the cluster with exit code 1 instead of restarting it in a loop', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    const failDir = mkdtempSync(join(tmpdir(), 'crm-sms-cluster-fail-'));
    try {
      const file = writeConfig(
        failDir,
        testConfigDocument(failDir, {
          database: { url: `sqlite:${join(failDir, 'ledger.db')}` },
          server: { host: '127.0.0.1', port, workers: 2 },
          log: { level: 'info' },
        }),
      );
      const result = await runCli(['serve', '--config', file]);
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).toContain('worker failed to start; stopping the gateway');
    } finally {
      taken.close();
      rmSync(failDir, { recursive: true, force: true });
    }
  }, 20_000);
});

describe('shareOfLimit', () => {
  it.each([
    ['no limit', undefined, { index: 0, count: 2 }, undefined],
    ['alone', 100, undefined, 100],
    ['rate split in two', 100, { index: 1, count: 2 }, 50],
    ['uneven split keeps the fraction', 10, { index: 0, count: 4 }, 2.5],
    ['never below one', 1, { index: 2, count: 3 }, 1],
  ])('%s', (_label, limit, role, expected) => {
    expect(shareOfLimit(limit, role)).toBe(expected);
  });
});
