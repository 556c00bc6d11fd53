/**
 * The console's dead lists on one real gateway (the fake Integration API refusing, relay.max_attempts 1 so one
 * refusal dead-letters an event), and the events a message caused on its timeline.
 *
 * Dead CRM events (docs/operations.md "Console and admin API" and docs/relay.md): listed with reason, attempts, type,
 * user and age in GET /admin/events and on /console/dead-events, replayed one, ticked or by filter (the console's
 * posts carry the session's CSRF token), hostile parameters refused naming them. Dead credits
 * (/console/dead-credits): a fake operator endpoint at operator.credits.url refuses a credit until it is dead
 * (operator.credits.max_attempts 2), the page lists it, and its replay from the page delivers it once. The User
 * Consents event a Twilio 21610 at send causes, on that message's timeline and nowhere else.
 *
 * The pure parts are tested beside their code: test/events/event-query.test.ts, test/console/replay-forms.test.ts,
 * and the lists' query plans in test/ledger/console-query-plans.test.ts.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const EVENT_ID = '01939a7e-1234-7abc-8def-0123456789ab';
const crm = new FakeIntegrationApi();
let gw: TestGateway;
let twilio: TwilioFake;
/** The operator's bonus engine (operator.credits.url): refuses every push while `refuseCredits`, quoting a number. */
let wallet: Server;
let refuseCredits = true;
const creditPushes: Array<{ creditId: string; status: number }> = [];

beforeAll(async () => {
  await crm.start();
  twilio = await startTwilioFake();
  wallet = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const status = refuseCredits ? 503 : 200;
    creditPushes.push({ creditId: String(JSON.parse(Buffer.concat(chunks).toString('utf8')).credit_id), status });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(refuseCredits ? '{"error":"<b>wallet closed</b> for +447700900123"}' : '{}');
  });
  wallet.listen(0, '127.0.0.1');
  await once(wallet, 'listening');
  gw = await startTestGateway({
    operator: {
      credits: {
        url: `http://127.0.0.1:${(wallet.address() as AddressInfo).port}/credits`,
        poll_interval: '20ms',
        retry_initial_ms: 20,
        retry_max_ms: 50,
        max_attempts: 2,
      },
    },
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100, max_attempts: 1 },
    crm: { integration: { url: crm.url } },
    providers: { tw: { type: 'twilio', base_url: twilio.url, account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+447700900999' } },
  });
});
afterAll(async () => {
  await gw?.close();
  await twilio?.close();
  await crm.stop();
  await new Promise<void>((resolve) => (wallet ? wallet.close(() => resolve()) : resolve()));
});

/** The console with a session: its cookie and the CSRF token of its forms. */
async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${gw.url}/console/dead-events`, { headers: { cookie } })).text();
  return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page)![1]! };
}

const consolePage = async (path: string, cookie: string) => {
  const res = await fetch(gw.url + path, { headers: { cookie } });
  return { status: res.status, text: await res.text() };
};
const consolePost = (path: string, cookie: string, fields: Array<[string, string]>) =>
  fetch(gw.url + path, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
const deadEvents = async (query = '') =>
  (await gw.get(`/admin/events?status=dead${query}`, admin)).json.events as Array<{
    event_id: string;
    type: string;
    user_id: string;
    attempts: number;
    http_status: number;
    last_error: string;
  }>;

describe('dead CRM events', () => {
  const ids = new Map<string, string>();

  beforeAll(async () => {
    crm.failNext(3, 503);
    ids.set('a-login', (await relay(gw, 'POST', '/v2/integration/login', thinEvent('dead-a'))).json.event_id);
    ids.set('a-update', (await relay(gw, 'PUT', '/v2/integration/user', thinEvent('dead-a'))).json.event_id);
    ids.set('b-login', (await relay(gw, 'POST', '/v2/integration/login', thinEvent('dead-b'))).json.event_id);
    await waitFor(async () => (await deadEvents()).length === 3, 10_000, 'three dead events');
  });

  it('lists them in the admin API with type, user, attempts and the CRM’s answer, filtered by type and user', async () => {
    const all = await deadEvents();
    expect(all.map((e) => e.event_id)).toEqual([ids.get('b-login'), ids.get('a-update'), ids.get('a-login')]);
    expect(all[0]).toMatchObject({ type: 'LOGIN_V2', user_id: 'dead-b', attempts: 1, http_status: 503 });
    expect((await deadEvents('&type=LOGIN_V2')).map((e) => e.user_id)).toEqual(['dead-b', 'dead-a']);
    expect((await deadEvents('&type=LOGIN_V2&user_id=dead-a')).map((e) => e.event_id)).toEqual([ids.get('a-login')]);
  });

  it.each([
    ['?status=dead&type=__proto__', 'type:'],
    ['?status=dead&user_id=', 'user_id:'],
    [`?user_id=${'u'.repeat(257)}`, 'user_id:'],
    ['?status=dead&status=sent', 'status:'],
    ['?cursor=abc', 'cursor:'],
    ['?constructor=1', '"constructor": unknown query parameter'],
  ])('GET /admin/events (hostile query %#) answers 400 naming the parameter', async (query, error) => {
    const res = await gw.get(`/admin/events${query}`, admin);
    expect(res.status).toBe(400);
    expect(res.json.error).toContain(error);
  });

  it.each([
    ['{"type":"LOST"}', 'type:'],
    ['{"type":"__proto__"}', 'type:'],
    ['{"user_id":""}', 'user_id:'],
    ['{"user_id":7}', 'user_id:'],
    ['{"event_ids":[]}', 'event_ids:'],
    ['{"__proto__":{"dead":0}}', 'body:'],
    ['{"constructor":1}', 'body:'],
    ['[]', 'body:'],
    ['{', 'body'],
  ])('POST /admin/events/replay %s answers 400 naming the field and replays nothing', async (body, error) => {
    const res = await gw.post('/admin/events/replay', body, admin);
    expect(res.status).toBe(400);
    expect(res.json.error).toContain(error);
    expect(await deadEvents()).toHaveLength(3);
  });

  it('lists them on the console page, refuses hostile filters and forms, and replays none without the session’s CSRF token', async () => {
    const { cookie, csrf } = await signIn();
    const page = await consolePage('/console/dead-events', cookie);
    expect(page.status).toBe(200);
    for (const id of ids.values()) expect(page.text).toContain(`data-event="${id}"`);
    expect(page.text).toContain('HTTP 503');
    expect(page.text).toContain('LOGIN_V2');
    const filtered = await consolePage('/console/dead-events?type=USER_UPDATE_V2&user_id=', cookie);
    expect(filtered.text).toContain(`data-event="${ids.get('a-update')}"`);
    expect(filtered.text).not.toContain(`data-event="${ids.get('a-login')}"`);
    for (const [query, error] of [
      ['?type=<script>', 'type: must be one of'],
      ['?status=dead', 'status: this list shows dead events only'],
      ['?__proto__=x', 'unknown query parameter'],
      ['?cursor=-5', 'cursor:'],
    ]) {
      const bad = await consolePage(`/console/dead-events${query}`, cookie);
      expect(bad.status, query).toBe(400);
      expect(bad.text).toContain(error!.replace('<', '&lt;'));
      expect(bad.text).not.toContain('<script>');
    }
    expect(await consolePage('/console/dead-events', '')).toMatchObject({ status: 401 });

    const forged = await consolePost('/console/events/replay', cookie, [
      ['csrf', 'forged'],
      ['action', 'matching'],
    ]);
    expect(forged.status).toBe(403);
    const noSession = await consolePost('/console/events/replay', '', [
      ['csrf', csrf],
      ['action', 'matching'],
    ]);
    expect(noSession.status).toBe(401);
    const hostile = await consolePost('/console/events/replay', cookie, [
      ['csrf', csrf],
      ['action', 'matching'],
      ['type', 'constructor'],
    ]);
    expect(hostile.status).toBe(400);
    expect(await hostile.text()).toContain('type: must be one of');
    expect(await deadEvents()).toHaveLength(3);
  });

  it('replays one, the ticked, and all matching a filter from the console, and the CRM then gets each once', async () => {
    const { cookie, csrf } = await signIn();
    const byUser = await consolePost('/console/events/replay', cookie, [
      ['csrf', csrf],
      ['action', 'matching'],
      ['type', ''],
      ['user_id', 'dead-b'],
    ]);
    expect(byUser.status).toBe(303);
    expect(byUser.headers.get('location')).toBe('/console/dead-events?replayed=1');
    await waitFor(() => crm.accepted.some((r) => r.eventId === ids.get('b-login')), 10_000, 'the replayed event of dead-b');
    expect(await deadEvents()).toHaveLength(2);

    const one = await consolePost('/console/events/replay', cookie, [
      ['csrf', csrf],
      ['only', ids.get('a-update')!],
    ]);
    expect(one.headers.get('location')).toBe('/console/dead-events?replayed=1');
    const ticked = await consolePost('/console/events/replay', cookie, [
      ['csrf', csrf],
      ['action', 'selected'],
      ['ids', ids.get('a-login')!],
      ['ids', EVENT_ID],
    ]);
    expect(ticked.headers.get('location')).toBe('/console/dead-events?replayed=1');
    await waitFor(() => [...ids.values()].every((id) => crm.accepted.some((r) => r.eventId === id)), 10_000, 'every replayed event');
    expect(await deadEvents()).toEqual([]);
    expect(crm.accepted.filter((r) => [...ids.values()].includes(r.eventId))).toHaveLength(3);
    const after = await consolePage('/console/dead-events?replayed=1', cookie);
    expect(after.text).toContain('Replayed 1 dead CRM event(s)');
    expect(after.text).toContain('No dead CRM event.');
    // The admin API's replay by filter: nothing left to replay.
    expect((await gw.post('/admin/events/replay', { type: 'LOGIN_V2', user_id: 'dead-a' }, admin)).json).toEqual({ replayed: 0 });
  });
});

describe('dead credits on the console', () => {
  const credit = new Map<string, string>();
  const deliveryOf = async (user: string, id: string) =>
    ((await gw.get(`/admin/credits?user_id=${user}`, admin)).json.credits as Array<{ credit_id: string; delivery: string }>).find((c) => c.credit_id === id)
      ?.delivery;

  beforeAll(async () => {
    expect((await gw.adminPut('/admin/bonuses', [{ text: 'CASH', value: 'CASH10' }])).status).toBe(200);
    for (const user of ['cr-a', 'cr-b']) {
      expect((await gw.adminPut(`/admin/users/${user}`, sampleUser(user))).status).toBe(201);
      const res = await gw.post('/bonus/credit/funds', { user_id: user, bonus_code: 'CASH10', amount: 5, currency: 'EUR' });
      expect(res.status).toBe(200);
      credit.set(user, res.json.credit_id as string);
    }
    for (const [user, id] of credit) await waitFor(async () => (await deliveryOf(user, id)) === 'dead', 10_000, `the credit of ${user} dead`);
  });

  it('lists them with user, bonus code, amount, attempts and the operator’s last answer, escaped and masked; the summary counts them', async () => {
    const { cookie, csrf } = await signIn();
    const page = await consolePage('/console/dead-credits', cookie);
    expect(page.status).toBe(200);
    expect(page.text.indexOf(`data-credit="${credit.get('cr-b')}"`)).toBeLessThan(page.text.indexOf(`data-credit="${credit.get('cr-a')}"`));
    expect(page.text).toMatch(new RegExp(`data-credit="${credit.get('cr-a')}"[^]*cr-a</a></td><td>funds</td><td>CASH10</td><td class="num">5 EUR</td>`));
    expect(page.text).toContain('HTTP 503: {&quot;error&quot;:&quot;&lt;b&gt;wallet closed&lt;/b&gt;');
    expect(page.text).not.toContain('+447700900123');
    expect(page.text).not.toContain('<b>wallet');
    expect(page.text).toContain('<td class="num">2</td>');
    expect(page.text).toContain(`name="csrf" value="${csrf}"`);
    expect(page.text).toContain('<a href="/console/dead-credits">Dead credits</a>');
    const mine = await consolePage('/console/dead-credits?user_id=cr-a', cookie);
    expect(mine.text).toContain(`data-credit="${credit.get('cr-a')}"`);
    expect(mine.text).not.toContain(`data-credit="${credit.get('cr-b')}"`);
    const bad = await consolePage('/console/dead-credits?user_id=<script>&cursor=x', cookie);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('cursor:');
    expect(bad.text).not.toContain('<script>');
    expect(await consolePage('/console/dead-credits', '')).toMatchObject({ status: 401 });

    const dashboard = await consolePage('/console', cookie);
    expect(dashboard.text).toMatch(
      /<section id="credits">[^]*<td data-credits="due">0<\/td><td data-credits="retrying">0<\/td><td data-credits="dead">2<\/td>[^]*href="\/console\/dead-credits"/,
    );

    expect(
      (
        await consolePost('/console/credits/replay', cookie, [
          ['csrf', 'forged'],
          ['action', 'matching'],
        ])
      ).status,
    ).toBe(403);
    expect(
      (
        await consolePost('/console/credits/replay', '', [
          ['csrf', csrf],
          ['action', 'matching'],
        ])
      ).status,
    ).toBe(401);
    const hostile = await consolePost('/console/credits/replay', cookie, [
      ['csrf', csrf],
      ['only', '1; drop table operator_credits'],
    ]);
    expect(hostile.status).toBe(400);
    expect(await hostile.text()).toContain('only: must be one credit id');
    expect(await deliveryOf('cr-a', credit.get('cr-a')!)).toBe('dead');
  });

  it('replays one from its row and the rest by the user filter, and each is then delivered once', async () => {
    const { cookie, csrf } = await signIn();
    refuseCredits = false;
    const one = await consolePost('/console/credits/replay', cookie, [
      ['csrf', csrf],
      ['only', credit.get('cr-a')!],
    ]);
    expect(one.status).toBe(303);
    expect(one.headers.get('location')).toBe('/console/dead-credits?replayed=1');
    await waitFor(async () => (await deliveryOf('cr-a', credit.get('cr-a')!)) === 'delivered', 10_000, 'the replayed credit delivered');
    expect(await deliveryOf('cr-b', credit.get('cr-b')!)).toBe('dead');
    const byUser = await consolePost('/console/credits/replay', cookie, [
      ['csrf', csrf],
      ['action', 'matching'],
      ['user_id', 'cr-b'],
    ]);
    expect(byUser.headers.get('location')).toBe('/console/dead-credits?replayed=1');
    await waitFor(async () => (await deliveryOf('cr-b', credit.get('cr-b')!)) === 'delivered', 10_000, 'the credit of cr-b delivered');
    for (const id of credit.values()) {
      const pushes = creditPushes.filter((p) => p.creditId === id);
      expect(pushes.map((p) => p.status)).toEqual([503, 503, 200]);
    }
    const after = await consolePage('/console/dead-credits?replayed=1', cookie);
    expect(after.text).toContain('Replayed 1 dead credit(s)');
    expect(after.text).toContain('No dead credit.');
    expect((await consolePage('/console', cookie)).text).toContain('<td data-credits="dead">0</td>');
  });
});

describe('the events a message caused', () => {
  it('shows the User Consents event of a Twilio 21610 on that message’s timeline, and no other event of the player', async () => {
    await gw.adminPut('/admin/users/optout', sampleUser('optout', { mobile_prefix: '+1', mobile: '5005550004', consents: [{ type: 'sms', opted_in: true }] }));
    const refused = await gw.post(
      '/channels/sms/single',
      smsMessage('to-optout', { provider_name: 'tw', recipient: '+15005550004', activity: { id: 'to-optout', user_id: 'optout' } }),
    );
    expect(refused.status).toBe(400);
    // The same player's consents changed again by the operator at once: an event of the player, not of the message.
    expect((await gw.adminPut('/admin/users/optout/consents', { consents: [{ type: 'email', opted_in: true }] })).status).toBeLessThan(300);
    const message = await gw.get('/admin/messages?activity_id=to-optout', admin);
    const smsId = message.json.messages[0].sms_id as string;
    const story = await gw.get(`/admin/messages/${smsId}`, admin);
    expect(story.json.events).toEqual([expect.objectContaining({ type: 'USER_CONSENTS_V2', user_id: 'optout' })]);
    const all = (await gw.get('/admin/events?user_id=optout&type=USER_CONSENTS_V2', admin)).json.events;
    expect(all).toHaveLength(2);
    expect(story.json.timeline.map((e: { kind: string }) => e.kind)).toEqual(['received', 'send', 'event']);
    expect(story.json.timeline[2].summary).toContain('USER_CONSENTS_V2 event for user optout');

    const other = await gw.post('/channels/sms/single', smsMessage('to-optout-2', { activity: { id: 'to-optout-2', user_id: 'optout' } }));
    expect((await gw.get(`/admin/messages/${other.json.sms_id}`, admin)).json.events).toEqual([]);

    const { cookie } = await signIn();
    const page = await consolePage(`/console/messages/${smsId}`, cookie);
    expect(page.text).toMatch(/<li data-kind="event">[^]*USER_CONSENTS_V2 event for user optout/);
  });
});
