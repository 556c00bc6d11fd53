import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crmToken, errorBody, sampleUser } from '../helpers/crm-schemas.js';
import { smsMessage, startTestGateway, TEST_API_KEY, type TestGateway } from '../helpers/gateway.js';

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
/** The CRM's requests in basic and oauth modes carry no X-Api-Key; the helper's default one is blanked out. */
const noKey = { 'x-api-key': '' };

async function loadUser(gw: TestGateway) {
  // 200 when a shared PostgreSQL test database (TEST_DATABASE_URL) already holds the user.
  // With sms consent: the SMS tests below send to u-1, and sms.suppression refuses a known player without it; and
  // with the number they send to (a number in another country than the player's record is refused).
  const u1 = sampleUser('u-1', { mobile_prefix: '+44', mobile: '7700900123', consents: [{ type: 'sms', opted_in: true }] });
  expect([200, 201]).toContain((await gw.adminPut('/admin/users/u-1', u1)).status);
}

describe('auth.mode api_key', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
    await loadUser(gw);
  });
  afterAll(async () => gw.close());

  it('accepts X-Api-Key and refuses a missing or wrong key with 401', async () => {
    expect((await gw.get('/userdetails/u-1')).status).toBe(200);
    const missing = await gw.get('/userdetails/u-1', noKey);
    expect(missing.status).toBe(401);
    expect(errorBody.parse(missing.json).error).toMatch(/x-api-key/);
    expect((await gw.get('/userdetails/u-1', { 'x-api-key': 'wrong' })).status).toBe(401);
  });

  it('offers no token endpoint', async () => {
    expect((await gw.post('/oauth/token', { client_id: 'a', client_secret: 'b', grant_type: 'client_credentials' })).status).toBe(404);
  });
});

describe('auth.mode basic', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ auth: { mode: 'basic', basic: { username: 'crm', password: 's3cret:with-colon' } } });
    await loadUser(gw);
  });
  afterAll(async () => gw.close());

  it('accepts the configured id and secret', async () => {
    const res = await gw.get('/userdetails/u-1', { ...noKey, authorization: basic('crm', 's3cret:with-colon') });
    expect(res.status).toBe(200);
  });

  it.each([
    ['a wrong password', basic('crm', 'nope')],
    ['a wrong user', basic('crm2', 's3cret:with-colon')],
    ['no credentials', ''],
    ['a bearer token', 'Bearer abc'],
  ])('refuses %s with 401 and a Basic challenge', async (_label, authorization) => {
    const res = await gw.get('/userblocks/u-1', { ...noKey, authorization });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
    errorBody.parse(res.json);
  });

  it('no longer takes X-Api-Key on the operator API, while the SMS endpoints still do', async () => {
    expect((await gw.get('/userdetails/u-1')).status).toBe(401);
    expect((await gw.post('/channels/sms/single', smsMessage('basic-mode-sms'))).status).toBe(200);
    expect((await gw.post('/channels/sms/single', smsMessage('basic-mode-sms-2'), { authorization: basic('crm', 's3cret:with-colon'), ...noKey })).status).toBe(
      401,
    );
  });
});

describe('auth.mode oauth', () => {
  let gw: TestGateway;
  let clock = Date.parse('2026-11-23T10:00:00Z');
  const oauth = { client_id: 'crm-client', client_secret: 'client-secret-value', token_ttl_seconds: 7200 };
  const tokenRequest = { client_id: oauth.client_id, client_secret: oauth.client_secret, grant_type: 'client_credentials' };
  beforeAll(async () => {
    gw = await startTestGateway({ auth: { mode: 'oauth', oauth } }, { now: () => clock });
    await loadUser(gw);
  });
  afterAll(async () => gw.close());

  const bearer = (token: string) => ({ ...noKey, authorization: `Bearer ${token}` });

  it('issues a token for a JSON POST, in the shape the CRM expects, and accepts it', async () => {
    const res = await gw.post('/oauth/token', tokenRequest, noKey);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const token = crmToken.parse(res.json);
    expect(token.expires_in).toBe(7200);
    expect((await gw.get('/userdetails/u-1', bearer(token.access_token))).status).toBe(200);
  });

  it('issues a token for a GET with query parameters, and for a form POST', async () => {
    const query = new URLSearchParams(tokenRequest).toString();
    const viaGet = await gw.get(`/oauth/token?${query}`, noKey);
    expect(viaGet.status).toBe(200);
    crmToken.parse(viaGet.json);
    const viaForm = await gw.post('/oauth/token', query, { ...noKey, 'content-type': 'application/x-www-form-urlencoded' });
    expect(viaForm.status).toBe(200);
  });

  it.each([
    ['a wrong secret', { ...tokenRequest, client_secret: 'nope' }, 401],
    ['a wrong client id', { ...tokenRequest, client_id: 'other' }, 401],
    ['another grant type', { ...tokenRequest, grant_type: 'password' }, 400],
    ['no client_secret', { client_id: oauth.client_id, grant_type: 'client_credentials' }, 400],
  ])('refuses a token request with %s', async (_label, body, status) => {
    const res = await gw.post('/oauth/token', body, noKey);
    expect(res.status).toBe(status);
    errorBody.parse(res.json);
  });

  it('refuses an expired token with 401, and accepts it until then', async () => {
    const { access_token } = crmToken.parse((await gw.post('/oauth/token', tokenRequest, noKey)).json);
    clock += 7199_000;
    expect((await gw.get('/userconsents/u-1', bearer(access_token))).status).toBe(200);
    clock += 1_000;
    const expired = await gw.get('/userconsents/u-1', bearer(access_token));
    expect(expired.status).toBe(401);
    expect(errorBody.parse(expired.json).error).toMatch(/expired/);
  });

  it('refuses a token with a changed payload or from another signing key', async () => {
    const { access_token } = crmToken.parse((await gw.post('/oauth/token', tokenRequest, noKey)).json);
    const [header, payload, signature] = access_token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 10_000 })).toString('base64url');
    expect((await gw.get('/userdetails/u-1', bearer(`${header}.${forged}.${signature}`))).status).toBe(401);
    expect((await gw.get('/userdetails/u-1', bearer('not-a-token'))).status).toBe(401);
    expect((await gw.get('/userdetails/u-1', noKey)).status).toBe(401);
  });

  it('accepts a token issued by another instance with the same signing_secret, and not one without it', async () => {
    const shared = { ...oauth, signing_secret: 'shared-signing-secret-0001' };
    const first = await startTestGateway({ auth: { mode: 'oauth', oauth: shared } }, { now: () => clock });
    const second = await startTestGateway({ auth: { mode: 'oauth', oauth: shared } }, { now: () => clock });
    try {
      await loadUser(second);
      const { access_token } = crmToken.parse((await first.post('/oauth/token', tokenRequest, noKey)).json);
      expect((await second.get('/userdetails/u-1', bearer(access_token))).status).toBe(200);
      // Without signing_secret each instance signs with its own random key, never one derived from client_secret.
      const own = crmToken.parse((await gw.post('/oauth/token', tokenRequest, noKey)).json);
      expect((await second.get('/userdetails/u-1', bearer(own.access_token))).status).toBe(401);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('keeps X-Api-Key on the SMS endpoints', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('oauth-mode-sms'), { 'x-api-key': TEST_API_KEY })).status).toBe(200);
  });
});

describe('auth.oauth.signing_secret', () => {
  it('makes tokens from an instance with another signing secret invalid', async () => {
    const oauth = { client_id: 'c', client_secret: 'client-secret-value' };
    const a = await startTestGateway({ auth: { mode: 'oauth', oauth: { ...oauth, signing_secret: 'first-signing-secret-0001' } } });
    const b = await startTestGateway({ auth: { mode: 'oauth', oauth: { ...oauth, signing_secret: 'other-signing-secret-0002' } } });
    try {
      await loadUser(b);
      const { access_token } = crmToken.parse((await a.post('/oauth/token', { ...oauth, grant_type: 'client_credentials' }, noKey)).json);
      expect((await b.get('/userdetails/u-1', { ...noKey, authorization: `Bearer ${access_token}` })).status).toBe(401);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
