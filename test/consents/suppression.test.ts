/**
 * sms.suppression against the real server, on both operator backends: a blocked, excluded or opted-out player (or a
 * known one without sms consent) is refused before anything reaches the provider (a Twilio fake counting creates),
 * single and batch; the refusal is in the ledger and counted; unknown players and messages without user_id go out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConsoleSummary } from '../../src/console/summary.js';
import { startFakeOperatorPlatform, type FakeOperatorPlatform } from '../fakes/operator-platform.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';

const SIX = ['email', 'sms', 'telephone', 'postMail', 'siteNotification', 'pushNotification'];
const consents = (sms: boolean) => SIX.map((type) => ({ type, opted_in: type === 'sms' ? sms : false }));

/** The players of every case, as the operator data holds them. `sms: null` never set (sql only). */
const PLAYERS: Array<{ id: string; blocked?: boolean; excluded?: boolean; sms: boolean | null }> = [
  { id: 'p-in', sms: true },
  { id: 'p-blocked', blocked: true, sms: true },
  { id: 'p-excluded', excluded: true, sms: true },
  { id: 'p-both', blocked: true, excluded: true, sms: false },
  { id: 'p-out', sms: false },
  { id: 'p-unset', sms: null },
];

const REFUSALS: Array<[string, string, RegExp]> = [
  ['a blocked player', 'p-blocked', /^recipient: player "p-blocked" is blocked$/],
  ['an excluded player', 'p-excluded', /^recipient: player "p-excluded" is excluded$/],
  ['a player both blocked and excluded (the block is named)', 'p-both', /^recipient: player "p-both" is blocked$/],
  ['a player opted out of sms', 'p-out', /^recipient: player "p-out" has opted out of sms$/],
];

interface Setup {
  gw: TestGateway;
  twilio: TwilioFake;
  platform?: FakeOperatorPlatform;
}

async function setUp(backend: 'sql' | 'http'): Promise<Setup> {
  const twilio = await startTwilioFake();
  const platform = backend === 'http' ? await startFakeOperatorPlatform() : undefined;
  const gw = await startTestGateway({
    providers: { tw: { type: 'twilio', base_url: twilio.url, account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006' } },
    ...(platform ? { operator: { backend: 'http', base_url: platform.url, timeout: '2s' } } : {}),
  });
  for (const p of PLAYERS) {
    const record = sampleUser(p.id, { ...UK_PHONE, is_blocked: p.blocked ?? false, is_excluded: p.excluded ?? false });
    if (platform) {
      platform.users.set(p.id, record);
      // GET /userconsents always lists all six types: "never set" reads as opted out on this backend.
      platform.consents.set(p.id, consents(p.sms ?? false));
    } else {
      const body = p.sms === null ? record : { ...record, consents: [{ type: 'sms', opted_in: p.sms }] };
      expect((await gw.adminPut(`/admin/users/${p.id}`, body)).status).toBe(201);
    }
  }
  return { gw, twilio, platform };
}

/**
 * The players' own number, the one the messages go to (smsMessage's): a number in another country than the player's
 * record is refused before any standing is read (test/sms/recipient-country.test.ts).
 */
const UK_PHONE = { mobile_prefix: '+44', mobile: '7700900123' };

const message = (id: string, userId: string | undefined) => {
  const base = smsMessage(id, { provider_name: 'tw' });
  const { user_id: _, ...activity } = base.activity;
  return { ...base, activity: userId === undefined ? activity : { ...activity, user_id: userId } };
};

/** The message stored for an activity.id, found by the admin search and read whole. */
async function story(gw: TestGateway, activityId: string) {
  const headers = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
  const found = await fetch(`${gw.url}/admin/messages?activity_id=${encodeURIComponent(activityId)}`, { headers });
  const { messages } = (await found.json()) as { messages: Array<{ sms_id: string }> };
  if (messages.length !== 1) return { status: 404, json: { message: {} as Record<string, unknown> } };
  const res = await fetch(`${gw.url}/admin/messages/${messages[0]!.sms_id}`, { headers });
  return { status: res.status, json: (await res.json()) as { message: Record<string, unknown> } };
}

async function metricValue(gw: TestGateway, reason: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith(`sms_gateway_sends_suppressed_total{reason="${reason}"}`));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe.each(['sql', 'http'] as const)('sms.suppression on the %s backend', (backend) => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(backend);
  });
  afterAll(async () => {
    await s.gw.close();
    await s.twilio.close();
    await s.platform?.close();
  });

  it.each(REFUSALS)('refuses a single message to %s with 400, sends nothing and records why', async (_label, userId, error) => {
    const id = `single-${backend}-${userId}`;
    const before = s.twilio.creates.length;
    const res = await s.gw.post('/channels/sms/single', message(id, userId));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(error);
    expect(s.twilio.creates.length).toBe(before);
    const recorded = await story(s.gw, id);
    expect(recorded.status).toBe(200);
    expect(recorded.json.message).toMatchObject({
      state: 'rejected',
      error: expect.stringMatching(error),
      error_code: expect.stringMatching(/^suppressed_/),
      provider_message_id: null,
      attempts: 0,
    });
    expect(res.json.sms_id).toBe(recorded.json.message.sms_id);
  });

  it('answers a repeat of a refused activity.id with the same refusal, still sending nothing', async () => {
    const before = s.twilio.creates.length;
    const res = await s.gw.post('/channels/sms/single', message(`single-${backend}-p-out`, 'p-out'));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/has opted out of sms/);
    expect(s.twilio.creates.length).toBe(before);
  });

  it.each([
    ['an opted-in player', 'p-in'],
    ['a player the operator data does not know', 'p-nobody'],
    ['a message without activity.user_id', undefined],
  ])('sends to %s as before', async (_label, userId) => {
    const id = `send-${backend}-${userId ?? 'none'}`;
    const before = s.twilio.creates.length;
    const res = await s.gw.post('/channels/sms/single', message(id, userId));
    expect(res.status).toBe(200);
    expect(s.twilio.creates.length).toBe(before + 1);
  });

  it('puts refused batch entries in failed with the same errors and sends only the others', async () => {
    const ids = PLAYERS.map((p) => `batch-${backend}-${p.id}`);
    const before = s.twilio.creates.length;
    const res = await s.gw.post(
      '/channels/sms/batch',
      PLAYERS.map((p, i) => message(ids[i]!, p.id)),
    );
    expect(res.status).toBe(200);
    const failed = new Map<string, string>(res.json.failed.map((e: { id: string; error: string }) => [e.id, e.error]));
    for (const [, userId, error] of REFUSALS) expect(failed.get(`batch-${backend}-${userId}`)).toMatch(error);
    expect(res.json.successful.map((e: { id: string }) => e.id)).toEqual([`batch-${backend}-p-in`]);
    expect(s.twilio.creates.length).toBe(before + 1);
    expect(s.twilio.creates.at(-1)!.form.To).toBe('+447700900123');
  });

  if (backend === 'sql') {
    it('refuses a known player whose sms consent was never set, as GET /userconsents reports them', async () => {
      expect((await s.gw.get('/userconsents/p-unset')).json.consents.find((c: { type: string }) => c.type === 'sms').opted_in).toBe(false);
      const res = await s.gw.post('/channels/sms/single', message('single-sql-unset', 'p-unset'));
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('recipient: player "p-unset" has no sms consent on record');
    });

    it('refuses the retry of a transient failure once the player opted out, and records the refusal for good', async () => {
      await s.gw.adminPut('/admin/users/p-retry', {
        ...sampleUser('p-retry', { mobile_prefix: '+1', mobile: '5005550429' }),
        consents: [{ type: 'sms', opted_in: true }],
      });
      const first = await s.gw.post('/channels/sms/single', { ...message('retry-sql', 'p-retry'), recipient: '+15005550429' });
      expect(first.status).toBe(503);
      await s.gw.adminPut('/admin/users/p-retry/consents', { consents: [{ type: 'sms', opted_in: false }] });
      const before = s.twilio.creates.length;
      const retry = await s.gw.post('/channels/sms/single', { ...message('retry-sql', 'p-retry'), recipient: '+15005550429' });
      expect(retry.status).toBe(400);
      expect(retry.json.error).toBe('recipient: player "p-retry" has opted out of sms');
      expect(s.twilio.creates.length).toBe(before);
      expect((await story(s.gw, 'retry-sql')).json.message).toMatchObject({ state: 'rejected', error_code: 'suppressed_opted_out' });
    });

    it('counts an sms channel opted in for some products as opted in (an SMS carries no product)', async () => {
      await s.gw.adminPut('/admin/users/p-products', {
        ...sampleUser('p-products', UK_PHONE),
        consents: [{ type: 'sms', opted_in: true, products: ['casino'] }],
      });
      expect((await s.gw.post('/channels/sms/single', message('single-sql-products', 'p-products'))).status).toBe(200);
    });

    it('sees a consent change at once (the player tables are read in the claim transaction)', async () => {
      expect((await s.gw.adminPut('/admin/users/p-in/consents', { consents: [{ type: 'sms', opted_in: false }] })).status).toBe(200);
      const res = await s.gw.post('/channels/sms/single', message('single-sql-changed', 'p-in'));
      expect(res.status).toBe(400);
      expect(res.json.error).toMatch(/has opted out of sms/);
      await s.gw.adminPut('/admin/users/p-in/consents', { consents: [{ type: 'sms', opted_in: true }] });
    });
  } else {
    it('asks the platform once per player within sms.suppression_cache_ttl', async () => {
      s.platform!.requests.length = 0;
      for (const id of ['cache-1', 'cache-2', 'cache-3'])
        expect((await s.gw.post('/channels/sms/single', message(`${id}-${backend}`, 'p-in'))).status).toBe(200);
      // p-in was looked up by the earlier tests already: its answers are still cached.
      expect(s.platform!.requests.filter((r) => r.path.endsWith('/p-in'))).toHaveLength(0);
    });

    it('passes a Twilio 21610 on to the platform as an sms opt-out and stops sending to the player', async () => {
      s.platform!.users.set('p-unsub', sampleUser('p-unsub'));
      s.platform!.consents.set('p-unsub', consents(true));
      const first = await s.gw.post('/channels/sms/single', { ...message('unsub-http-1', 'p-unsub'), recipient: '+15005550004' });
      expect(first.status).toBe(400);
      expect(first.json.error).toMatch(/21610/);
      const posted = s.platform!.requests.find((r) => r.method === 'POST' && r.path === '/userconsents/p-unsub');
      expect(JSON.parse(posted!.body)).toEqual({ consents: [{ opted_in: false, type: 'sms' }] });
      // The cached standing was dropped: the next message is refused before reaching Twilio.
      const before = s.twilio.creates.length;
      const next = await s.gw.post('/channels/sms/single', message('unsub-http-2', 'p-unsub'));
      expect(next.status).toBe(400);
      expect(next.json.error).toMatch(/has opted out of sms/);
      expect(s.twilio.creates.length).toBe(before);
    });

    it('sends as before when the platform cannot answer (the CRM filtered already)', async () => {
      s.platform!.users.set('p-flaky', sampleUser('p-flaky', { is_blocked: true }));
      s.platform!.consents.set('p-flaky', consents(true));
      s.platform!.script('/userblocks/p-flaky', { status: 500, body: { error: 'down' } });
      const res = await s.gw.post('/channels/sms/single', message('flaky-http', 'p-flaky'));
      expect(res.status).toBe(200);
      // Not cached: the next message asks again and is refused.
      const again = await s.gw.post('/channels/sms/single', message('flaky-http-2', 'p-flaky'));
      expect(again.status).toBe(400);
      expect(again.json.error).toMatch(/is blocked/);
    });
  }

  it("counts refusals per reason in /metrics and on the console, apart from the provider's rejections", async () => {
    // Singles and the batch count once each (a repeat of a refused id is answered from the ledger). opted_out: p-out
    // twice, plus p-in after its opt-out (sql) or p-unset, which GET /userconsents reports as opted out (http).
    // And one more: sql the retry refused after its player opted out, http the message after the Twilio 21610.
    const opted = 4;
    expect(await metricValue(s.gw, 'blocked')).toBe(4 + (backend === 'http' ? 1 : 0));
    expect(await metricValue(s.gw, 'excluded')).toBe(2);
    expect(await metricValue(s.gw, 'opted_out')).toBe(opted);
    const summary = await loadConsoleSummary(s.gw.gateway.ledger.db, ['tw'], Date.now());
    expect(summary.suppressed).toEqual([
      { reason: 'blocked', count: 4 + (backend === 'http' ? 1 : 0) },
      { reason: 'excluded', count: 2 },
      { reason: 'opted_out', count: opted },
      { reason: 'no_consent', count: backend === 'sql' ? 2 : 0 },
    ]);
    // Only Twilio's own refusal (21610, http) is a provider rejection.
    expect(summary.windows[1]!.rows.find((r) => r.provider === 'tw')!.counts.rejected).toBe(backend === 'http' ? 1 : 0);
  });
});

describe('sms.suppression: off', () => {
  it('sends to a blocked player as before', async () => {
    const gw = await startTestGateway({ sms: { suppression: 'off' } });
    try {
      expect((await gw.adminPut('/admin/users/u-1', sampleUser('u-1', { ...UK_PHONE, is_blocked: true }))).status).toBe(201);
      expect((await gw.post('/channels/sms/single', smsMessage('off-1'))).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});
