/**
 * The event relay end to end: the real gateway (HTTP server, ledger, worker) in front of a fake Integration API.
 * Validation and hostile bodies, crm_references from credits, one event per bonus status (its repeats in full:
 * relay-repeats.test.ts), per-user order, and a CRM that is down for a while.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventPanel } from '../../src/events/dead-events-page.js';
import { openLedger } from '../../src/ledger/engine/db.js';
import { findEventById } from '../../src/ledger/events.js';
import { dropTestDatabase, testDatabaseUrl } from '../helpers/database.js';
import { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { bonusEvent, catalogueExamples, exactNumberEvents, relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeIntegrationApi({ authorization: 'Bearer crm-integration-secret' });
let gw: TestGateway;

beforeAll(async () => {
  await crm.start();
  gw = await startTestGateway({
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100 },
    crm: { integration: { url: `${crm.url}/crm-base`, headers: { authorization: 'Bearer crm-integration-secret' } } },
  });
  await gw.adminPut('/admin/users/u-ref', sampleUser('u-ref'));
  await gw.adminPut('/admin/bonuses', [
    { text: 'Ten', value: 'B10' },
    { text: 'Twenty', value: 'B20' },
  ]);
});

afterAll(async () => {
  await gw.close();
  await crm.stop();
});

afterEach(() => {
  crm.delayMs = 0;
});

/** The console page as a signed-in operator sees it. */
async function renderedConsole(): Promise<string> {
  const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  return (await fetch(`${gw.url}/console`, { headers: { cookie } })).text();
}

const delivered = (eventId: string) => waitFor(() => crm.accepted.find((r) => r.eventId === eventId), 10_000, `event ${eventId} at the CRM`);

describe('relay routes', () => {
  it.each([
    ['POST', '/v2/integration/user', 'USER_CREATE_V2', thinEvent('u-cat', { note: 'hi' })],
    ['POST', '/v2/integration/login', 'LOGIN_V2', thinEvent('u-cat', { is_impersonated: false })],
    ['PUT', '/v2/integration/user', 'USER_UPDATE_V2', thinEvent('u-cat')],
    ['PUT', '/v2/integration/user/consents', 'USER_CONSENTS_V2', thinEvent('u-cat')],
    ['PUT', '/v2/integration/user/blocks', 'USER_BLOCK_V2', thinEvent('u-cat')],
    ['POST', '/v1/integration/custom', 'CUSTOM', thinEvent('u-cat', { notification_type: 'free_spins', data: { spins: '20' } })],
    [
      'POST',
      '/v1/integration/user/balances',
      'USER_BALANCES_UPDATE',
      thinEvent('u-cat', { balances: [{ amount: 5, currency: 'EUR', key: 'real_money', exchange_rate: 1 }] }),
    ],
    ['POST', '/v1/integration/user/device/link', 'USER_DEVICE_LINK', thinEvent('u-cat', { tokens: [{ token: 't', channel: 'ios', provider: 'apns' }] })],
    ['POST', '/v1/integration/user/device/unlink', 'USER_DEVICE_UNLINK', thinEvent('u-cat', { tokens: [{ token: 't', channel: 'web', provider: 'fcm' }] })],
  ] as const)('%s %s is accepted (202) and reaches the CRM at its own path and method, extra fields included', async (method, path, _type, body) => {
    const res = await relay(gw, method, path, { ...body, added_by_crm_later: { x: 1 } });
    expect(res.status).toBe(202);
    expect(res.json.event_id).toMatch(/^[0-9a-f-]{36}$/);
    const got = await delivered(res.json.event_id);
    expect(got.method).toBe(method);
    expect(got.path).toBe(`/crm-base${path}`);
    expect(got.headers.authorization).toBe('Bearer crm-integration-secret');
    expect(got.body).toEqual({ ...body, added_by_crm_later: { x: 1 } });
  });

  it.each([
    ['a bonus without status', bonusEvent('u', 'ub', 'Created', { status: undefined }), 'status: is required'],
    ['meta that is a list', bonusEvent('u', 'ub', 'Created', { meta: [1] }), 'meta: must be an object or null'],
    ['a bonus status outside the list', bonusEvent('u', 'ub', 'Won'), 'status: must be one of Pending'],
    ['a bonus product outside the list', bonusEvent('u', 'ub', 'Created', { product: 'Bingo' }), 'product: must be one of'],
    ['a timestamp without offset', bonusEvent('u', 'ub', 'Created', { timestamp: '2026-11-24T10:00:00' }), 'timestamp: must be a date-time'],
    ['an amount given as text', bonusEvent('u', 'ub', 'Created', { amount: '10' }), 'amount: must be a number'],
    ['an empty user_id', bonusEvent('', 'ub', 'Created'), 'user_id: must not be empty'],
  ])('refuses %s with 400 naming the field', async (_label, body, error) => {
    const res = await relay(gw, 'POST', '/v1/integration/bonus', body);
    expect(res.status).toBe(400);
    expect(res.json.error).toContain(error);
  });

  it.each([
    ['status Claimed', { status: 'Claimed' }],
    ['status NotApplicable', { status: 'NotApplicable' }],
    ["a bonus type outside the interface's examples", { type: 'Gift' }],
    ['a crypto currency', { currency: 'USDT' }],
    ['meta null', { meta: null }],
    ['meta with nested values', { meta: { a: { b: 1 } } }],
  ])('takes a bonus event with %s, as the CRM does, and passes it on unchanged', async (label, change) => {
    const body = bonusEvent('u-takes', `ub-takes-${label}`, 'Created', change);
    const res = await relay(gw, 'POST', '/v1/integration/bonus', body);
    expect(res.status).toBe(202);
    expect((await delivered(res.json.event_id)).body).toMatchObject(change);
  });

  it.each([
    [
      'a device channel outside the list',
      '/v1/integration/user/device/link',
      thinEvent('u', { tokens: [{ token: 't', channel: 'sms', provider: 'p' }] }),
      'tokens.0.channel: must be one of android, ios, web',
    ],
    [
      'a balance key outside the list',
      '/v1/integration/user/balances',
      thinEvent('u', { balances: [{ amount: 1, currency: 'EUR', key: 'cash', exchange_rate: 1 }] }),
      'balances.0.key',
    ],
    ['a login without origin', '/v2/integration/login', { user_id: 'u', timestamp: '2026-11-24T09:00:00Z' }, 'origin: is required'],
    ['a body that is an array', '/v2/integration/login', [thinEvent('u')], 'body: must be a JSON object'],
  ])('refuses %s with 400 naming the field', async (_label, path, body, error) => {
    const res = await relay(gw, 'POST', path, body);
    expect(res.status).toBe(400);
    expect(res.json.error).toContain(error);
  });

  it('refuses hostile bodies with 400 and keeps serving: 5,000 levels deep, __proto__ and constructor keys, oversized', async () => {
    const deep = `{"user_id":"u","timestamp":"2026-11-24T09:00:00Z","origin":"o","x":${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
    const cases: Array<[string, string]> = [
      // Refused while reading, at the relay's own limit (tighter than server.max_json_depth), however deep.
      [deep, 'nested deeper than 16 levels (relay.max_depth)'],
      [`{"user_id":"u","timestamp":"2026-11-24T09:00:00Z","origin":"o","x":${'['.repeat(20)}${']'.repeat(20)}}`, 'relay.max_depth'],
      ['{"user_id":"u","timestamp":"2026-11-24T09:00:00Z","origin":"o","__proto__":{"polluted":true}}', '__proto__: key name not allowed'],
      ['{"user_id":"u","timestamp":"2026-11-24T09:00:00Z","origin":"o","data":{"constructor":{"prototype":1}}}', 'data.constructor: key name not allowed'],
      [JSON.stringify(thinEvent('u', { note: 'x'.repeat(70_000) })), 'relay.max_event_bytes'],
    ];
    for (const [body, error] of cases) {
      const res = await gw.post('/relay/v2/integration/user', body, { 'x-api-key': RELAY_KEY });
      expect(res.status, error).toBe(400);
      expect(res.json.error).toContain(error);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await relay(gw, 'POST', '/v2/integration/user', thinEvent('u-after'))).status).toBe(202);
  });

  it('answers 401 without or with a wrong X-Api-Key (the CRM key is not a relay key), and stores nothing', async () => {
    expect((await relay(gw, 'POST', '/v2/integration/user', thinEvent('u-nokey'), 'wrong')).status).toBe(401);
    expect((await gw.post('/relay/v2/integration/user', thinEvent('u-nokey'))).status).toBe(401);
    const listed = await gw.get('/admin/events?user_id=u-nokey', { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(listed.json.events).toEqual([]);
  });
});

describe('bonus events', () => {
  const crmHeaders = {
    'x-crm-id': 'a3c6d7e8-0000-4000-8000-000000000001',
    'x-crm-actionid': '51',
    'x-crm-actiongroupid': '52',
    'x-crm-actioncommunicationprofileid': '53',
    'x-crm-activityid': '54',
    'x-crm-triggerhash': '0123456789abcdef0123456789abcdef',
    'x-crm-playeroriginid': '55',
  };
  const expectedRefs = {
    id: crmHeaders['x-crm-id'],
    action_id: 51,
    action_group_id: 52,
    action_communication_profile_id: 53,
    activity_id: 54,
    trigger_hash: crmHeaders['x-crm-triggerhash'],
    player_origin_id: 55,
  };

  it('carry the crm_references of the credit named by credit_id, typed as the CRM example, without credit_id', async () => {
    const credit = await gw.post('/bonus/credit', { user_id: 'u-ref', bonus_code: 'B20' }, crmHeaders);
    expect(credit.status).toBe(200);
    // A newer credit of the same code must not win over the one named.
    await gw.post('/bonus/credit', { user_id: 'u-ref', bonus_code: 'B20' }, { ...crmHeaders, 'x-crm-activityid': '99', 'x-crm-id': 'other' });
    const res = await relay(
      gw,
      'POST',
      '/v1/integration/bonus',
      bonusEvent('u-ref', 'ub-credit', 'Created', { bonus_code: 'B20', credit_id: credit.json.credit_id }),
    );
    expect(res.status).toBe(202);
    const got = await delivered(res.json.event_id);
    expect(got.body.crm_references).toEqual(expectedRefs);
    expect(got.body).not.toHaveProperty('credit_id');
  });

  it('fall back to the newest credit of the same user and bonus_code, and go without references when none matches', async () => {
    await gw.post('/bonus/credit', { user_id: 'u-ref', bonus_code: 'B10' }, { ...crmHeaders, 'x-crm-activityid': '70' });
    await gw.post('/bonus/credit', { user_id: 'u-ref', bonus_code: 'B10' }, { ...crmHeaders, 'x-crm-activityid': '71' });
    const matched = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('u-ref', 'ub-fallback', 'Created'));
    const unmatched = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('u-ref', 'ub-none', 'Created', { bonus_code: 'NOT-CREDITED' }));
    expect((await delivered(matched.json.event_id)).body.crm_references).toEqual({ ...expectedRefs, activity_id: 71 });
    expect((await delivered(unmatched.json.event_id)).body).not.toHaveProperty('crm_references');
  });

  it('refuse a credit_id that names no credit of the user', async () => {
    const res = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('someone-else', 'ub-x', 'Created', { credit_id: '1' }));
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('credit_id: no credit "1" for user_id "someone-else"');
  });

  it('refuse a credit_id beyond 2^53 naming it with every digit (a double would name a neighbour)', async () => {
    const text = JSON.stringify(bonusEvent('u-ref', 'ub-big-credit', 'Created', { credit_id: 0 })).replace('"credit_id":0', '"credit_id":9007199254740993');
    const res = await relay(gw, 'POST', '/v1/integration/bonus', text);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('credit_id: no credit "9007199254740993" for user_id "u-ref"');
  });

  it('are sent once per (user_id, user_bonus_id, status): a retry answers the first event_id with Idempotent-Replayed, Ongoing is sent every time', async () => {
    const created = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('u-once', 'ub-once', 'Created'));
    const again = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('u-once', 'ub-once', 'Created'));
    const ongoing1 = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('u-once', 'ub-once', 'Ongoing'));
    const ongoing2 = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('u-once', 'ub-once', 'Ongoing'));
    const completed = await relay(gw, 'POST', '/v1/integration/bonus', bonusEvent('u-once', 'ub-once', 'Completed'));
    expect(again.status).toBe(202);
    expect(again.json.event_id).toBe(created.json.event_id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(created.headers.get('idempotent-replayed')).toBeNull();
    expect(ongoing2.json.event_id).not.toBe(ongoing1.json.event_id);
    expect(ongoing2.headers.get('idempotent-replayed')).toBeNull();
    await delivered(completed.json.event_id);
    expect(crm.forUser('u-once').map((r) => r.body.status)).toEqual(['Created', 'Ongoing', 'Ongoing', 'Completed']);
  });
});

describe('numbers, as written', () => {
  /** The body as the platform wrote it: text, so no number passes through a double on the way in. */
  const relayText = (method: 'POST' | 'PUT', path: string, text: string) => relay(gw, method, path, text);

  it.each(exactNumberEvents('u-digits').map((e) => [e.kind, e] as const))(
    '%s: ids above 2^53, 1e400, -1e-400 and 1.0, in the schema’s keys and outside them, reach the CRM byte for byte',
    async (_kind, e) => {
      const res = await relayText(e.method, e.path, e.text);
      expect(res.status, JSON.stringify(res.json)).toBe(202);
      expect((await delivered(res.json.event_id)).raw).toBe(e.text);
      // And /admin/events shows the body as sent, every digit kept.
      const listed = await fetch(`${gw.url}/admin/events?user_id=u-digits`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } }).then((r) => r.text());
      expect(listed).toContain(e.text);
    },
  );

  it('a bonus event named by credit_id loses credit_id and gains crm_references, every other number as written', async () => {
    const credit = await gw.post('/bonus/credit', { user_id: 'u-ref', bonus_code: 'B20' }, { 'x-crm-id': 'g-9', 'x-crm-activityid': '9007199254740993' });
    expect(credit.status).toBe(200);
    const rest = `"user_id":"u-ref","user_bonus_id":"ub-digits","bonus_id":"b-1","bonus_code":"B20","status":"Created","type":"Gift","product":"Casino","amount":1.10,"currency":"EUR","exchange_rate":1,"timestamp":"2026-11-24T10:00:00Z","origin":"o","meta":{"seq":98765432109876543210}`;
    const res = await relayText('POST', '/v1/integration/bonus', `{"credit_id":"${credit.json.credit_id}",${rest}}`);
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    // An X-Crm-* id beyond 2^53 goes out as the integer it is, every digit kept.
    expect((await delivered(res.json.event_id)).raw).toBe(`{${rest},"crm_references": {"id":"g-9","activity_id":9007199254740993}}`);
  });

  it('keeps a push conversion’s 64-bit user id, an integer as written (1.0 too), as the order key and in the body stored', async () => {
    const metadata = catalogueExamples('u-push').push_conversion!.valid.metadata as Record<string, unknown>;
    const text = JSON.stringify({ action: 'read', metadata: { ...metadata, conversion_crm_userid: 0, conversion_crm_activityid: 0 } })
      .replace('"conversion_crm_userid":0', '"conversion_crm_userid":9007199254740993')
      .replace('"conversion_crm_activityid":0', '"conversion_crm_activityid":1.0');
    const res = await relayText('POST', '/webhook/callback/push/', text);
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    // Stored as received: this is what the push webhook is sent (this fake CRM takes only the Integration API's key).
    const row = await findEventById(gw.gateway.ledger.db, res.json.event_id);
    expect(row).toMatchObject({ payload_json: text, user_id: 'push:9007199254740993' });
  });

  const payment = (change: string) =>
    `{"user_id":"u-refused","payment_id":1,"vendor_id":"v","amount":1,"currency":"EUR","timestamp":"2026-11-24T10:00:00Z","origin":"o","status":"Approved","type":"Credit",${change}}`;
  const PAYMENT = '/v1/integration/payment';
  it.each([
    ['a fee of -1e-400 (below 0 exactly; a double reads -0)', PAYMENT, payment('"fee_amount":-1e-400'), 'fee_amount: must be 0 or more (got -1e-400)'],
    [
      'a deposit_count of -0.000000000000000000001',
      PAYMENT,
      payment('"deposit_count":-0.000000000000000000001'),
      'deposit_count: must be 0 or more (got -0.000000000000000000001)',
    ],
    [
      'a number whose exponent the CRM’s checker cannot read, where a minimum compares it',
      PAYMENT,
      payment('"exchange_rate":1e99999999999999999999'),
      "exchange_rate: cannot be compared with 0 by the CRM's checker",
    ],
    ['a number where an object goes', PAYMENT, payment('"meta":1e400'), 'meta: must be an object (got 1e400)'],
    [
      'a negative cart_id beyond 2^53',
      '/v1/integration/cart',
      catalogueExamplesText('cart', 'u-refused').replace('"cart_id":5', '"cart_id":-9007199254740993'),
      'cart_id: must be 0 or more (got -9007199254740993)',
    ],
    [
      'a balance of -1e-400, nested',
      '/v1/integration/user/balances',
      '{"user_id":"u-refused","timestamp":"2026-11-24T10:00:00Z","origin":"o","balances":[{"amount":-1e-400,"currency":"EUR","key":"real_money","exchange_rate":1}]}',
      'balances.0.amount: must be 0 or more (got -1e-400)',
    ],
    [
      'a push user id of 1e-400 (not an integer)',
      '/webhook/callback/push/',
      pushText('"conversion_crm_userid":1e-400'),
      'metadata.conversion_crm_userid: must be an integer (got 1e-400)',
    ],
    [
      'a push user id of 1.5',
      '/webhook/callback/push/',
      pushText('"conversion_crm_userid":1.5'),
      'metadata.conversion_crm_userid: must be an integer (got 1.5)',
    ],
  ])('refuses %s with 400 naming the field, as the CRM would', async (_label, path, text, error) => {
    const res = await relayText('POST', path, text);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: expect.stringContaining(error), code: 400 });
  });
});

function catalogueExamplesText(kind: string, userId: string): string {
  return JSON.stringify(catalogueExamples(userId)[kind]!.valid);
}

function pushText(userId: string): string {
  const metadata = catalogueExamples('u-refused').push_conversion!.valid.metadata as Record<string, unknown>;
  return JSON.stringify({ action: 'read', metadata: { ...metadata, conversion_crm_userid: 0 } }).replace('"conversion_crm_userid":0', userId);
}

describe('delivery', () => {
  it("keeps each user's order under concurrent acceptance while the CRM refuses now and then", async () => {
    crm.failNext(15, 503);
    const users = Array.from({ length: 12 }, (_, i) => `u-order-${i}`);
    const accepted = new Map<string, string[]>();
    // Every user's events are sent concurrently too: acceptance order is the order the gateway committed them in.
    await Promise.all(
      users.flatMap((user) =>
        Array.from({ length: 8 }, (_, n) =>
          relay(gw, 'POST', '/v1/integration/custom', thinEvent(user, { notification_type: 'step', data: { n: String(n) } })).then((res) => {
            expect(res.status).toBe(202);
            accepted.set(user, [...(accepted.get(user) ?? []), res.json.event_id]);
          }),
        ),
      ),
    );
    const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    for (const user of users) {
      await waitFor(() => crm.forUser(user).length === 8, 15_000, `8 events of ${user}`);
      // The outbox lists newest first: reversed, it is the order of acceptance.
      const listed = await gw.get(`/admin/events?user_id=${user}`, admin);
      const acceptance = listed.json.events.map((e: { event_id: string }) => e.event_id).reverse();
      expect([...acceptance].sort()).toEqual([...accepted.get(user)!].sort());
      expect(crm.forUser(user).map((r) => r.eventId)).toEqual(acceptance);
    }
    expect(crm.refusedCount).toBeGreaterThanOrEqual(15);
  });

  it('delivers an event well under a second after accepting it when nothing is queued (median of 15)', async () => {
    const lags: number[] = [];
    for (let i = 0; i < 15; i++) {
      const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent('u-lag'));
      const acceptedAt = Date.now();
      lags.push((await delivered(res.json.event_id)).at - acceptedAt);
    }
    lags.sort((a, b) => a - b);
    expect(lags[7]!).toBeLessThan(500);
  });

  it('stops within the shutdown budget while the CRM hangs, and keeps the event for later', async () => {
    const slow = await new FakeIntegrationApi().start();
    slow.delayMs = 30_000;
    const dir = mkdtempSync(join(tmpdir(), 'relay-hang-'));
    const own = await startTestGateway(
      { relay: { api_keys: [RELAY_KEY], poll_interval: '10ms' }, crm: { integration: { url: slow.url } }, server: { shutdown_timeout: '8s' } },
      { dir },
    );
    try {
      const res = await relay(own, 'POST', '/v2/integration/login', thinEvent('u-hang'));
      await waitFor(() => slow.arrivedCount === 1, 5_000, 'the send in flight');
      const started = Date.now();
      // close() throws past server.shutdown_timeout; the CRM would hold a send for 30 s.
      await own.close();
      expect(Date.now() - started).toBeLessThan(8_000);
      const ledger = openLedger({ url: testDatabaseUrl(dir), sqlite_synchronous: 'normal', pool_size: 2 });
      try {
        expect(await findEventById(ledger.db, res.json.event_id)).toMatchObject({ sent_at: null, dead: 0, attempts: 1 });
      } finally {
        await ledger.close();
      }
    } finally {
      await slow.stop();
      await dropTestDatabase(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('loses and doubles nothing while the CRM is down for a while, and the backlog shows in /metrics', async () => {
    await crm.stop();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await relay(gw, 'PUT', '/v2/integration/user', thinEvent(`u-down-${i % 5}`))).json.event_id);
    const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    await waitFor(
      async () => {
        const page = await gw.get('/admin/events?status=pending', admin);
        return page.json.events.some((e: { attempts: number; last_error: string | null }) => e.attempts > 1 && e.last_error?.includes('CRM unreachable'));
      },
      10_000,
      'failed attempts',
    );
    const metrics = await fetch(`${gw.url}/metrics`, { headers: admin }).then((r) => r.text());
    expect(Number(/^sms_gateway_crm_events_outbox\{state="retrying"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(Number(/^sms_gateway_crm_events_oldest_unsent_age_seconds (\S+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    const events = await eventPanel.load(gw.gateway.ledger.db);
    expect(events.unsent).toBeGreaterThanOrEqual(30);
    expect(events.oldestUnsentAt).not.toBeNull();
    const page = await renderedConsole();
    expect(Number(/<td data-events="unsent">(\d+)<\/td>/.exec(page)?.[1])).toBeGreaterThanOrEqual(30);
    expect(page).toContain('href="/console/dead-events"');
    expect(page).toMatch(/<td data-events="oldest" title="[^"]+ UTC">\d+ min<\/td>/);
    await crm.start();
    await waitFor(() => ids.every((id) => crm.accepted.some((r) => r.eventId === id)), 15_000, 'all 30 events after the CRM came back');
    const counts = new Map<string, number>();
    for (const r of crm.accepted) counts.set(r.eventId, (counts.get(r.eventId) ?? 0) + 1);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});
