/**
 * POST /authenticate on the real server: checked by a fake operator platform (test/fakes/operator-platform.ts), by an
 * HS256 secret, and by a JWKS served from a local HTTP server; every answer in the CRM's shapes, nothing cached.
 * Players' refused sessions never lock the CRM out; a flood of them is bounded on /authenticate alone.
 */
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOperatorPlatform, type FakeOperatorPlatform } from '../fakes/operator-platform.js';
import { errorBody, sampleUser } from '../helpers/crm-schemas.js';
import { smsMessage, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const SECRET = 'a-session-secret-of-the-operator-0123456789';

describe('POST /authenticate checked by the operator platform', () => {
  let platform: FakeOperatorPlatform;
  let gw: TestGateway;
  beforeAll(async () => {
    platform = await startFakeOperatorPlatform();
    gw = await startTestGateway({ operator: { authenticate_url: `${platform.url}/session/check`, headers: { 'x-platform-key': 'k1' }, timeout: '300ms' } });
  });
  afterAll(async () => {
    await gw.close();
    await platform.close();
  });

  it('answers the platform’s user id for a valid session, asking it every time', async () => {
    for (let i = 0; i < 2; i++) platform.script('/session/check', { body: { user_id: 4471, extra: 'ignored' } });
    for (let i = 0; i < 2; i++) {
      const res = await gw.post('/authenticate', { sid: 'sess-1', site: 'crm-adds-this' });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ user_id: '4471' });
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    const asked = platform.requests.filter((r) => r.path === '/session/check');
    expect(asked).toHaveLength(2);
    expect(JSON.parse(asked[0]!.body)).toEqual({ sid: 'sess-1' });
    expect(asked[0]!.headers['x-platform-key']).toBe('k1');
  });

  it.each([
    ['the platform refuses the session', { status: 401, body: { error: 'expired' } }, 401],
    ['the platform answers 200 without a user id', { body: { ok: true } }, 502],
    ['the platform fails', { status: 500, body: 'down' }, 502],
    ['the platform is too slow', { delayMs: 600, body: { user_id: 'u' } }, 504],
  ])('answers 401 {error, code} when %s', async (_label, scripted, code) => {
    platform.script('/session/check', scripted);
    const res = await gw.post('/authenticate', { sid: 'sess-2' });
    expect(res.status).toBe(401);
    expect(errorBody.parse(res.json).code).toBe(code);
  });

  it.each([
    ['no sid', {}, 400],
    ['a sid that is not a string', { sid: 12 }, 400],
  ])('answers 401 {error, code} for a body with %s', async (_label, body, code) => {
    const res = await gw.post('/authenticate', body);
    expect([res.status, errorBody.parse(res.json).code]).toEqual([401, code]);
    expect(res.json.error).toMatch(/sid/);
  });

  it('answers 401 without the CRM’s credentials, asking nothing', async () => {
    const before = platform.requests.length;
    const res = await gw.post('/authenticate', { sid: 'sess-3' }, { 'x-api-key': 'wrong' });
    expect([res.status, errorBody.parse(res.json).code]).toEqual([401, 401]);
    expect(platform.requests.length).toBe(before);
  });
});

describe('POST /authenticate checked locally as a signed session token', () => {
  const now = () => Math.floor(Date.now() / 1000);
  let hs: TestGateway;

  beforeAll(async () => {
    hs = await startTestGateway({ operator: { session_tokens: { secret: SECRET, issuer: 'https://casino.example', audience: 'crm', clock_skew: '5s' } } });
  });
  afterAll(async () => hs.close());

  const hsToken = (claims: Record<string, unknown>, exp = now() + 60, issuer = 'https://casino.example') =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer(issuer).setAudience('crm').setExpirationTime(exp).sign(new TextEncoder().encode(SECRET));

  const signedByHand = (claims: string) => {
    const part = (text: string) => Buffer.from(text).toString('base64url');
    const signed = `${part('{"alg":"HS256"}')}.${part(claims)}`;
    return `${signed}.${createHmac('sha256', SECRET).update(signed).digest('base64url')}`;
  };

  it('answers the sub of a valid HS256 token', async () => {
    const res = await hs.post('/authenticate', { sid: await hsToken({ sub: 'player-9' }) });
    expect([res.status, res.json]).toEqual([200, { user_id: 'player-9' }]);
  });

  it('takes a token issued within the clock skew ahead, and refuses one issued past it naming iat', async () => {
    const within = await hs.post('/authenticate', { sid: await hsToken({ sub: 'player-9', iat: now() + 3 }) });
    expect([within.status, within.json]).toEqual([200, { user_id: 'player-9' }]);
    const ahead = await hs.post('/authenticate', { sid: await hsToken({ sub: 'player-9', iat: now() + 3_600 }) });
    expect([ahead.status, errorBody.parse(ahead.json).code]).toEqual([401, 401]);
    expect(ahead.json.error).toMatch(/iat is later than now/);
    const byHand = await hs.post('/authenticate', { sid: signedByHand(`{"sub":"p","iss":"https://casino.example","aud":"crm","exp":${now() + 60}}`) });
    expect([byHand.status, byHand.json]).toEqual([200, { user_id: 'p' }]);
  });

  it.each([
    ['an expired token', async () => hsToken({ sub: 'p' }, now() - 60)],
    ['another issuer', async () => hsToken({ sub: 'p' }, now() + 60, 'https://other.example')],
    [
      'another secret',
      async () =>
        new SignJWT({ sub: 'p' })
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer('https://casino.example')
          .setAudience('crm')
          .setExpirationTime(now() + 60)
          .sign(new TextEncoder().encode('x'.repeat(40))),
    ],
    [
      'no expiry',
      async () =>
        new SignJWT({ sub: 'p' })
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer('https://casino.example')
          .setAudience('crm')
          .sign(new TextEncoder().encode(SECRET)),
    ],
    ['not a token at all', async () => 'sess-plain'],
    ['a token issued a year ahead', async () => hsToken({ sub: 'p', iat: now() + 365 * 86_400 }, now() + 400 * 86_400)],
    // SignJWT refuses to write a non-finite time, so the claims are written and signed by hand.
    ['a token whose exp is 1e400 (Infinity once parsed)', async () => signedByHand('{"sub":"p","iss":"https://casino.example","aud":"crm","exp":1e400}')],
  ])('answers 401 for %s', async (_label, make) => {
    const res = await hs.post('/authenticate', { sid: await make() });
    expect([res.status, errorBody.parse(res.json).code]).toEqual([401, 401]);
  });

  describe('with a JWKS', () => {
    let jwks: Server;
    let rs: TestGateway;
    let privateKey: CryptoKey;
    let served = 0;
    beforeAll(async () => {
      const pair = await generateKeyPair('RS256');
      privateKey = pair.privateKey;
      const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
      jwks = createServer((_req, res) => {
        served++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: [jwk] }));
      });
      jwks.listen(0, '127.0.0.1');
      await once(jwks, 'listening');
      const { port } = jwks.address() as AddressInfo;
      rs = await startTestGateway({ operator: { session_tokens: { jwks_url: `http://127.0.0.1:${port}/.well-known/jwks.json`, user_claim: 'player_id' } } });
    });
    afterAll(async () => {
      await rs.close();
      await new Promise<void>((resolve) => jwks.close(() => resolve()));
    });

    const rsToken = (claims: Record<string, unknown>, exp = now() + 60) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setExpirationTime(exp).sign(privateKey);

    it('answers the configured claim of a token signed with a published key', async () => {
      const res = await rs.post('/authenticate', { sid: await rsToken({ player_id: 'p-77' }) });
      expect([res.status, res.json]).toEqual([200, { user_id: 'p-77' }]);
      expect(served).toBeGreaterThan(0);
    });

    it('answers 401 for an expired token, a token without the claim and an HS256 token', async () => {
      for (const sid of [await rsToken({ player_id: 'p' }, now() - 120), await rsToken({ sub: 'p' }), await hsToken({ sub: 'p' })]) {
        const res = await rs.post('/authenticate', { sid });
        expect([res.status, errorBody.parse(res.json).code]).toEqual([401, 401]);
      }
    });
  });
});

describe('POST /authenticate with no check configured', () => {
  it('answers 401 naming the keys to set', async () => {
    const gw = await startTestGateway();
    try {
      const res = await gw.post('/authenticate', { sid: 'x' });
      expect(res.status).toBe(401);
      expect(errorBody.parse(res.json).error).toMatch(/operator\.authenticate_url or operator\.session_tokens/);
    } finally {
      await gw.close();
    }
  });
});

describe('players never lock the CRM out', () => {
  let platform: FakeOperatorPlatform;
  const gateways: TestGateway[] = [];
  let clock = Date.parse('2026-11-28T10:00:00Z');
  beforeAll(async () => {
    platform = await startFakeOperatorPlatform();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await platform.close();
  });

  const sessions = {
    'local session tokens': { session_tokens: { secret: SECRET } },
    'the operator platform': () => ({ authenticate_url: `${platform.url}/session/check` }),
  };
  /** A gateway whose credential limit is the default one (the test helper's is out of reach), with its player u-1. */
  const start = async (which: keyof typeof sessions, operator: Record<string, unknown> = {}) => {
    const check = sessions[which];
    const gw = await startTestGateway(
      { auth: { failure_budget: 20, failure_window: '1m' }, operator: { ...(typeof check === 'function' ? check() : check), ...operator } },
      { now: () => clock },
    );
    gateways.push(gw);
    expect([200, 201]).toContain(
      (await gw.adminPut('/admin/users/u-1', sampleUser('u-1', { mobile_prefix: '+44', mobile: '7700900123', consents: [{ type: 'sms', opted_in: true }] })))
        .status,
    );
    return gw;
  };
  const validSession = (gw: TestGateway, which: keyof typeof sessions) => {
    if (which === 'the operator platform') {
      platform.script('/session/check', { body: { user_id: 'u-1' } });
      return gw.post('/authenticate', { sid: 'live-session' });
    }
    return new SignJWT({ sub: 'u-1' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(Math.floor(clock / 1000) + 60)
      .sign(new TextEncoder().encode(SECRET))
      .then((sid) => gw.post('/authenticate', { sid }));
  };
  let sends = 0;
  const crmCallsAnswered = async (gw: TestGateway) => {
    const details = await gw.get('/userdetails/u-1');
    expect([details.status, details.json.user_id]).toEqual([200, 'u-1']);
    const sms = await gw.post('/channels/sms/single', smsMessage(`lockout-${++sends}`, { activity: { id: `lockout-${sends}`, user_id: 'u-1' } }));
    expect(sms.status, JSON.stringify(sms.json)).toBe(200);
  };

  it.each(Object.keys(sessions) as Array<keyof typeof sessions>)(
    'with %s: 40 invalid sessions, then the CRM’s /userdetails, an SMS and a valid session are answered as usual',
    async (which) => {
      clock += 3_600_000;
      const gw = await start(which);
      for (let i = 0; i < 40; i++) {
        const res = await gw.post('/authenticate', { sid: `stale-session-${i}` });
        expect([res.status, errorBody.parse(res.json).code]).toEqual([401, 401]);
      }
      await crmCallsAnswered(gw);
      expect((await validSession(gw, which)).json).toEqual({ user_id: 'u-1' });
      // The credential limit is live in this gateway: 20 wrong keys still lock their address out.
      for (let i = 0; i < 20; i++) expect((await gw.get('/userdetails/u-1', { 'x-api-key': 'a-guess' })).status).toBe(401);
      expect((await gw.get('/userdetails/u-1')).status).toBe(429);
    },
  );

  it.each(Object.keys(sessions) as Array<keyof typeof sessions>)(
    'with %s: past operator.session_failure_budget only /authenticate answers 429, unchecked, until the window ends',
    async (which) => {
      clock += 3_600_000;
      const gw = await start(which, { session_failure_budget: 5, session_failure_window: '1m' });
      for (let i = 0; i < 5; i++) expect((await gw.post('/authenticate', { sid: `forged-${i}` })).status).toBe(401);
      const asked = platform.requests.length;
      const refused = await gw.post('/authenticate', { sid: 'forged-6' });
      expect([refused.status, errorBody.parse(refused.json).code]).toEqual([429, 429]);
      expect(refused.json.error).toMatch(/too many invalid sessions/);
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(platform.requests.length).toBe(asked);
      await crmCallsAnswered(gw);
      clock += 30_000;
      const stillRefused = await gw.post('/authenticate', { sid: 'forged-7' });
      expect([stillRefused.status, stillRefused.headers.get('retry-after')]).toEqual([429, '30']);
      clock += 30_000;
      expect((await validSession(gw, which)).json).toEqual({ user_id: 'u-1' });
    },
  );
});
