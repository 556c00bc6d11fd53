import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { runCli, startServe, writeConfig } from '../helpers/child.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { smsMessage, TEST_ADMIN_KEY, TEST_API_KEY, testConfigDocument, waitFor } from '../helpers/gateway.js';

let dir: string;
let crm: FakeCrm;
let database: TestDatabase;
const children: Array<{ kill: (signal?: NodeJS.Signals) => boolean }> = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-cli-'));
  database = await createTestDatabase(dir);
  crm = await new FakeCrm().start();
});
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await crm.stop();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

function config(overrides: Record<string, unknown>) {
  return writeConfig(
    dir,
    testConfigDocument(dir, {
      database: { url: database.url },
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      log: { level: 'info' },
      ...overrides,
    }),
  );
}

async function send(url: string, id: string) {
  const res = await fetch(`${url}/channels/sms/single`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
    body: JSON.stringify(smsMessage(id)),
  });
  return ((await res.json()) as { sms_id: string }).sms_id;
}

async function conversionsQueued(url: string, smsId: string): Promise<number> {
  const res = await fetch(`${url}/admin/messages/${smsId}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
  return ((await res.json()) as { conversions: unknown[] }).conversions.length;
}

describe('crm-sms-gateway flush (cron)', () => {
  it('exits 1 while the webhook is unreachable, then posts everything once and exits 0', async () => {
    const file = config({ delivery: { worker: false, retry_initial_ms: 1, retry_max_ms: 1 } });
    const serve = await startServe(file);
    children.push(serve.child);
    const smsIds = [await send(serve.url, 'cron-1'), await send(serve.url, 'cron-2')];
    await waitFor(async () => (await Promise.all(smsIds.map((id) => conversionsQueued(serve.url, id)))).every((n) => n === 1));

    await crm.stop();
    const down = await runCli(['flush', '--config', file]);
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/posted=0 failed=2 dead=0 left=2 .*webhook unreachable/);

    await crm.start();
    const [first, second] = await Promise.all([runCli(['flush', '--config', file]), runCli(['flush', '--config', file])]);
    expect([first.code, second.code]).toEqual([0, 0]);
    expect(crm.conversions.map((c) => c.sms_id).sort()).toEqual([...smsIds].sort());

    const again = await runCli(['flush', '--config', file]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/posted=0 failed=0 dead=0 left=0/);
  }, 120_000);

  it('pushes due credits to operator.credits.url once, and says so on its own line', async () => {
    const pushes: Array<{ key: string | undefined; body: { credit_id: string } }> = [];
    const wallet = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      pushes.push({ key: req.headers['idempotency-key'] as string | undefined, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    wallet.listen(0, '127.0.0.1');
    await once(wallet, 'listening');
    try {
      // serve pushes to a port nobody listens on, so the credit stays due; flush is configured with the wallet.
      const credits = (url: string) => ({ url, retry_initial_ms: 1, retry_max_ms: 1, max_attempts: 1_000 });
      const serve = await startServe(config({ operator: { credits: credits('http://127.0.0.1:9/nobody') } }));
      children.push(serve.child);
      const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' };
      expect((await fetch(`${serve.url}/admin/users/cron-w`, { method: 'PUT', headers: admin, body: JSON.stringify(sampleUser('cron-w')) })).status).toBe(201);
      const bonuses = [{ text: 'CASH', value: 'CASH10' }];
      expect((await fetch(`${serve.url}/admin/bonuses`, { method: 'PUT', headers: admin, body: JSON.stringify(bonuses) })).status).toBe(200);
      const credit = await fetch(`${serve.url}/bonus/credit/funds`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
        body: JSON.stringify({ user_id: 'cron-w', bonus_code: 'CASH10', amount: 5, currency: 'EUR', validity_amount: 7 }),
      });
      expect(credit.status).toBe(200);
      const creditId = ((await credit.json()) as { credit_id: string }).credit_id;
      serve.child.kill('SIGKILL');
      await new Promise((resolve) => serve.child.once('exit', resolve));

      const { port } = wallet.address() as AddressInfo;
      const file = config({ operator: { credits: credits(`http://127.0.0.1:${port}/wallet`) } });
      const first = await runCli(['flush', '--config', file]);
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(/flush credits: delivered=1 failed=0 dead=0 left=0 dead_total=0/);
      expect(pushes).toEqual([{ key: creditId, body: expect.objectContaining({ credit_id: creditId }) }]);
      const again = await runCli(['flush', '--config', file]);
      expect(again.stdout).toMatch(/flush credits: delivered=0 /);
      expect(pushes).toHaveLength(1);
    } finally {
      await new Promise<void>((resolve) => wallet.close(() => resolve()));
    }
  }, 120_000);

  it('refuses to run without crm.webhook_url, naming the key', async () => {
    const file = config({ crm: { webhook_url: undefined } });
    const result = await runCli(['flush', '--config', file]);
    expect(result.code).toBe(78);
    expect(result.stderr).toMatch(/crm\.webhook_url/);
  });
});

describe('a crash between a receipt and its post', () => {
  // A claim held by the killed process is released when its lease ends (1s here), then the new process posts.
  it('still posts the conversion after serve is killed with SIGKILL and restarted', async () => {
    const file = config({ delivery: { poll_interval: '20ms', retry_initial_ms: 10, retry_max_ms: 50, max_attempts: 100_000, lease: '1s' } });
    await crm.stop();
    const first = await startServe(file);
    children.push(first.child);
    const smsId = await send(first.url, 'crash-1');
    await waitFor(async () => (await conversionsQueued(first.url, smsId)) === 1);
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));

    await crm.start();
    const second = await startServe(file);
    children.push(second.child);
    await waitFor(() => crm.conversions.length > 0);
    expect(crm.conversions).toMatchObject([{ sms_id: smsId, delivery_status: 'delivered' }]);
  }, 120_000);
});
