/** Whose address a request counts under (src/kit/client-address.ts), and which tokens are ours (src/auth/oauth.ts), as tables. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTokenIssuer } from '../../src/auth/oauth.js';
import { clientAddressOf } from '../../src/kit/client-address.js';
import { createAddressSet, normaliseAddress } from '../../src/kit/address-blocks.js';
import { configSchema } from '../../src/config/schema.js';

describe('createAddressSet', () => {
  const set = createAddressSet(['10.0.0.0/8', '192.0.2.7', '2001:db8::/32']);
  it.each([
    ['an address inside an IPv4 block', '10.20.30.40', true],
    ['the single listed address', '192.0.2.7', true],
    ['its neighbour', '192.0.2.8', false],
    ['an IPv4 address as a dual-stack socket reports it', '::ffff:10.1.1.1', true],
    ['an address inside an IPv6 block', '2001:db8:1::5', true],
    ['an IPv6 address outside it', '2001:db9::1', false],
    ['something that is not an address', 'unknown', false],
  ])('%s (%s): %s', (_label, address, expected) => expect(set(address)).toBe(expected));

  it('an empty list holds nothing', () => expect(createAddressSet([])('127.0.0.1')).toBe(false));
});

describe('clientAddressOf', () => {
  const proxies = createAddressSet(['10.0.0.0/8', '127.0.0.1']);
  it.each([
    ['an untrusted peer: its header is ignored', '203.0.113.5', '198.51.100.1', '203.0.113.5'],
    ['a trusted proxy without a header: the proxy', '10.0.0.2', undefined, '10.0.0.2'],
    ['a trusted proxy: the hop it saw', '10.0.0.2', '198.51.100.1', '198.51.100.1'],
    ['a client that wrote its own header: only the hop the proxy added counts', '10.0.0.2', '1.2.3.4, 198.51.100.1', '198.51.100.1'],
    ['two trusted proxies in a row: the hop before them', '10.0.0.2', '198.51.100.1, 10.0.0.9', '198.51.100.1'],
    ['every hop trusted: the leftmost', '10.0.0.2', '10.0.0.7, 10.0.0.9', '10.0.0.7'],
    ['a hop with a port and spaces', '10.0.0.2', ' 198.51.100.1:4711 ', '198.51.100.1'],
    ['a bracketed IPv6 hop', '10.0.0.2', '[2001:db8::1]:443', '2001:db8::1'],
    ['the peer as a dual-stack socket reports it', '::ffff:127.0.0.1', '198.51.100.1', '198.51.100.1'],
    ['empty entries are skipped', '10.0.0.2', '198.51.100.1,,', '198.51.100.1'],
  ])('%s', (_label, peer, header, expected) => expect(clientAddressOf(peer, header, proxies)).toBe(expected));

  it('reads at most the last 32 hops of a huge header, and cuts a long entry', () => {
    const header = `${'10.0.0.1,'.repeat(100_000)}${'x'.repeat(500)},10.0.0.3`;
    expect(clientAddressOf('10.0.0.2', header, proxies)).toBe('x'.repeat(64));
    expect(clientAddressOf('10.0.0.2', '10.0.0.1,'.repeat(100_000), proxies)).toBe('10.0.0.1');
  });

  it.each([['10.0.0.0/8'], ['::1'], ['2001:db8::/32'], ['192.0.2.1']])('the config takes %s', (entry) => {
    expect(configSchema.shape.server.safeParse({ trusted_proxies: [entry] }).success).toBe(true);
  });
  it.each([['10.0.0.0/33'], ['proxy.example.com'], ['10.0.0.0/8/1'], ['']])('the config refuses %s, naming the key', (entry) => {
    const result = configSchema.safeParse({ server: { trusted_proxies: [entry] }, providers: { s: { type: 'sandbox' } }, auth: { api_keys: ['k'] } });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.path).toEqual(['server', 'trusted_proxies', 0]);
  });

  it('normalises what sockets and proxies write', () => {
    expect(normaliseAddress('::FFFF:10.0.0.1')).toBe('10.0.0.1');
    expect(normaliseAddress('[::1]')).toBe('::1');
  });
});

describe('which refused tokens are ours (not guesses)', () => {
  const oauth = { client_id: 'crm', client_secret: 'client-secret-value-0123456789abcdef', token_ttl_seconds: 60 };
  let now = Date.parse('2026-11-25T10:00:00Z');
  const issuer = createTokenIssuer(oauth, () => now, Buffer.from('this process'));
  const other = createTokenIssuer(oauth, () => now, Buffer.from('the process before the restart'));
  const token = issuer.issue().access_token;
  const [header, payload] = token.split('.') as [string, string, string];
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const fakeSig = createHmac('sha256', 'guess').update('x').digest('base64url');

  it.each<[string, () => string, boolean]>([
    ['a token of another process (a restart without signing_secret)', () => other.issue().access_token, true],
    ["our header and our claims' shape with a signature of the right length", () => `${header}.${payload}.${fakeSig}`, true],
    [
      'our header and claims for another client id: the same answer, so the lockout tells nothing of the id',
      () => `${header}.${b64({ sub: 'other', iat: 1, exp: 2, jti: 'j' })}.${fakeSig}`,
      true,
    ],
    ['our header with a short signature', () => `${header}.${payload}.abc`, false],
    ['our header with claims of another shape', () => `${header}.${b64({ sub: 'crm' })}.${fakeSig}`, false],
    ['another header', () => `${b64({ alg: 'none' })}.${payload}.${fakeSig}`, false],
    ['not a JWT at all', () => 'guess', false],
  ])('%s: ours=%s', (_label, make, ours) => {
    expect(issuer.check(make())).toMatchObject({ ours });
  });

  it('an expired token we signed is ours; until it expires it is good', () => {
    expect(issuer.check(token)).toBeUndefined();
    now += 60_000;
    expect(issuer.check(token)).toEqual({ problem: 'the token has expired; request a new one', ours: true });
  });
});
