/**
 * No row is stuck forever (docs/security.md): a send left `dispatching` by a process that died mid-call, and one
 * left `uncertain` by an ambiguous provider failure, are resolved by the sweep: the first becomes `uncertain`
 * once sms.dispatch_lease has passed (a receipt still confirms it, a CRM retry sends again), and both are
 * reported `delivery_unknown` to the CRM after delivery.unknown_after when nothing else happened.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { startInfobipFake } from '../fakes/infobip.js';
import { startSinchFake } from '../fakes/sinch.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startServe, writeConfig } from '../helpers/child.js';
import { smsMessage, startTestGateway, testConfigDocument, TEST_ADMIN_KEY, TEST_API_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const HOUR = 3_600_000;
const crm = new FakeCrm();
let twilio: TwilioFake;
let gw: TestGateway | undefined;
const dirs: string[] = [];

beforeAll(async () => {
  await crm.start();
  twilio = await startTwilioFake();
});
afterAll(async () => {
  await crm.stop();
  await twilio.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  crm.reset();
});

function overrides(sendTimeout: string) {
  return {
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    sms: { send_timeout: sendTimeout, dispatch_lease: '5m', ambiguous_retry_after: '60s' },
    delivery: { poll_interval: '20ms', unknown_after: '1h', sweep_interval: '1h' },
    providers: {
      twilio: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilio.url },
    },
  };
}

const story = async (g: TestGateway, smsId: string) => (await g.get(`/admin/messages/${smsId}`, { authorization: `Bearer ${TEST_ADMIN_KEY}` })).json;

/** A real serve process killed with SIGKILL while its provider call is open (no answer yet). */
async function killMidCall(activityId: string, recipient: string, provider: TwilioFake) {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-stuck-'));
  dirs.push(dir);
  const config = {
    ...overrides('60s'),
    providers: { twilio: { type: 'twilio', account_sid: provider.accountSid, auth_token: provider.authToken, from: '+15005550006', base_url: provider.url } },
  };
  const serve = await startServe(writeConfig(dir, { ...testConfigDocument(dir, config), log: { level: 'info' } }));
  const pending = fetch(`${serve.url}/channels/sms/single`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
    body: JSON.stringify(smsMessage(activityId, { provider_name: 'twilio', recipient, sender_name: null })),
  }).catch(() => undefined);
  await waitFor(() => provider.creates.some((c) => c.form.To === recipient), 10_000, 'the provider call');
  serve.child.kill('SIGKILL');
  await once(serve.child, 'exit');
  await pending;
  return { dir, config };
}

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('a send left dispatching by a process that died mid-call', () => {
  it('is looked up after the lease: not at the provider, it is retryable, and reported delivery_unknown if the CRM never retries', async () => {
    // This number makes the fake hang before it creates anything: Twilio never got the message.
    const { dir, config } = await killMidCall('died-mid-call', '+15005550666', twilio);
    let time = Date.now();
    gw = await startTestGateway(config, { dir, now: () => time });
    const row = await gw.gateway.ledger.db.selectFrom('messages').selectAll().where('activity_key', '=', 'died-mid-call').executeTakeFirstOrThrow();
    expect(row.state).toBe('dispatching');
    // Within the lease a retry is refused: the dead process may still be sending it.
    expect(
      (await gw.post('/channels/sms/single', smsMessage('died-mid-call', { provider_name: 'twilio', recipient: '+15005550666', sender_name: null }))).status,
    ).toBe(503);

    expect(await gw.gateway.sweep()).toMatchObject({ leasesExpired: 0 });
    time += 5 * 60_000 + 1_000;
    expect(await gw.gateway.sweep()).toMatchObject({ leasesExpired: 1, unknown: 0, lookups: { found: 0, absent: 1, unknown: 0 } });
    expect(twilio.lookups).toContainEqual({ kind: 'list', to: '+15005550666' });
    expect((await story(gw, row.sms_id)).message).toMatchObject({ state: 'retryable', lookup_result: 'absent' });
    expect(twilio.creates.filter((c) => c.form.To === '+15005550666')).toHaveLength(1);

    time += HOUR;
    expect(await gw.gateway.sweep()).toMatchObject({ unknown: 1 });
    await waitFor(() => crm.conversions.find((c) => c.sms_id === row.sms_id), 10_000, 'the delivery_unknown conversion');
    expect(crm.conversions.filter((c) => c.sms_id === row.sms_id)).toEqual([
      { activity: smsMessage('died-mid-call').activity, sms_id: row.sms_id, delivery_status: 'delivery_unknown' },
    ]);
    expect(await gw.gateway.sweep()).toMatchObject({ unknown: 0, leasesExpired: 0 });
  }, 30_000);

  it('is looked up after the lease: found at the provider, it is submitted with its sid and a CRM retry sends nothing', async () => {
    // The fake creates the message, then holds its answer past the kill.
    const provider = await startTwilioFake({ answerDelayMs: 60_000 });
    try {
      const recipient = '+447700900777';
      const { dir, config } = await killMidCall('died-after-create', recipient, provider);
      let time = Date.now();
      gw = await startTestGateway(config, { dir, now: () => time });
      const row = await gw.gateway.ledger.db.selectFrom('messages').selectAll().where('activity_key', '=', 'died-after-create').executeTakeFirstOrThrow();
      time += 5 * 60_000 + 1_000;
      expect(await gw.gateway.sweep()).toMatchObject({ leasesExpired: 1, lookups: { found: 1, absent: 0, unknown: 0 } });
      expect((await story(gw, row.sms_id)).message).toMatchObject({
        state: 'submitted',
        lookup_result: 'found',
        provider_message_id: provider.creates[0]!.sid,
      });
      const retry = await gw.post('/channels/sms/single', smsMessage('died-after-create', { provider_name: 'twilio', recipient, sender_name: null }));
      expect(retry).toMatchObject({ status: 200, json: { sms_id: row.sms_id } });
      expect(provider.creates).toHaveLength(1);
    } finally {
      await provider.close();
    }
  }, 30_000);
});

/** killMidCall, then a gateway on the same ledger with a clock of the test's (`clock.time`), and the message's row. */
async function restartAfterKill(activityId: string, recipient: string, provider: TwilioFake) {
  const message = smsMessage(activityId, { provider_name: 'twilio', recipient, sender_name: null });
  const { dir, config } = await killMidCall(activityId, recipient, provider);
  const clock = { time: Date.now() };
  gw = await startTestGateway(config, { dir, now: () => clock.time });
  const row = await gw.gateway.ledger.db.selectFrom('messages').selectAll().where('activity_key', '=', activityId).executeTakeFirstOrThrow();
  return { clock, message, row, gw };
}

describe('a CRM retry that comes after the lease of a lost send, before any sweep', () => {
  it('asks the provider first: found, it is answered with its sms_id and nothing is sent again', async () => {
    // The fake creates the message, then holds its answer past the kill.
    const provider = await startTwilioFake({ answerDelayMs: 60_000 });
    try {
      const recipient = '+447700900778';
      const { clock, message, row, gw: g } = await restartAfterKill('retry-after-lease-found', recipient, provider);
      clock.time += 5 * 60_000 + 1_000;
      // No sweep has run: the retry itself resolves the lost send, as the sweep would.
      const retry = await g.post('/channels/sms/single', message);
      expect(retry).toMatchObject({ status: 200, json: { sms_id: row.sms_id } });
      expect(provider.lookups).toContainEqual({ kind: 'list', to: recipient });
      expect(provider.creates).toHaveLength(1);
      expect((await story(g, row.sms_id)).message).toMatchObject({
        state: 'submitted',
        lookup_result: 'found',
        provider_message_id: provider.creates[0]!.sid,
      });
      expect(await g.gateway.sweep()).toMatchObject({ leasesExpired: 0, lookups: { found: 0, absent: 0, unknown: 0 } });
    } finally {
      await provider.close();
    }
  }, 30_000);

  it('asks the provider first: absent, the same retry sends it, once', async () => {
    // The first create is held and never made: Twilio never got the message.
    const provider = await startTwilioFake({ loseFirst: 1 });
    try {
      const recipient = '+447700900779';
      const { clock, message, row, gw: g } = await restartAfterKill('retry-after-lease-absent', recipient, provider);
      // Within the lease: the dead process may still be sending it.
      expect((await g.post('/channels/sms/single', message)).status).toBe(503);
      expect(provider.lookups).toEqual([]);
      clock.time += 5 * 60_000 + 1_000;
      const retry = await g.post('/channels/sms/single', message);
      expect(retry).toMatchObject({ status: 200, json: { sms_id: row.sms_id } });
      expect(provider.lookups).toEqual([{ kind: 'list', to: recipient }]);
      expect(provider.creates).toHaveLength(2);
      expect(provider.creates.filter((c) => c.sid)).toHaveLength(1);
      expect((await story(g, row.sms_id)).message).toMatchObject({ state: 'submitted', lookup_result: null, provider_message_id: provider.creates[1]!.sid });
    } finally {
      await provider.close();
    }
  }, 30_000);
});

/** A sandbox send, sent, then put back as a process killed mid-call leaves it; `clock.time` is the gateway's clock. */
async function sandboxSendLostMidCall(activityId: string) {
  const clock = { time: Date.now() };
  gw = await startTestGateway({ ...overrides('10s') }, { now: () => clock.time });
  const message = smsMessage(activityId, { provider_name: 'sandbox' });
  const sent = await gw.post('/channels/sms/single', message);
  expect(sent.status).toBe(200);
  const { sms_id: smsId } = sent.json as { sms_id: string };
  // The sandbox's own receipt comes first; then the row is put back with no receipt and no answer recorded.
  await waitFor(async () => (await story(gw!, smsId)).message.delivery_status !== null, 10_000, 'the sandbox receipt');
  await gw.gateway.ledger.db
    .updateTable('messages')
    .set({ state: 'dispatching', submitted_at: null, provider_message_id: null, delivery_status: null, delivery_source: null })
    .where('sms_id', '=', smsId)
    .execute();
  return { clock, message, smsId };
}

describe('a provider whose API cannot tell (sandbox: no lookup)', () => {
  it('leaves a lost send uncertain, counted and listed; a CRM retry waits sms.ambiguous_retry_after, then sends again', async () => {
    const { clock, message, smsId } = await sandboxSendLostMidCall('sandbox-lost');
    clock.time += 5 * 60_000 + 1_000;
    expect(await gw!.gateway.sweep()).toMatchObject({ leasesExpired: 1, lookups: { found: 0, absent: 0, unknown: 1 } });
    expect((await story(gw!, smsId)).message).toMatchObject({ state: 'uncertain', lookup_result: 'unknown' });
    const metrics = await (await fetch(`${gw!.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).text();
    expect(metrics).toMatch(/sms_gateway_provider_lookups_total\{provider="sandbox",purpose="lost_send",answer="cannot_tell"\} 1/);
    const listed = await gw!.get('/admin/messages?status=uncertain', { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(JSON.stringify(listed.json)).toContain(smsId);
    expect((await gw!.post('/channels/sms/single', message)).status).toBe(503);
    clock.time += 60_000;
    expect((await gw!.post('/channels/sms/single', message)).status).toBe(200);
  });
});

describe('a CRM retry after the lease of a lost send whose provider cannot tell (sandbox: no lookup)', () => {
  it('takes the uncertain path before any sweep: 503, counted cannot_tell; sent again only after sms.ambiguous_retry_after', async () => {
    const { clock, message, smsId } = await sandboxSendLostMidCall('sandbox-retry-after-lease');
    clock.time += 5 * 60_000 + 1_000;
    expect((await gw!.post('/channels/sms/single', message)).status).toBe(503);
    expect((await story(gw!, smsId)).message).toMatchObject({ state: 'uncertain', lookup_result: 'unknown', attempts: 1 });
    const metrics = await (await fetch(`${gw!.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).text();
    expect(metrics).toMatch(/sms_gateway_provider_lookups_total\{provider="sandbox",purpose="lost_send",answer="cannot_tell"\} 1/);
    clock.time += 59_000;
    expect((await gw!.post('/channels/sms/single', message)).status).toBe(503);
    clock.time += 1_000;
    expect(await gw!.post('/channels/sms/single', message)).toMatchObject({ status: 200, json: { sms_id: smsId } });
    expect((await story(gw!, smsId)).message).toMatchObject({ attempts: 2 });
  });
});

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('a process killed after answering the CRM, its provider answer not recorded', () => {
  it('keeps the claimed row; the sweep makes it submitted from its receipt; a CRM retry sends nothing again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-unrecorded-'));
    dirs.push(dir);
    const ledgerFile = join(dir, 'ledger.db');
    let lock: BetterSqlite3.Database | undefined;
    // The receipt beats the answer (posted while the create call is still open); then, before the fake answers, the
    // test takes SQLite's write lock, so the record of the answer cannot be committed: it gives up after the ledger's
    // busy wait (src/ledger/engine/sqlite.ts), the CRM hears its 200 all the same (the provider took the message), and the
    // process is killed with the row still `dispatching`.
    const provider = await startTwilioFake({
      callbackStatuses: ['delivered'],
      callbacksBeforeAnswer: true,
      beforeAnswer: () => {
        lock = new BetterSqlite3(ledgerFile);
        lock.exec('begin immediate');
      },
    });
    try {
      const config = {
        ...overrides('60s'),
        providers: {
          twilio: { type: 'twilio', account_sid: provider.accountSid, auth_token: provider.authToken, from: '+15005550006', base_url: provider.url },
        },
      };
      const serve = await startServe(writeConfig(dir, { ...testConfigDocument(dir, config), log: { level: 'info' } }));
      const message = smsMessage('killed-before-record', { provider_name: 'twilio', recipient: '+15005550100', sender_name: null });
      const answer = await fetch(`${serve.url}/channels/sms/single`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
        body: JSON.stringify(message),
      });
      expect(answer.status).toBe(200);
      const { sms_id: smsId } = (await answer.json()) as { sms_id: string };
      serve.child.kill('SIGKILL');
      await once(serve.child, 'exit');
      lock!.exec('rollback');
      lock!.close();
      expect(provider.creates).toHaveLength(1);
      expect(provider.callbacks.map((c) => c.status)).toEqual([200]);

      let time = Date.now();
      gw = await startTestGateway(config, { dir, now: () => time });
      // Committed before the provider call, with the receipt that came first; the answer's record never was.
      expect((await story(gw, smsId)).message).toMatchObject({ state: 'dispatching', delivery_status: 'delivered', delivery_source: 'receipt' });
      // The CRM heard 200, but a repeat of the request (a retry whose answer got lost) must not send again.
      const during = await gw.post('/channels/sms/single', message);
      expect(during.status).toBe(503);
      time += 5 * 60_000 + 1_000;
      expect(await gw.gateway.sweep()).toMatchObject({ leasesExpired: 1 });
      expect((await story(gw, smsId)).message).toMatchObject({ state: 'submitted', delivery_status: 'delivered' });
      const retry = await gw.post('/channels/sms/single', message);
      expect(retry).toMatchObject({ status: 200, json: { sms_id: smsId } });
      expect(provider.creates).toHaveLength(1);
      // The receipt's conversion (the killed process may have claimed it mid-post: its lease has passed by now).
      await waitFor(() => crm.conversions.find((c) => c.sms_id === smsId), 10_000, 'the delivered conversion');
      // Delivered at least once (the killed process may have posted it before it could mark it done), never another status.
      for (const c of crm.conversions.filter((c) => c.sms_id === smsId))
        expect(c).toEqual({ activity: message.activity, sms_id: smsId, delivery_status: 'delivered' });
    } finally {
      lock?.open && lock.close();
      await provider.close();
    }
  }, 30_000);
});

describe('a send left uncertain by an ambiguous provider failure', () => {
  it('is reported delivery_unknown after delivery.unknown_after when neither a receipt nor a retry came', async () => {
    let time = Date.now();
    gw = await startTestGateway(overrides('10s'), { now: () => time });
    // Twilio answers 500: the message may have been created anyway (docs/providers.md §1, "ambiguous").
    const sent = await gw.post('/channels/sms/single', smsMessage('ambiguous-500', { provider_name: 'twilio', recipient: '+15005550500', sender_name: null }));
    expect(sent.status).toBe(503);
    const row = await gw.gateway.ledger.db.selectFrom('messages').selectAll().where('activity_key', '=', 'ambiguous-500').executeTakeFirstOrThrow();
    expect(row.state).toBe('uncertain');
    time += 30 * 60_000;
    expect(await gw.gateway.sweep()).toMatchObject({ unknown: 0 });
    time += 31 * 60_000;
    expect(await gw.gateway.sweep()).toMatchObject({ unknown: 1 });
    await waitFor(() => crm.conversions.find((c) => c.sms_id === row.sms_id), 10_000, 'the delivery_unknown conversion');
    expect((await story(gw, row.sms_id)).message).toMatchObject({ delivery_status: 'delivery_unknown', delivery_source: 'timeout' });
  });
});

describe('a submitted message whose status callbacks were all lost', () => {
  it('is asked for its status after delivery.status_query_after, once; a final status found is reported like a receipt', async () => {
    let time = Date.now();
    gw = await startTestGateway(overrides('10s'), { now: () => time });
    const sent = await gw.post(
      '/channels/sms/single',
      smsMessage('callbacks-lost', { provider_name: 'twilio', recipient: '+447700900555', sender_name: null }),
    );
    expect(sent.status).toBe(200);
    const smsId = sent.json.sms_id as string;
    // Twilio delivered it, but its callbacks never reached the gateway (it was down past Twilio's retries).
    twilio.creates.find((c) => c.form.To === '+447700900555')!.status = 'delivered';
    time += 30 * 60_000;
    expect(await gw.gateway.sweep()).toMatchObject({ lookups: { statusQueried: 0 } });
    time += 30 * 60_000 + 1_000;
    expect(await gw.gateway.sweep()).toMatchObject({ lookups: { statusQueried: 1, statusFinal: 1 } });
    expect(twilio.lookups).toContainEqual({ kind: 'fetch', sid: twilio.creates.find((c) => c.form.To === '+447700900555')!.sid });
    await waitFor(() => crm.conversions.find((c) => c.sms_id === smsId), 10_000, 'the delivered conversion');
    expect(crm.conversions.filter((c) => c.sms_id === smsId)).toEqual([
      { activity: smsMessage('callbacks-lost').activity, sms_id: smsId, delivery_status: 'delivered' },
    ]);
    expect(await gw.gateway.sweep()).toMatchObject({ lookups: { statusQueried: 0 } });
  });
});

/**
 * Infobip and Sinch find a lost send by the reference the gateway set on it (Infobip: the destination's messageId;
 * Sinch: the batch's client_reference), both our sms_id (docs/crash-windows.md).
 */
describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('a lost send looked up by the reference we set (Infobip, Sinch)', () => {
  interface Fake {
    url: string;
    close(): Promise<void>;
  }
  interface Case {
    provider: 'infobip' | 'sinch';
    start(options: { answerDelayMs?: number; loseFirst?: number }): Promise<Fake>;
    config(fake: Fake): Record<string, unknown>;
    /** Send requests that reached the fake for this recipient, and those it accepted. */
    requests(fake: Fake, recipient: string): number;
    accepted(fake: Fake, recipient: string): string[];
  }
  const cases: Case[] = [
    {
      provider: 'infobip',
      start: (options) => startInfobipFake(options),
      config: (fake) => ({
        type: 'infobip',
        api_key: (fake as Awaited<ReturnType<typeof startInfobipFake>>).apiKey,
        base_url: fake.url,
        webhook_secret: 'infobip-webhook-secret-0123',
        from: 'Casino',
      }),
      requests: (fake, recipient) => (fake as Awaited<ReturnType<typeof startInfobipFake>>).sends.filter((s) => `+${s.to}` === recipient).length,
      accepted: (fake, recipient) =>
        (fake as Awaited<ReturnType<typeof startInfobipFake>>).sends.filter((s) => `+${s.to}` === recipient && s.messageId).map((s) => s.messageId!),
    },
    {
      provider: 'sinch',
      start: (options) => startSinchFake(options),
      config: (fake) => {
        const f = fake as Awaited<ReturnType<typeof startSinchFake>>;
        return {
          type: 'sinch',
          service_plan_id: f.servicePlanId,
          api_token: f.apiToken,
          base_url: f.url,
          webhook_secret: 'sinch-webhook-secret-01234',
          from: 'Casino',
        };
      },
      requests: (fake, recipient) => (fake as Awaited<ReturnType<typeof startSinchFake>>).posts.filter((to) => to === recipient).length,
      accepted: (fake, recipient) => (fake as Awaited<ReturnType<typeof startSinchFake>>).batches.filter((b) => b.to === recipient).map((b) => b.id),
    },
  ];

  async function killMidCall(c: Case, fake: Fake, activityId: string, recipient: string) {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-stuck-'));
    dirs.push(dir);
    const config = { ...overrides('60s'), providers: { [c.provider]: c.config(fake) } };
    const serve = await startServe(writeConfig(dir, { ...testConfigDocument(dir, config), log: { level: 'info' } }));
    const pending = fetch(`${serve.url}/channels/sms/single`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
      body: JSON.stringify(smsMessage(activityId, { provider_name: c.provider, recipient, sender_name: null })),
    }).catch(() => undefined);
    await waitFor(() => c.requests(fake, recipient) > 0, 10_000, 'the provider call');
    serve.child.kill('SIGKILL');
    await once(serve.child, 'exit');
    await pending;
    return { dir, config };
  }

  describe.each(cases)('$provider', (c) => {
    it('found at the provider: submitted with its id, and a CRM retry sends nothing', async () => {
      // The fake accepts the message, then holds its answer past the kill.
      const fake = await c.start({ answerDelayMs: 60_000 });
      try {
        const recipient = '+447700900811';
        const activityId = `${c.provider}-died-after-accept`;
        const { dir, config } = await killMidCall(c, fake, activityId, recipient);
        let time = Date.now();
        gw = await startTestGateway(config, { dir, now: () => time });
        const row = await gw.gateway.ledger.db.selectFrom('messages').selectAll().where('activity_key', '=', activityId).executeTakeFirstOrThrow();
        expect(row.state).toBe('dispatching');
        time += 5 * 60_000 + 1_000;
        expect(await gw.gateway.sweep()).toMatchObject({ leasesExpired: 1, lookups: { found: 1, absent: 0, unknown: 0 } });
        const accepted = c.accepted(fake, recipient);
        expect(accepted).toHaveLength(1);
        expect((await story(gw, row.sms_id)).message).toMatchObject({ state: 'submitted', lookup_result: 'found', provider_message_id: accepted[0] });
        const retry = await gw.post('/channels/sms/single', smsMessage(activityId, { provider_name: c.provider, recipient, sender_name: null }));
        expect(retry).toMatchObject({ status: 200, json: { sms_id: row.sms_id } });
        expect(c.requests(fake, recipient)).toBe(1);
      } finally {
        await fake.close();
      }
    }, 30_000);

    it("never got by the provider: absent, and the CRM's retry sends it again at once", async () => {
      // The first request is held and never accepted, as if lost on the way.
      const fake = await c.start({ loseFirst: 1 });
      try {
        const recipient = '+447700900812';
        const activityId = `${c.provider}-died-before-accept`;
        const { dir, config } = await killMidCall(c, fake, activityId, recipient);
        let time = Date.now();
        gw = await startTestGateway(config, { dir, now: () => time });
        const row = await gw.gateway.ledger.db.selectFrom('messages').selectAll().where('activity_key', '=', activityId).executeTakeFirstOrThrow();
        time += 5 * 60_000 + 1_000;
        expect(await gw.gateway.sweep()).toMatchObject({ leasesExpired: 1, lookups: { found: 0, absent: 1, unknown: 0 } });
        expect((await story(gw, row.sms_id)).message).toMatchObject({ state: 'retryable', lookup_result: 'absent' });
        expect(c.accepted(fake, recipient)).toHaveLength(0);
        const retry = await gw.post('/channels/sms/single', smsMessage(activityId, { provider_name: c.provider, recipient, sender_name: null }));
        expect(retry).toMatchObject({ status: 200, json: { sms_id: row.sms_id } });
        expect(c.requests(fake, recipient)).toBe(2);
        expect(c.accepted(fake, recipient)).toHaveLength(1);
        expect((await story(gw, row.sms_id)).message).toMatchObject({ state: 'submitted', provider_message_id: c.accepted(fake, recipient)[0] });
      } finally {
        await fake.close();
      }
    }, 30_000);
  });
});
