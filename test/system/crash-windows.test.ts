/**
 * The crash windows of docs/crash-windows.md, with real processes killed by SIGKILL against the
 * wire fakes: `serve` killed mid-batch (some sends answered, some created at Twilio but not yet answered, some never
 * handed over), `flush` killed while the CRM holds its post, and `serve` killed while it pushes credits. Counted at
 * the fakes: messages created at the provider, conversions received by the CRM, credits received by the operator's
 * wallet, and the Idempotency-Key each came with.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm, type Conversion } from '../fakes/crm.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { CLI, runCli, startServe, writeConfig } from '../helpers/child.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { dropTestDatabase, testDatabaseUrl } from '../helpers/database.js';
import { runSendCrash } from '../../bench/send-crash.js';
import { openLedger } from '../../src/ledger/engine/db.js';
import { smsMessage, startTestGateway, testConfigDocument, TEST_API_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
const dirs: string[] = [];
let gw: TestGateway | undefined;

beforeAll(async () => {
  await crm.start();
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  crm.reset();
});
afterAll(async () => {
  await crm.stop();
  for (const dir of dirs) {
    await dropTestDatabase(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-crash-'));
  dirs.push(dir);
  return dir;
}

/** Every conversion the CRM got more than once came each time in a post with the same Idempotency-Key. */
function duplicatesShareTheirKey(): { duplicates: number } {
  const keys = new Map<string, Set<string | undefined>>();
  for (const r of crm.requests) {
    for (const c of r.body) {
      const id = `${c.sms_id}|${c.delivery_status}`;
      keys.set(id, (keys.get(id) ?? new Set()).add(r.idempotencyKey));
    }
  }
  for (const [id, set] of keys) expect({ id, keys: set.size }).toEqual({ id, keys: 1 });
  const received = crm.conversions.length;
  return { duplicates: received - keys.size };
}

describe('serve killed with SIGKILL mid-batch (Twilio, whose API can tell)', () => {
  let twilio: TwilioFake;
  beforeAll(async () => {
    // Each create is answered 300 ms after Twilio made the message, eight at a time: a kill leaves some answered,
    // some made but unanswered, some never handed over. Each message is called back `delivered` after its answer.
    twilio = await startTwilioFake({ answerDelayMs: 300, callbackStatuses: ['delivered'], callbackRetryDelayMs: 50 });
  });
  afterAll(() => twilio.close());

  it('creates no message twice at the provider after the restart, and every conversion arrives', async () => {
    const dir = newDir();
    const config = {
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      sms: { dispatch_lease: '5m', ambiguous_retry_after: '60s', send_timeout: '10s', batch_deadline: '60s' },
      delivery: { poll_interval: '20ms', sweep_interval: '1h', status_query_after: '1h', lease: '1s' },
      providers: {
        twilio: {
          type: 'twilio',
          account_sid: twilio.accountSid,
          auth_token: twilio.authToken,
          from: '+15005550006',
          base_url: twilio.url,
          max_concurrency: 8,
        },
      },
    };
    const batch = Array.from({ length: 40 }, (_, i) =>
      smsMessage(`crash-batch-${i}`, { provider_name: 'twilio', recipient: `+4477009${String(10_000 + i).slice(1)}`, sender_name: null }),
    );
    const serve = await startServe(writeConfig(dir, { ...testConfigDocument(dir, config), log: { level: 'info' } }));
    const pending = fetch(`${serve.url}/channels/sms/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
      body: JSON.stringify(batch),
    }).catch(() => undefined);
    await waitFor(() => twilio.creates.length >= 12, 20_000, 'the batch under way at the provider');
    serve.child.kill('SIGKILL');
    await once(serve.child, 'exit');
    await pending;
    const createdBeforeKill = twilio.creates.filter((c) => c.sid).length;
    expect(createdBeforeKill).toBeGreaterThan(0);
    expect(createdBeforeKill).toBeLessThan(batch.length);

    let time = Date.now();
    gw = await startTestGateway(config, { dir, now: () => time });
    // The CRM retries at once: nothing still within its lease is sent again.
    const early = await gw.post('/channels/sms/batch', batch);
    expect(early.status).toBe(200);
    expect(twilio.creates.filter((c) => c.sid).length).toBe(createdBeforeKill);

    time += 5 * 60_000 + 1_000;
    const swept = await gw.gateway.sweep();
    // Every lost send was looked up: the ones Twilio made are found, the others absent; none stays unknown.
    expect(swept.lookups.unknown).toBe(0);
    expect(swept.lookups.found).toBeGreaterThan(0);
    expect(swept.lookups.absent).toBeGreaterThan(0);
    expect(swept.lookups.found + swept.lookups.absent).toBe(swept.leasesExpired);

    const retry = await gw.post('/channels/sms/batch', batch);
    expect(retry.status).toBe(200);
    expect(retry.json.successful).toHaveLength(batch.length);
    // Once per recipient at the provider, the kill and the CRM's two retries notwithstanding.
    await waitFor(() => twilio.creates.filter((c) => c.sid).length === batch.length, 20_000, 'the absent sends sent');
    for (const m of batch)
      expect({ to: m.recipient, created: twilio.creates.filter((c) => c.sid && c.form.To === m.recipient).length }).toEqual({ to: m.recipient, created: 1 });

    // Callbacks that hit the dead process are asked for after delivery.status_query_after.
    time += 60 * 60_000 + 1_000;
    await gw.gateway.sweep();
    const smsIds = (retry.json.successful as Array<{ sms_id: string }>).map((s) => s.sms_id);
    await waitFor(() => smsIds.every((id) => crm.conversions.some((c: Conversion) => c.sms_id === id)), 20_000, 'every conversion');
    for (const c of crm.conversions.filter((c) => smsIds.includes(c.sms_id))) expect(c.delivery_status).toBe('delivered');
    duplicatesShareTheirKey();
  }, 120_000);
});

describe('two instances on one ledger, one killed with SIGKILL three times while sending, the CRM retrying on the other', () => {
  // An outside review's method for sends after a crash, smaller (bench/send-crash.ts runs 5,000 activities, also with the
  // default lease): a retry that reaches the other instance after the killed one's lease must ask Twilio first.
  it('makes each message once at Twilio: none twice, none lost, each activity answered with one sms_id', async () => {
    const dir = newDir();
    const result = await runSendCrash({ activities: 400, kills: 3, lease: '3s', answerMs: 300, concurrency: 32, ledgerUrl: testDatabaseUrl(dir), cli: CLI });
    expect(result).toMatchObject({ activities: 400, sent_once: 400, sent_twice: 0, lost: 0, sms_ids_differ: 0 });
    // Some retries came after a killed instance's lease, before any sweep (delivery.sweep_interval 1m): they asked.
    expect(result.lookups).toBeGreaterThan(0);
  }, 180_000);
});

describe('flush killed with SIGKILL while the CRM holds its post', () => {
  it('posts every conversion after the restart; the repeated post carries the same Idempotency-Key', async () => {
    const dir = newDir();
    const config = {
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { worker: false, batch_size: 50, lease: '1s', retry_initial_ms: 10, retry_max_ms: 50 },
    };
    // 300 conversions queued by the sandbox's receipts, with no worker to post them.
    gw = await startTestGateway(config, { dir });
    for (let b = 0; b < 3; b++) {
      const res = await gw.post(
        '/channels/sms/batch',
        Array.from({ length: 100 }, (_, i) => smsMessage(`flush-crash-${b * 100 + i}`)),
      );
      expect(res.json.successful).toHaveLength(100);
    }
    const db = gw.gateway.ledger.db;
    await waitFor(
      async () =>
        Number(
          (
            await db
              .selectFrom('conversions')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        ) === 300,
      20_000,
      '300 conversions queued',
    );
    await gw.close();
    gw = undefined;

    const file = writeConfig(dir, testConfigDocument(dir, config));
    crm.answerDelayMs = 30_000;
    const flush = spawn(process.execPath, [CLI, 'flush', '--config', file], { stdio: 'ignore' });
    await waitFor(() => crm.requests.length === 1, 20_000, 'the first post taken by the CRM');
    flush.kill('SIGKILL');
    await once(flush, 'exit');
    const heldKey = crm.requests[0]!.idempotencyKey;
    expect(heldKey).toMatch(/^conv-[A-Za-z0-9_-]{32}$/);

    crm.answerDelayMs = 0;
    // The killed flush's claim lasts delivery.lease (1 s): cron runs flush again until the held rows are posted too.
    await waitFor(
      async () => {
        const again = await runCli(['flush', '--config', file]);
        expect(again.code).toBe(0);
        return new Set(crm.conversions.map((c) => c.sms_id)).size === 300;
      },
      30_000,
      'every conversion posted',
    );
    const all = new Set(crm.conversions.map((c) => c.sms_id));
    expect(all.size).toBe(300);
    const { duplicates } = duplicatesShareTheirKey();
    // At most the post the kill interrupted came twice, under its key (on SQLite it does, exactly; on PostgreSQL
    // the repeat was not seen in the one run made so far: to be understood).
    expect(duplicates).toBeLessThanOrEqual(50);
    if (duplicates > 0) expect(crm.requests.filter((r) => r.idempotencyKey === heldKey)).toHaveLength(2);
  }, 120_000);
});

describe('serve killed with SIGKILL while it pushes credits (sql backend)', () => {
  it('repeats at most one push per kill, under its Idempotency-Key, and delivers every credit', async () => {
    const CREDITS = 240;
    const KILLS = 3;
    // The operator's wallet: counts each push by its Idempotency-Key (the credit_id), and answers after 5 ms.
    const pushes = new Map<string, number>();
    const wallet = createServer(async (req, res) => {
      for await (const _ of req);
      const key = String(req.headers['idempotency-key']);
      pushes.set(key, (pushes.get(key) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 5));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    wallet.listen(0, '127.0.0.1');
    await once(wallet, 'listening');
    try {
      const dir = newDir();
      // The credits are committed first, with no wallet to push them to (each is `due`).
      gw = await startTestGateway({}, { dir });
      await gw.adminPut('/admin/bonuses', [{ text: 'FS50: Fifty spins', value: 'FS50' }]);
      for (let u = 0; u < 8; u++) expect((await gw.adminPut(`/admin/users/crash-${u}`, sampleUser(`crash-${u}`))).status).toBe(201);
      for (let i = 0; i < CREDITS; i += 20) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, j) =>
            gw!.post('/bonus/credit', { user_id: `crash-${(i + j) % 8}`, bonus_code: 'FS50' }, { 'X-Crm-Activityid': String(i + j), 'X-Crm-Actionid': '1' }),
          ),
        );
        for (const a of answers) expect(a.status).toBe(200);
      }
      await gw.close();
      gw = undefined;

      const url = `http://127.0.0.1:${(wallet.address() as AddressInfo).port}/wallet/credits`;
      const file = writeConfig(
        dir,
        testConfigDocument(dir, {
          // A timeout this machine's load does not reach (400 ms was, under a loaded CI, and its push went again as any
          // unanswered push does), with a lease above twice it as the configuration requires.
          operator: { credits: { url, lease: '4s', timeout: '1500ms', poll_interval: '20ms', retry_initial_ms: 10, retry_max_ms: 50 } },
          log: { level: 'info' },
        }),
      );
      let serve = await startServe(file);
      for (let k = 1; k <= KILLS; k++) {
        // Each kill while a round is under way: some of its credits taken, the rest still to push.
        await waitFor(() => pushes.size >= (CREDITS * k) / (KILLS + 1), 30_000, `the credits pushed before kill ${k}`);
        serve.child.kill('SIGKILL');
        await once(serve.child, 'exit');
        serve = await startServe(file);
      }
      await waitFor(() => pushes.size === CREDITS, 60_000, 'every credit pushed');
      const ledger = openLedger({ url: (testConfigDocument(dir).database as { url: string }).url, sqlite_synchronous: 'normal', pool_size: 2 });
      let recorded: number;
      try {
        await waitFor(
          async () => (await ledger.db.selectFrom('operator_credits').select('delivery').where('delivery', '<>', 'delivered').execute()).length === 0,
          10_000,
          'every credit marked delivered',
        );
        // The pushes the ledger recorded: each credit's 2xx, and each failure marked (a push left unanswered, say).
        const attempts = await ledger.db.selectFrom('operator_credits').select('delivery_attempts').execute();
        recorded = attempts.reduce((sum, a) => sum + Number(a.delivery_attempts), 0);
      } finally {
        serve.child.kill('SIGTERM');
        await once(serve.child, 'exit');
        await ledger.close();
      }
      // A kill repeats at most the one push under way (operator.credits.concurrency 1), never the round's taken ones:
      // of the pushes the wallet took, at most one per kill went unrecorded. (The same credit may be the one under way at
      // two kills, so the bound is on all of them; a push the gateway recorded as failed went again by design.)
      const taken = [...pushes.values()].reduce((sum, n) => sum + n, 0);
      expect(taken - recorded).toBeLessThanOrEqual(KILLS);
    } finally {
      await new Promise((resolve) => wallet.close(resolve));
    }
  }, 120_000);
});
