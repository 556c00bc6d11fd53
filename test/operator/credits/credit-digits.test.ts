/**
 * Every digit of the CRM's credit request reaches the operator's platform as written, as the relay's events do
 * (docs/relay.md "Numbers"): the credits path re-serialised the CRM's body through doubles. Through the real HTTP server,
 * with the operator-platform fake keeping the raw text of what it receives: the http backend's forwarded credit and
 * consents bodies, the platform's user record answered to the CRM, the sql backend's push to operator.credits.url,
 * and GET /admin/credits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOperatorPlatform, type FakeOperatorPlatform } from '../../fakes/operator-platform.js';
import { crmUserDetails, sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, TEST_ADMIN_KEY, TEST_API_KEY, waitFor, type TestGateway } from '../../helpers/gateway.js';

/** Integers a double rounds (2^53 + 1 becomes 2^53, a real neighbouring id) and an amount with 19 significant digits. */
const ID = '9007199254740993';
const REF = '98765432109876543210';
const AMOUNT = '12345678901234567.25';
const headers = {
  'X-Crm-Activityid': ID,
  'X-Crm-Actionid': '18446744073709551615',
  'X-Crm-Triggerhash': 'th-big',
  'X-Crm-Playeroriginid': '9223372036854775807',
};

/** A funds credit written by hand, so the numbers are the text the CRM sends, never a double's. */
const fundsBody = (userId: string) =>
  `{"user_id":${userId},"bonus_code":"CASH10","amount":${AMOUNT},"currency":"EUR","bonus_id":${ID},"meta":{"psp_ref":${REF},"list":[${ID},1e400]}}`;

let platform: FakeOperatorPlatform;
beforeAll(async () => {
  platform = await startFakeOperatorPlatform();
});
afterAll(async () => {
  await platform.close();
});

/** The fake saw each number with all its digits, in the key the CRM used. */
function expectExactRequest(text: string) {
  expect(text).toContain(`"amount":${AMOUNT}`);
  expect(text).toContain(`"bonus_id":${ID}`);
  expect(text).toContain(`"psp_ref":${REF}`);
  expect(text).toContain(`"list":[${ID},1e400]`);
}

describe('http backend: the forwarded credit keeps every digit', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ operator: { backend: 'http', base_url: platform.url, timeout: '2s' } });
    platform.users.set('u-big', sampleUser('u-big'));
  });
  afterAll(() => gw.close());

  it('forwards POST /bonus/credit/funds with the body and X-Crm-* headers as written', async () => {
    platform.requests.length = 0;
    const res = await gw.post('/bonus/credit/funds', fundsBody('"u-big"'), headers);
    expect(res.status).toBe(200);
    const forwarded = platform.requests.find((r) => r.path === '/bonus/credit/funds')!;
    expectExactRequest(forwarded.body);
    expect(forwarded.headers['x-crm-activityid']).toBe(ID);
    expect(forwarded.headers['x-crm-actionid']).toBe('18446744073709551615');
  });

  it('forwards POST /bonus/credit with a number the CRM adds as written', async () => {
    platform.requests.length = 0;
    const res = await gw.post('/bonus/credit', `{"user_id":"u-big","bonus_code":"FS","validity_amount":${REF}}`, {
      ...headers,
      'X-Crm-Triggerhash': 'th-bonus', // another action than the funds credit's, so it is forwarded, not answered as a repeat
    });
    expect(res.status).toBe(200);
    expect(platform.requests.find((r) => r.path === '/bonus/credit')!.body).toContain(`"validity_amount":${REF}`);
  });

  it('answers GET /userdetails with the segmentation numbers of the platform as written', async () => {
    const record = JSON.stringify(sampleUser('u-seg', { segmentation: { custom_segment: 'vip', account_ref: 'X', tier: 3 } }));
    platform.script('/userdetails/u-seg', { body: record.replace('"account_ref":"X"', `"account_ref":${ID},"wager_ref":${REF}`) });
    const res = await fetch(`${gw.url}/userdetails/u-seg`, { headers: { 'x-api-key': TEST_API_KEY } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain(`"account_ref":${ID},"wager_ref":${REF},"tier":3`);
    // Still the record the CRM takes, and a string where a number is refused.
    crmUserDetails.parse(JSON.parse(text));
    platform.script('/userdetails/u-seg', { body: record.replace('"custom_segment":"vip"', `"custom_segment":${ID}`) });
    expect((await gw.get('/userdetails/u-seg')).status).toBe(502);
  });

  it('forwards POST /userconsents with a number the CRM adds as written', async () => {
    platform.requests.length = 0;
    const res = await gw.post('/userconsents/u-big', `{"consents":[{"type":"email","opted_in":true}],"request_id":${ID}}`);
    expect(res.status).toBe(200);
    expect(platform.requests.find((r) => r.method === 'POST' && r.path === '/userconsents/u-big')!.body).toContain(`"request_id":${ID}`);
  });
});

describe('sql backend: the push to operator.credits.url and GET /admin/credits keep every digit', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      operator: { credits: { url: `${platform.url}/wallet/credits`, poll_interval: '50ms', retry_initial_ms: 20, retry_max_ms: 50, max_attempts: 2 } },
    });
    expect((await gw.adminPut(`/admin/users/${ID}`, sampleUser(ID))).status).toBe(201);
    expect((await gw.adminPut('/admin/bonuses', [{ text: 'CASH', value: 'CASH10' }])).status).toBe(200);
  });
  afterAll(() => gw.close());

  it('pushes the amount, a numeric user_id, the ids the CRM adds and the X-Crm-* ids with every digit', async () => {
    platform.requests.length = 0;
    const res = await gw.post('/bonus/credit/funds', fundsBody(ID), headers);
    expect(res.status).toBe(200);
    const creditId = res.json.credit_id as string;
    await waitFor(async () => platform.requests.some((r) => r.path === '/wallet/credits'), 10_000, 'the credit pushed');
    const pushed = platform.requests.find((r) => r.path === '/wallet/credits')!;
    expect(pushed.headers['idempotency-key']).toBe(creditId);
    const text = pushed.body;
    expectExactRequest(text);
    expect(text).toContain(`"user_id":"${ID}"`);
    expect(text).toContain(`"user_id":${ID},`); // the request as the CRM wrote it
    // The top-level amount too, not only the request's.
    expect(text.split(`"amount":${AMOUNT}`)).toHaveLength(3);
    // The references as a bonus event carries them: integers, of any size.
    expect(text).toContain(`"activity_id":${ID}`);
    expect(text).toContain('"action_id":18446744073709551615');
    expect(text).toContain('"player_origin_id":9223372036854775807');
  });

  it.each([
    ['-1e-400', 'amount: must be 0 or more'], // below 0 by exact value (a double reads -0)
    ['1e400', 'amount: must be a number below 1.8e308'], // no double holds it (JSON.parse reads Infinity)
  ])('refuses the amount %s by its exact value, naming it', async (amount, error) => {
    const res = await gw.post('/bonus/credit/funds', `{"user_id":"${ID}","bonus_code":"CASH10","amount":${amount},"currency":"EUR"}`);
    expect(res.status).toBe(400);
    expect(res.json.error).toContain(error);
  });

  it.each([
    ['a "__proto__" key in meta', `"meta":{"__proto__":{"amount":1},"psp_ref":${REF}}`, /meta\.__proto__/],
    ['meta nested 5,000 deep', `"meta":{"deep":${'['.repeat(5000)}${']'.repeat(5000)}}`, /max_json_depth/],
    ['"amount" given twice', `"amount":1,"meta":{}`, /amount/],
  ])('refuses a funds credit with %s with 400 naming it, and pushes nothing', async (_label, extra, naming) => {
    platform.requests.length = 0;
    const res = await gw.post('/bonus/credit/funds', `{"user_id":"${ID}","bonus_code":"CASH10","amount":${AMOUNT},"currency":"EUR",${extra}}`, {
      ...headers,
      'X-Crm-Triggerhash': `th-hostile-${_label}`,
    });
    expect({ status: res.status, code: res.json.code }).toEqual({ status: 400, code: 400 });
    expect(res.json.error).toMatch(naming);
    const marker = await gw.post('/bonus/credit/funds', fundsBody(ID), { ...headers, 'X-Crm-Triggerhash': `th-marker-${_label}` });
    expect(marker.status).toBe(200);
    await waitFor(
      async () => platform.requests.some((r) => r.path === '/wallet/credits' && r.body.includes(marker.json.credit_id)),
      10_000,
      'the marker pushed',
    );
    expect(platform.requests.filter((r) => r.path === '/wallet/credits')).toHaveLength(1);
  });

  it('shows the credit in GET /admin/credits with every digit', async () => {
    const res = await fetch(`${gw.url}/admin/credits?user_id=${ID}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain(`"user_id":"${ID}"`);
    expect(text).toContain(`"amount":${AMOUNT}`);
    expect(text).toContain(`"activity_id":${ID}`);
    expect(text).toContain('"action_id":18446744073709551615');
  });

  it('shows a dead credit on /console/dead-credits with the amount as written', async () => {
    platform.script('/wallet/credits', { status: 503 });
    platform.script('/wallet/credits', { status: 503 });
    const res = await gw.post('/bonus/credit/funds', fundsBody(`"${ID}"`));
    expect(res.status).toBe(200);
    const creditId = res.json.credit_id as string;
    await waitFor(
      async () => {
        const answer = await fetch(`${gw.url}/admin/credits?user_id=${ID}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
        return ((await answer.json()) as { credits: Array<{ credit_id: string; delivery: string }> }).credits.some(
          (c) => c.credit_id === creditId && c.delivery === 'dead',
        );
      },
      10_000,
      'the credit dead',
    );
    const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await fetch(`${gw.url}/console/dead-credits?user_id=${ID}`, { headers: { cookie } })).text();
    expect(page).toMatch(new RegExp(`data-credit="${creditId}"[^]*<td class="num">${AMOUNT.replace('.', '\\.')} EUR</td>`));
  });
});
