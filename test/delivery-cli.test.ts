import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeCrm } from './fakes/crm.js';
import { runCli, startServe, writeConfig } from './helpers/child.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { smsMessage, TEST_ADMIN_KEY, TEST_API_KEY, testConfigDocument, waitFor } from './helpers/gateway.js';

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
