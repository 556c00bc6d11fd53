/**
 * Quiet hours end to end (docs/routing.md "Quiet hours"), through the real server against the Twilio fake and the
 * CRM's webhook fake: a message arriving inside its quiet hours is answered 200 with its sms_id and held; the CRM's
 * retry gets the same sms_id; `serve` is killed with SIGKILL while it is held; the gateway restarted on the same ledger
 * with a clock the test moves sends it once when its window opens, and the CRM gets its conversion. One held past
 * quiet_hours.max_wait is never sent and ends `failed`. `routing.zones` places a recipient for quiet hours as for route
 * rules. A held message's route validity counts from its acceptance: released with what is left, or, run out while
 * held, never sent and `failed`. On PostgreSQL (TEST_DATABASE_URL), two instances sharing the ledger send it once. The
 * run decides the database (test/helpers/database.ts). */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { quietHoursConfigSchema } from '../../src/config/quiet-hours-config.js';
import { decideQuietHours } from '../../src/sms/quiet-hours.js';
import { FakeCrm } from '../fakes/crm.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startServe, writeConfig } from '../helpers/child.js';
import { dropTestDatabase } from '../helpers/database.js';
import { mergeConfigDocument, smsMessage, startTestGateway, testConfigDocument, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { manualClock } from '../helpers/manual-clock.js';

const crm = new FakeCrm();
let twilio: TwilioFake;
const dirs: string[] = [];
const gateways: TestGateway[] = [];
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const RECIPIENT = '+447700900123';

beforeAll(async () => {
  await crm.start();
  twilio = await startTwilioFake({ callbackStatuses: ['delivered'], callbackRetryDelayMs: 50 });
});
afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close();
  crm.reset();
  twilio.creates.length = 0;
});
afterAll(async () => {
  await crm.stop();
  await twilio.close();
  for (const dir of dirs) {
    await dropTestDatabase(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-quiet-'));
  dirs.push(dir);
  return dir;
}

const londonDate = (t: number) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/London' }).format(t);

/** A window for GB whose today and tomorrow (London) are holidays: whenever the test runs, a message now is held. */
function quietHours(overrides: Record<string, unknown> = {}) {
  const now = Date.now();
  return {
    spread: '2m',
    max_wait: '72h',
    poll_interval: '20ms',
    retry_initial_ms: 50,
    windows: { 'gb-marketing': { countries: ['GB'], hours: '09:00-21:00', holidays: [londonDate(now), londonDate(now + 86_400_000)] } },
    ...overrides,
  };
}

function configOf(quiet: Record<string, unknown>) {
  return {
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    delivery: { poll_interval: '20ms', sweep_interval: '1h' },
    quiet_hours: quiet,
    providers: {
      twilio: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilio.url },
    },
  };
}

const createdFor = (to: string) => twilio.creates.filter((c) => c.sid && c.form.To === to).length;

async function consoleCookie(url: string): Promise<string> {
  const login = await fetch(`${url}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key: TEST_ADMIN_KEY }).toString(),
  });
  return login.headers.get('set-cookie')!.split(';')[0]!;
}

/** A held message never sent: `failed` with `code`, nothing at Twilio, and its conversion posted `failed`. */
async function expectFailedUnsent(gw: TestGateway, smsId: string, code: string): Promise<void> {
  await waitFor(() => crm.conversions.some((c) => c.sms_id === smsId), 20_000, 'the conversion posted');
  expect(crm.conversions.filter((c) => c.sms_id === smsId).map((c) => c.delivery_status)).toEqual(['failed']);
  expect(twilio.creates).toHaveLength(0);
  expect((await gw.get(`/admin/messages/${smsId}`, admin)).json.message).toMatchObject({ state: 'rejected', error_code: code, delivery_status: 'failed' });
}

describe('a message inside its quiet hours', () => {
  it('is answered 200 and held, survives SIGKILL, and is sent once when its window opens, its conversion posted', async () => {
    const dir = newDir();
    const quiet = quietHours();
    const config = configOf(quiet);
    const message = smsMessage('quiet-1', { provider_name: 'twilio', recipient: RECIPIENT, sender_name: null });
    const expected = decideQuietHours(Date.now(), { e164: RECIPIENT, country: 'GB' }, '7', quietHoursConfigSchema.parse(quiet));
    expect(expected.action).toBe('hold');
    const opens = (expected as { until: number }).until;

    const serve = await startServe(writeConfig(dir, { ...testConfigDocument(dir, config), log: { level: 'info' } }));
    let smsId: string;
    try {
      const post = () =>
        fetch(`${serve.url}/channels/sms/single`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': 'test-crm-key' },
          body: JSON.stringify(message),
        });
      const first = await post();
      expect(first.status).toBe(200);
      smsId = ((await first.json()) as { sms_id: string }).sms_id;
      // The CRM's retry: the same sms_id, nothing held twice.
      const retry = await post();
      expect({ status: retry.status, body: await retry.json() }).toEqual({ status: 200, body: { sms_id: smsId } });
      const held = await (await fetch(`${serve.url}/admin/messages?status=held`, { headers: admin })).json();
      expect((held as { messages: Array<{ sms_id: string }> }).messages.map((m) => m.sms_id)).toEqual([smsId]);
      expect((await (await fetch(`${serve.url}/admin/held-sends`, { headers: admin })).json()) as object).toMatchObject({ owed: 1 });
      expect(twilio.creates).toHaveLength(0);
    } finally {
      serve.child.kill('SIGKILL');
      await once(serve.child, 'exit');
    }

    let time = Date.now();
    const gw = await startTestGateway(config, { dir, now: () => time });
    gateways.push(gw);
    const story = await gw.get(`/admin/messages/${smsId}`, admin);
    expect(story.json.message).toMatchObject({ state: 'held', held_until: expect.any(Number) });
    const releaseAt = story.json.message.held_until as number;
    expect(releaseAt).toBeGreaterThanOrEqual(opens);
    expect(releaseAt).toBeLessThan(opens + 2 * 60_000);
    const page = await (await fetch(`${gw.url}/console/messages/${smsId}`, { headers: { cookie: await consoleCookie(gw.url) } })).text();
    expect(page).toMatch(/<td data-field="held until">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC<\/td>/);
    expect(page).toContain('<td data-field="status">held</td>');
    const dashboard = await (await fetch(`${gw.url}/console`, { headers: { cookie: await consoleCookie(gw.url) } })).text();
    expect(dashboard).toMatch(/<td data-held="held">1<\/td>/);

    // A moment before its release it is still held; then its window opens.
    time = releaseAt - 1;
    await waitFor(async () => (await gw.get('/admin/held-sends', admin)).json.owed === 1, 5_000, 'still held');
    expect(twilio.creates).toHaveLength(0);
    time = releaseAt + 1;
    await waitFor(() => crm.conversions.some((c) => c.sms_id === smsId && c.delivery_status === 'delivered'), 20_000, 'the conversion posted');
    expect(createdFor(RECIPIENT)).toBe(1);
    const after = await gw.get(`/admin/messages/${smsId}`, admin);
    expect(after.json.message).toMatchObject({ state: 'submitted', delivery_status: 'delivered', attempts: 1 });
    expect((await gw.get('/admin/held-sends', admin)).json).toMatchObject({ owed: 0 });
    // The CRM's retry after the send still answers the same sms_id and sends nothing.
    expect(await gw.post('/channels/sms/single', message)).toMatchObject({ status: 200, json: { sms_id: smsId } });
    expect(createdFor(RECIPIENT)).toBe(1);
  }, 60_000);

  it('is never sent past quiet_hours.max_wait: it ends failed, and the CRM gets that as its conversion', async () => {
    const dir = newDir();
    let time = Date.now();
    const gw = await startTestGateway(configOf(quietHours({ max_wait: '1h' })), { dir, now: () => time });
    gateways.push(gw);
    const answer = await gw.post('/channels/sms/single', smsMessage('quiet-expired', { provider_name: 'twilio', recipient: RECIPIENT, sender_name: null }));
    expect(answer.status).toBe(200);
    const smsId = answer.json.sms_id as string;
    time += 60 * 60_000;
    await expectFailedUnsent(gw, smsId, 'held_expired');
  }, 30_000);
});

describe('routing.zones places a recipient for quiet hours too', () => {
  it('+1212 said to be Honolulu is held at 09:00 in New York, until 08:00 in Honolulu', async () => {
    const time = Date.parse('2026-12-01T14:00:00Z');
    const gw = await startTestGateway(
      {
        quiet_hours: { spread: '0s', poll_interval: '20ms', windows: { us: { countries: ['US'], hours: '08:00-21:00' } } },
        routing: { zones: { '+1212': 'Pacific/Honolulu' } },
      },
      { dir: newDir(), now: () => time },
    );
    gateways.push(gw);
    const held = await gw.post('/channels/sms/single', smsMessage('quiet-zone', { recipient: '+12125550123' }));
    expect((await gw.get(`/admin/messages/${held.json.sms_id}`, admin)).json.message).toMatchObject({
      state: 'held',
      held_until: Date.parse('2026-12-01T18:00:00Z'),
    });
    // Another New York area code, not in routing.zones: open at 09:00 there.
    const sent = await gw.post('/channels/sms/single', smsMessage('quiet-zone-ny', { recipient: '+13475550123' }));
    expect((await gw.get(`/admin/messages/${sent.json.sms_id}`, admin)).json.message.state).not.toBe('held');
  }, 30_000);
});

describe("a held message's validity counts from its acceptance", () => {
  /** Held at 07:30 UTC under a 09:00-21:00 window, released at 09:00: 90 minutes held. */
  async function heldThroughRoute(validityMinutes: number, id: string) {
    let time = Date.parse('2026-12-02T07:30:00Z');
    const config = configOf({
      spread: '0s',
      poll_interval: '20ms',
      retry_initial_ms: 50,
      windows: { gb: { countries: ['GB'], hours: '09:00-21:00', zone: 'UTC' } },
    });
    const providers = { ...config.providers, valid: { type: 'route', members: ['twilio'], validity: validityMinutes } };
    const gw = await startTestGateway({ ...config, providers }, { dir: newDir(), now: () => time });
    gateways.push(gw);
    const answer = await gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'valid', recipient: RECIPIENT, sender_name: null }));
    expect(answer.status).toBe(200);
    const smsId = answer.json.sms_id as string;
    expect((await gw.get(`/admin/messages/${smsId}`, admin)).json.message).toMatchObject({ state: 'held', held_until: Date.parse('2026-12-02T09:00:00Z') });
    time = Date.parse('2026-12-02T09:00:00Z');
    return { gw, smsId };
  }

  it('is released with what is left of it: a 120-minute validity held 90 minutes reaches Twilio as 30 minutes', async () => {
    const { gw, smsId } = await heldThroughRoute(120, 'quiet-valid');
    await waitFor(() => createdFor(RECIPIENT) === 1, 20_000, 'the message made at Twilio');
    expect(twilio.creates.find((c) => c.sid && c.form.To === RECIPIENT)!.form.ValidityPeriod).toBe(String(30 * 60));
    await waitFor(async () => (await gw.get(`/admin/messages/${smsId}`, admin)).json.message.state === 'submitted', 10_000, 'submitted');
  }, 30_000);

  it('is never sent once it ran out while held: it ends failed, with its own code, and the CRM gets that as its conversion', async () => {
    const { gw, smsId } = await heldThroughRoute(60, 'quiet-invalid');
    await expectFailedUnsent(gw, smsId, 'held_validity_expired');
    expect((await gw.get('/admin/held-sends', admin)).json).toMatchObject({ owed: 0 });
  }, 30_000);
});

describe('serve killed with SIGKILL while it hands a released message to its provider', () => {
  it('does not send it twice: its provider is asked, and the held sends outbox leaves it to that answer', async () => {
    const dir = newDir();
    // The child's clock: Date.now moved by an offset read from a file, read again on SIGUSR2 (a clock the test moves).
    const clockFile = join(dir, 'clock-offset');
    const register = join(dir, 'clock.mjs');
    writeFileSync(
      register,
      `import { readFileSync } from 'node:fs';
const file = ${JSON.stringify(clockFile)};
const real = Date.now.bind(Date);
let offset = Number(readFileSync(file, 'utf8'));
Date.now = () => real() + offset;
process.on('SIGUSR2', () => { offset = Number(readFileSync(file, 'utf8')); });
`,
    );
    // Held a day early, on a day its window names a holiday; released on the real clock (so Twilio's records and the
    // gateway's lookup agree on the dates), its window having opened at midnight.
    const setChildOffset = (ms: number) => writeFileSync(clockFile, String(ms));
    setChildOffset(-86_400_000);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const slow = await startTwilioFake({ answerDelayMs: 10_000 });
    try {
      const config = {
        ...configOf({
          spread: '0s',
          poll_interval: '20ms',
          windows: { gb: { countries: ['GB'], hours: '00:00-24:00', zone: 'UTC', holidays: [yesterday] } },
        }),
        providers: { twilio: { type: 'twilio', account_sid: slow.accountSid, auth_token: slow.authToken, from: '+15005550006', base_url: slow.url } },
      };
      const serve = await startServe(writeConfig(dir, { ...testConfigDocument(dir, config), log: { level: 'info' } }), {
        nodeArgs: ['--import', pathToFileURL(register).href],
      });
      let smsId: string;
      try {
        const answer = await fetch(`${serve.url}/channels/sms/single`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': 'test-crm-key' },
          body: JSON.stringify(smsMessage('quiet-kill', { provider_name: 'twilio', recipient: RECIPIENT, sender_name: null })),
        });
        expect(answer.status).toBe(200);
        smsId = ((await answer.json()) as { sms_id: string }).sms_id;
        // Its window opens: the child releases it, and Twilio makes the message but holds its answer.
        setChildOffset(0);
        serve.child.kill('SIGUSR2');
        await waitFor(() => slow.creates.some((c) => c.sid), 10_000, 'the message made at Twilio');
      } finally {
        serve.child.kill('SIGKILL');
        await once(serve.child, 'exit');
      }

      let time = Date.now();
      const gw = await startTestGateway(config, { dir, now: () => time });
      gateways.push(gw);
      expect((await gw.get(`/admin/messages/${smsId}`, admin)).json.message).toMatchObject({ state: 'dispatching', attempts: 1 });
      // Past the held row's claim and the send's lease: the sweep asks Twilio, which has it.
      time += 5 * 60_000 + 1_000;
      const swept = await gw.gateway.sweep();
      expect(swept.lookups.found).toBe(1);
      // A round that found it still dispatching before the sweep backed it off: past any back-off, it finds it sent.
      time += 10 * 60_000;
      await waitFor(async () => (await gw.get('/admin/held-sends', admin)).json.owed === 0, 10_000, 'the held row done');
      expect((await gw.get(`/admin/messages/${smsId}`, admin)).json.message).toMatchObject({ state: 'submitted', attempts: 1 });
      expect(slow.creates.filter((c) => c.sid)).toHaveLength(1);
    } finally {
      await slow.close();
    }
  }, 60_000);
});

describe('a held message due after its window closed again', () => {
  it('(the gateway down through the whole window) is held again until the next opening, not sent at night', async () => {
    let time = Date.parse('2026-12-01T22:00:00Z');
    const gw = await startTestGateway(
      { quiet_hours: { spread: '0s', poll_interval: '20ms', windows: { gb: { countries: ['GB'], hours: '09:00-21:00', zone: 'UTC' } } } },
      { dir: newDir(), now: () => time },
    );
    gateways.push(gw);
    const smsId = (await gw.post('/channels/sms/single', smsMessage('quiet-late'))).json.sms_id as string;
    time = Date.parse('2026-12-02T22:00:00Z');
    const next = Date.parse('2026-12-03T09:00:00Z');
    await waitFor(async () => (await gw.get(`/admin/messages/${smsId}`, admin)).json.message.held_until === next, 10_000, 'held again');
    expect((await gw.get(`/admin/messages/${smsId}`, admin)).json.message).toMatchObject({ state: 'held', attempts: 0 });
    expect((await gw.get('/admin/held-sends', admin)).json).toMatchObject({ owed: 1, next_at: next });
    time = next + 1;
    await waitFor(async () => (await gw.get(`/admin/messages/${smsId}`, admin)).json.message.state === 'submitted', 10_000, 'sent');
  });
});

describe('a batch', () => {
  it('holds the entries inside their quiet hours and sends the others, all answered successful', async () => {
    const gw = await startTestGateway(
      { quiet_hours: { windows: { gb: { countries: ['GB'], hours: '09:00-21:00', zone: 'Europe/London' } } } },
      { dir: newDir(), now: () => Date.parse('2026-12-01T23:00:00Z') },
    );
    gateways.push(gw);
    const answer = await gw.post('/channels/sms/batch', [smsMessage('mixed-gb'), smsMessage('mixed-de', { recipient: '+4915112345678' })]);
    expect(answer.json).toMatchObject({ successful: [{ id: 'mixed-gb' }, { id: 'mixed-de' }], failed: [], fatal: [] });
    const [gb, de] = answer.json.successful as Array<{ sms_id: string }>;
    expect((await gw.get(`/admin/messages/${gb!.sms_id}`, admin)).json.message).toMatchObject({ state: 'held', attempts: 0 });
    expect((await gw.get(`/admin/messages/${de!.sms_id}`, admin)).json.message).toMatchObject({ state: 'submitted', held_until: null });
  });
});

describe('a CRM retry of a transient failure', () => {
  it('is held when it arrives inside its quiet hours, and tried again when its window opens', async () => {
    let time = Date.parse('2026-12-01T12:00:00Z');
    const gw = await startTestGateway(
      { quiet_hours: { spread: '0s', poll_interval: '20ms', windows: { gb: { countries: ['GB'], hours: '09:00-21:00', zone: 'Europe/London' } } } },
      { dir: newDir(), now: () => time },
    );
    gateways.push(gw);
    // The sandbox answers a recipient ending 0005 with a transient error: 503, and the CRM retries.
    const message = smsMessage('quiet-retry', { recipient: '+447700900005' });
    const first = await gw.post('/channels/sms/single', message);
    expect(first.status).toBe(503);
    time = Date.parse('2026-12-01T22:00:00Z');
    const retry = await gw.post('/channels/sms/single', message);
    expect(retry.status).toBe(200);
    const smsId = retry.json.sms_id as string;
    expect((await gw.get(`/admin/messages/${smsId}`, admin)).json.message).toMatchObject({
      state: 'held',
      attempts: 1,
      held_until: Date.parse('2026-12-02T09:00:00Z'),
    });
    time = Date.parse('2026-12-02T09:00:01Z');
    // The attempt is counted when the send is claimed (`dispatching`), before the sandbox's answer makes it `retryable`.
    const tried = await waitFor(
      async () => {
        const m = (await gw.get(`/admin/messages/${smsId}`, admin)).json.message;
        return m.attempts === 2 && m.state !== 'dispatching' ? m : undefined;
      },
      10_000,
      'the second attempt answered',
    );
    expect(tried).toMatchObject({ state: 'retryable' });
    expect((await gw.get('/admin/held-sends', admin)).json).toMatchObject({ owed: 1, retrying: 1 });
  }, 30_000);
});

describe('held messages released together', () => {
  it('go out within their provider’s rate_per_second', async () => {
    const clock = manualClock(Date.parse('2026-12-01T22:00:00Z'));
    const config = configOf({ spread: '0s', poll_interval: '20ms', windows: { gb: { countries: ['GB'], hours: '09:00-21:00', zone: 'Europe/London' } } });
    const gw = await startTestGateway(mergeConfigDocument(config, { providers: { twilio: { rate_per_second: 5 } } }), {
      dir: newDir(),
      now: clock.now,
      clock,
    });
    gateways.push(gw);
    const messages = Array.from({ length: 15 }, (_, i) =>
      smsMessage(`quiet-rate-${i}`, { provider_name: 'twilio', recipient: `+4477009${String(20_000 + i).slice(1)}`, sender_name: null }),
    );
    const answer = await gw.post('/channels/sms/batch', messages);
    expect(answer.json.successful).toHaveLength(15);
    expect(twilio.creates).toHaveLength(0);
    await clock.advance(Date.parse('2026-12-02T09:00:00Z') - clock.now());
    // The first second's burst goes at once; the rest wait on the throttle, at most a second's worth per second.
    await waitFor(() => twilio.creates.length >= 5 && clock.pending() > 0, 10_000, 'the burst sent and the rest waiting on the throttle');
    expect(twilio.creates.length).toBe(5);
    let seconds = 0;
    while (twilio.creates.length < 15 && seconds < 20) {
      const before = twilio.creates.length;
      await clock.advance(1_000);
      seconds += 1;
      // Progress, if the throttle lets any through this second (a lane may reach its wait only after the move).
      await waitFor(() => twilio.creates.length > before, 1_000, 'progress').catch(() => undefined);
      expect(twilio.creates.length).toBeLessThanOrEqual(5 + 5 * seconds);
    }
    expect(seconds).toBeGreaterThanOrEqual(2);
    for (const m of messages) expect(createdFor(m.recipient as string)).toBe(1);
  }, 30_000);
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('two instances sharing a PostgreSQL ledger', () => {
  it('send a held message once when its window opens', async () => {
    const dir = newDir();
    let time = Date.now();
    const config = configOf(quietHours({ spread: '0s' }));
    const a = await startTestGateway(config, { dir, now: () => time });
    gateways.push(a);
    const b = await startTestGateway(config, { dir, now: () => time });
    gateways.push(b);
    const messages = Array.from({ length: 20 }, (_, i) =>
      smsMessage(`quiet-pair-${i}`, { provider_name: 'twilio', recipient: `+4477009${String(10_000 + i).slice(1)}`, sender_name: null }),
    );
    const answer = await a.post('/channels/sms/batch', messages);
    expect(answer.json.successful).toHaveLength(20);
    // The CRM's retry reaches the other instance: the same sms_ids.
    const retry = await b.post('/channels/sms/batch', messages);
    expect(retry.json.successful).toEqual(answer.json.successful);
    const releaseAt = (await a.get(`/admin/messages/${answer.json.successful[0].sms_id}`, admin)).json.message.held_until as number;
    time = releaseAt + 1;
    const smsIds = (answer.json.successful as Array<{ sms_id: string }>).map((s) => s.sms_id);
    await waitFor(() => smsIds.every((id) => crm.conversions.some((c) => c.sms_id === id && c.delivery_status === 'delivered')), 30_000, 'every conversion');
    for (const m of messages) expect({ to: m.recipient, created: createdFor(m.recipient as string) }).toEqual({ to: m.recipient, created: 1 });
    expect((await b.get('/admin/held-sends', admin)).json).toMatchObject({ owed: 0, dead: 0 });
  }, 60_000);
});
