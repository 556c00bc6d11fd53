import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOperatorPlatform, type FakeOperatorPlatform } from '../../fakes/operator-platform.js';
import { crmBlocks, crmBonusList, crmConsents, crmReconciliation, crmUserDetails, errorBody, sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

let platform: FakeOperatorPlatform;
let gw: TestGateway;

beforeAll(async () => {
  platform = await startFakeOperatorPlatform();
  gw = await startTestGateway({
    operator: { backend: 'http', base_url: platform.url, headers: { 'x-platform-key': 'platform-secret' }, timeout: '500ms' },
  });
});
afterAll(async () => {
  await gw.close();
  await platform.close();
});
beforeEach(() => {
  platform.users.set('u-1', sampleUser('u-1', { verified_at: null, segmentation: null }));
  platform.consents.set('u-1', [
    { type: 'Email', opted_in: true },
    { type: 'SMS', opted_in: false },
    { type: 'Telephone', opted_in: false },
    { type: 'PostMail', opted_in: true },
    { type: 'SiteNotification', opted_in: true },
    { type: 'PushNotification', opted_in: true },
  ]);
  platform.requests.length = 0;
});

describe('http backend: reads', () => {
  it('forwards GET /userdetails with the configured headers and answers the CRM shape', async () => {
    const res = await gw.get('/userdetails/u-1');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(crmUserDetails.parse(res.json)).toEqual(sampleUser('u-1'));
    expect(platform.requests[0]).toMatchObject({ method: 'GET', path: '/userdetails/u-1' });
    expect(platform.requests[0]!.headers['x-platform-key']).toBe('platform-secret');
  });

  it('passes a 404 from the platform on as 404', async () => {
    const res = await gw.get('/userdetails/ghost');
    expect(res.status).toBe(404);
    errorBody.parse(res.json);
  });

  it('answers consents with the exact type spellings, whatever case the platform used', async () => {
    const res = await gw.get('/userconsents/u-1');
    expect(res.status).toBe(200);
    const { consents } = crmConsents.parse(res.json);
    expect(consents.map((c) => c.type)).toEqual(['email', 'sms', 'telephone', 'postMail', 'siteNotification', 'pushNotification']);
  });

  it('answers blocks and the bonus list in the CRM shapes', async () => {
    crmBlocks.parse((await gw.get('/userblocks/u-1')).json);
    crmBonusList.parse((await gw.get('/bonus/list')).json);
  });

  it.each([
    ['/userdetails/u-1', '{"user_id":"u-1",', /not JSON/],
    ['/userdetails/u-1', { ...sampleUser('u-1'), birth_date: '02/03/1992' }, /birth_date/],
    ['/userdetails/u-1', { ...sampleUser('u-1'), is_blocked: 'no' }, /is_blocked/],
    ['/userdetails/u-1', { ...sampleUser('u-1'), roles: undefined }, /roles: is required/],
    ['/userdetails/u-1', sampleUser('someone-else'), /user_id/],
    ['/userconsents/u-1', { consents: [{ type: 'email', opted_in: true }] }, /sms exactly once/],
    ['/userblocks/u-1', { blocks: [{ active: true, type: 'Banned', note: '' }] }, /blocks\.0\.type/],
    ['/bonus/list', { Data: [{ text: 'x' }], Success: true, Errors: [] }, /Data\.0\.value/],
  ])('answers 502 naming the field when GET %s comes back malformed (%j)', async (path, body, field) => {
    platform.script(path, { body });
    const res = await gw.get(path);
    expect(res.status).toBe(502);
    expect(errorBody.parse(res.json).error).toMatch(field);
  });

  it('answers 502 for a platform error and 504 when it is too slow', async () => {
    platform.script('/userdetails/u-1', { status: 500, body: { error: 'db down' } });
    const failed = await gw.get('/userdetails/u-1');
    expect(failed.status).toBe(502);
    expect(failed.json.error).toMatch(/500.*db down/);
    platform.script('/userdetails/u-1', { delayMs: 1_500, body: sampleUser('u-1') });
    const slow = await gw.get('/userdetails/u-1');
    expect(slow.status).toBe(504);
    errorBody.parse(slow.json);
  });

  it('answers a bonus list error as {error, code} and nothing else, as the CRM’s error schema allows', async () => {
    platform.script('/bonus/list', { status: 503, body: 'maintenance' });
    const res = await gw.get('/bonus/list');
    expect(res.status).toBe(502);
    expect(errorBody.parse(res.json)).toEqual({ error: expect.stringMatching(/maintenance/), code: 502 });
  });

  it.each([
    ['a username of 2 characters', { username: 'ab' }, /username: must be 3 to 255 characters/],
    ['a sex outside the CRM list', { sex: 'M' }, /sex: must be one of/],
    ['an e-mail that is not one', { email: 'not-an-email' }, /email: must be an e-mail address/],
    ['a registration_date that is not a date-time', { registration_date: '2015-03-02' }, /registration_date: must be an RFC 3339/],
  ])('answers 502 naming the platform field for %s', async (_label, change, field) => {
    platform.users.set('u-1', sampleUser('u-1', change));
    const res = await gw.get('/userdetails/u-1');
    expect(res.status).toBe(502);
    expect(errorBody.parse(res.json).error).toMatch(field);
  });

  it('answers verified_at "" when the platform leaves it out, and drops keys outside the CRM list', async () => {
    const { verified_at: _left, ...without } = sampleUser('u-1');
    platform.users.set('u-1', { ...without, loyalty_tier: 'gold' });
    const res = await gw.get('/userdetails/u-1');
    expect(crmUserDetails.parse(res.json)).toEqual(sampleUser('u-1'));
  });
});

describe('http backend: writes', () => {
  it('forwards a consent change as received, unknown fields included', async () => {
    const body = { consents: [{ opted_in: false, type: 'sms' }], channel_hint: 'page' };
    expect((await gw.post('/userconsents/u-1', body)).status).toBe(200);
    expect(JSON.parse(platform.requests[0]!.body)).toEqual(body);
  });

  it('forwards a credit with the X-Crm-* headers and forwards a repeat no more', async () => {
    const headers = { 'X-Crm-Activityid': '10', 'X-Crm-Actionid': '20', 'X-Crm-Triggerhash': 'th-http', 'X-Crm-Id': 'guid-1' };
    const first = await gw.post('/bonus/credit', { user_id: 'u-1', bonus_code: 'FS' }, headers);
    expect(first.status).toBe(200);
    const repeats = await Promise.all(Array.from({ length: 5 }, () => gw.post('/bonus/credit', { user_id: 'u-1', bonus_code: 'FS' }, headers)));
    expect(repeats.every((r) => r.json.credit_id === first.json.credit_id)).toBe(true);
    const forwarded = platform.requests.filter((r) => r.path === '/bonus/credit');
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]!.headers).toMatchObject({ 'x-crm-activityid': '10', 'x-crm-triggerhash': 'th-http', 'x-crm-id': 'guid-1' });
  });

  it('forwards 20 concurrent identical credits once', async () => {
    const headers = { 'X-Crm-Activityid': '11', 'X-Crm-Actionid': '21', 'X-Crm-Triggerhash': 'th-par' };
    platform.script('/bonus/credit/funds', { delayMs: 100, body: { Success: true, Errors: [] } });
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => gw.post('/bonus/credit/funds', { user_id: 'u-1', bonus_code: 'FS', amount: 5, currency: 'EUR' }, headers)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.json.credit_id)).size).toBe(1);
    expect(platform.requests.filter((r) => r.path === '/bonus/credit/funds')).toHaveLength(1);
  });

  it('forwards again after a failed attempt, and maps refusals to 4xx', async () => {
    const headers = { 'X-Crm-Activityid': '12', 'X-Crm-Actionid': '22', 'X-Crm-Triggerhash': 'th-retry' };
    platform.script('/bonus/credit', { status: 500, body: { Success: false, Errors: ['wallet busy'] } });
    const failed = await gw.post('/bonus/credit', { user_id: 'u-1', bonus_code: 'FS' }, headers);
    // The interface names 400 and 500 only; code keeps the finer reason.
    expect([failed.status, failed.json.code]).toEqual([500, 502]);
    expect(failed.json.error).toMatch(/wallet busy/);
    expect((await gw.post('/bonus/credit', { user_id: 'u-1', bonus_code: 'FS' }, headers)).status).toBe(200);
    expect(platform.requests.filter((r) => r.path === '/bonus/credit')).toHaveLength(2);

    platform.script('/bonus/credit', { status: 422, body: { error: 'unknown bonus' } });
    const refused = await gw.post('/bonus/credit', { user_id: 'u-1', bonus_code: 'NOPE' });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatch(/unknown bonus/);
    const ghost = await gw.post('/bonus/credit', { user_id: 'ghost', bonus_code: 'FS' });
    expect([ghost.status, ghost.json.code]).toEqual([400, 404]);
  });

  it('refuses admin loading, since the data lives at the platform', async () => {
    expect((await gw.adminPut('/admin/users/u-9', sampleUser('u-9'))).status).toBe(409);
  });
});

describe('http backend: UK product-level consents', () => {
  it('passes products through on GET, and the one-object POST and /reconciliation/products on to the platform', async () => {
    platform.consents.set('u-1', [
      { type: 'email', opted_in: true, products: ['casino', 'sportsbook'] },
      ...['sms', 'telephone', 'postMail', 'siteNotification', 'pushNotification'].map((type) => ({ type, opted_in: false })),
    ]);
    const { consents } = crmConsents.parse((await gw.get('/userconsents/u-1')).json);
    expect(consents[0]).toEqual({ opted_in: true, type: 'email', products: ['casino', 'sportsbook'] });

    const uk = { consents: { channel: 'sms', opted_in: true, products: ['lottery'] } };
    expect((await gw.post('/userconsents/u-1', uk)).status).toBe(200);
    expect(JSON.parse(platform.requests.at(-1)!.body)).toEqual(uk);

    platform.reconciliation = { users: ['u-1', 'u-2'] };
    const res = await gw.post('/reconciliation/products', { field: 'consent_email', product: 'casino' });
    expect(crmReconciliation.parse(res.json).users).toEqual(['u-1', 'u-2']);
    expect(platform.requests.at(-1)).toMatchObject({ path: '/reconciliation/products' });
    expect(JSON.parse(platform.requests.at(-1)!.body)).toEqual({ field: 'consent_email', product: 'casino' });
  });
});

describe('http backend: reconciliation', () => {
  it('streams the platform list through with the platform timestamp, skipping keys it does not know', async () => {
    platform.reconciliation = { users: Array.from({ length: 5_000 }, (_, i) => `user-${i}-"quoted"\\`), chunk: 333 };
    const res = await gw.post('/reconciliation', { field: 'consent_sms' });
    expect(res.status).toBe(200);
    const body = crmReconciliation.parse(res.json);
    expect(body.users).toEqual(platform.reconciliation.users);
    expect(body.timestamp).toBe('2026-11-23T10:00:00Z');
    expect(JSON.parse(platform.requests[0]!.body)).toEqual({ field: 'consent_sms' });
  });

  it.each(['error', 'cut'] as const)('answers the error instead of a partial list when the platform stream fails (%s)', async (how) => {
    platform.reconciliation = { users: Array.from({ length: 3_000 }, (_, i) => `u${i}`), chunk: 500, failAfter: { ids: 1_000, how } };
    const res = await gw.post('/reconciliation', { field: 'blocked' });
    expect(res.status).toBe(200);
    // Neither `users` nor `timestamp`: a CRM reading `users` would take the partial list as the whole one. The
    // platform's own error is passed on (code 1002); a broken stream is the gateway's finding (1001).
    expect(res.json).toEqual({ error: expect.any(String), code: how === 'error' ? 1002 : 1001 });
  });

  it('passes the platform’s 200 {"error"} on as 200 {"error"} when it comes before any id', async () => {
    platform.script('/reconciliation', { body: { error: 'replica lagging' } });
    const res = await gw.post('/reconciliation', { field: 'blocked' });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ error: 'operator platform: replica lagging', code: 1002 });
  });

  it('answers 501 when the platform does not implement the field, 502 for a bad first answer', async () => {
    platform.script('/reconciliation', { status: 501, body: { error: 'no' } });
    expect((await gw.post('/reconciliation', { field: 'consent_telephone' })).status).toBe(501);
    platform.script('/reconciliation', { body: '{"users":[1,2]}' });
    const bad = await gw.post('/reconciliation', { field: 'blocked' });
    expect(bad.status).toBe(502);
    expect(bad.json.error).toMatch(/users\[0\]: must be a string/);
  });
});
