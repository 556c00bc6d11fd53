/** What production refuses and development warns about: one finding per unsafe setting, naming its key. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { findUnsafeSettings, isLoopbackHost, isPrivateHost, keyTextProblem } from '../../src/config/production-checks.js';

type Doc = Record<string, unknown>;
const SAFE_KEY = 'a-long-random-crm-key-0001';
const TWILIO = { type: 'twilio', account_sid: `AC${'0'.repeat(32)}`, auth_token: 'twilio-token', from: '+15005550006' };

/** A configuration production accepts; each row below changes one thing. */
function safe(over: Doc = {}): Doc {
  return {
    server: { environment: 'production', public_url: 'https://sms-gw.example.com', ...((over.server as Doc) ?? {}) },
    auth: { api_keys: [SAFE_KEY], ...((over.auth as Doc) ?? {}) },
    admin: { api_key: 'a-long-random-admin-key-0001', ...((over.admin as Doc) ?? {}) },
    crm: { webhook_url: 'https://crm.example.com', webhook_api_key: 'a-long-random-webhook-key-01', ...((over.crm as Doc) ?? {}) },
    providers: (over.providers as Doc) ?? { sandbox: { type: 'sandbox', receipt_secret: 'sandbox-receipt-secret-0001' }, twilio: TWILIO },
    database: (over.database as Doc) ?? { url: 'sqlite:/var/lib/crm-sms-gateway/gateway.db' },
    ...(over.sms ? { sms: over.sms } : {}),
  };
}

const keysOf = (doc: Doc) => findUnsafeSettings(parseConfig(doc, {})).map((f) => f.key);

describe('findUnsafeSettings', () => {
  it('finds nothing in a safe configuration', () => {
    expect(keysOf(safe())).toEqual([]);
  });

  it.each<[string, Doc, string[]]>([
    ['the shipped CRM key', { auth: { api_keys: ['dev-crm-api-key'] } }, ['auth.api_keys[0]']],
    ['a short SMS key', { sms: { api_keys: ['short'] } }, ['sms.api_keys[0]']],
    ['the shipped admin key', { admin: { api_key: 'dev-admin-key-change-me' } }, ['admin.api_key']],
    ['the shipped webhook key', { crm: { webhook_api_key: 'dev-webhook-key' } }, ['crm.webhook_api_key']],
    ['no webhook key while a webhook is set', { crm: { webhook_api_key: '' } }, ['crm.webhook_api_key']],
    ['a short basic password', { auth: { mode: 'basic', basic: { username: 'crm', password: 'pass' } } }, ['auth.basic.password']],
    ['a short OAuth client secret', { auth: { mode: 'oauth', oauth: { client_id: 'crm', client_secret: '12345' } } }, ['auth.oauth.client_secret']],
    [
      'no OAuth signing secret with a PostgreSQL database',
      { auth: { mode: 'oauth', oauth: { client_id: 'crm', client_secret: 'x'.repeat(32) } }, database: { url: 'postgres://db.example/gw' } },
      ['auth.oauth.signing_secret'],
    ],
    ['a sandbox without receipt_secret', { providers: { sandbox: { type: 'sandbox' } } }, ['providers.sandbox.receipt_secret']],
    ['a short sandbox receipt_secret', { providers: { sandbox: { type: 'sandbox', receipt_secret: 'abc' } } }, ['providers.sandbox.receipt_secret']],
    [
      'a Vonage provider without signature_secret',
      { providers: { nexmo: { type: 'vonage', api_key: 'k', api_secret: 's' } } },
      ['providers.nexmo.signature_secret'],
    ],
    ['a CRM key ending in a line break', { auth: { api_keys: [`${SAFE_KEY}\n`] } }, ['auth.api_keys[0]']],
    ['an SMS key starting with a space', { sms: { api_keys: [` ${SAFE_KEY}`] } }, ['sms.api_keys[0]']],
    ['an admin key holding a zero-width space', { admin: { api_key: 'a-long-random\u200badmin-key-0001' } }, ['admin.api_key']],
    ['a webhook key holding a tab', { crm: { webhook_api_key: 'a-long-random\twebhook-key-01' } }, ['crm.webhook_api_key']],
    [
      'an OAuth client secret ending in spaces',
      { auth: { mode: 'oauth', oauth: { client_id: 'crm', client_secret: `${'x'.repeat(32)}  `, signing_secret: 'a-long-random-signing-secret' } } },
      ['auth.oauth.client_secret'],
    ],
    [
      'an OAuth signing secret ending in a line break',
      { auth: { mode: 'oauth', oauth: { client_id: 'crm', client_secret: 'x'.repeat(32), signing_secret: 'a-long-random-signing-secret\r\n' } } },
      ['auth.oauth.signing_secret'],
    ],
    ['a loopback public_url with a real provider', { server: { public_url: 'http://127.0.0.1:8080' } }, ['server.public_url']],
    ['localhost written as a fully qualified name with a real provider', { server: { public_url: 'https://localhost.' } }, ['server.public_url']],
    ['an IPv6 loopback public_url with a real provider', { server: { public_url: 'https://[::1]:8443' } }, ['server.public_url']],
    ['0.0.0.0 as public_url with a real provider', { server: { public_url: 'https://0.0.0.0' } }, ['server.public_url']],
    ['a private public_url with a real provider', { server: { public_url: 'http://10.1.2.3' } }, ['server.public_url']],
    ['no public_url at all with a real provider', { server: { public_url: undefined } }, ['server.public_url']],
  ])('finds %s', (_label, over, keys) => {
    expect(keysOf(safe(over))).toEqual(keys);
  });

  it('accepts a loopback public_url when only the sandbox is configured', () => {
    expect(
      keysOf(
        safe({ server: { public_url: 'http://127.0.0.1:8080' }, providers: { sandbox: { type: 'sandbox', receipt_secret: 'sandbox-receipt-secret-0001' } } }),
      ),
    ).toEqual([]);
  });

  it('finds every problem of the shipped config.yaml run with no environment', async () => {
    const { loadConfig } = await import('../../src/config/load.js');
    const findings = findUnsafeSettings(await loadConfig('config.yaml', {}));
    expect(findings.map((f) => f.key)).toEqual([
      'auth.api_keys[0]',
      'admin.api_key',
      'crm.webhook_api_key',
      'providers.sandbox.receipt_secret',
      'database.url',
      'crm.webhook_url',
    ]);
  });
});

describe('keys production needs written out (a misspelt variable must not fall back silently)', () => {
  const sqlite = 'sqlite:/var/lib/crm-sms-gateway/gateway.db';
  const findingOf = (doc: Doc, env: Record<string, string>, key: string) => findUnsafeSettings(parseConfig(doc, env)).find((f) => f.key === key);

  it.each<[string, Doc, Record<string, string>, string, RegExp | undefined]>([
    [
      'database.url from the default of its variable',
      { database: { url: '${DATABASE_URL:-sqlite:./data/gateway.db}' } },
      {},
      'database.url',
      /\$\{DATABASE_URL:-…\} \(DATABASE_URL not set\)/,
    ],
    ['database.url not written at all', { database: {} }, {}, 'database.url', /the built-in default/],
    [
      'database.url from its variable',
      { database: { url: '${DATABASE_URL:-sqlite:./data/gateway.db}' } },
      { DATABASE_URL: 'postgres://db.example/gw' },
      'database.url',
      undefined,
    ],
    ['database.url written out (SQLite)', { database: { url: sqlite } }, {}, 'database.url', undefined],
    [
      'crm.webhook_url from the default of its variable',
      { crm: { webhook_url: '${CRM_WEBHOOK_URL:-http://127.0.0.1:9090}' } },
      {},
      'crm.webhook_url',
      /CRM_WEBHOOK_URL not set/,
    ],
    ['a default inside crm.webhook_url', { crm: { webhook_url: 'https://${CRM_HOST:-crm.example.com}/hooks' } }, {}, 'crm.webhook_url', /CRM_HOST/],
    [
      'crm.webhook_url from its variable',
      { crm: { webhook_url: '${CRM_WEBHOOK_URL:-http://127.0.0.1:9090}' } },
      { CRM_WEBHOOK_URL: 'https://crm.example.com' },
      'crm.webhook_url',
      undefined,
    ],
  ])('%s', (_label, over, env, key, problem) => {
    const finding = findingOf(safe(over), env, key);
    if (problem) {
      expect(finding).toMatchObject({ key, severity: 'refuse' });
      expect(finding!.problem).toMatch(problem);
    } else {
      expect(finding).toBeUndefined();
    }
  });
});

describe('keyTextProblem', () => {
  it.each([
    ['a key of letters, digits and punctuation', 'a-long_random.key+0001/=', undefined],
    ['a key with a space inside', 'two words-0123456789', undefined],
    ['a key ending in a line break', 'a-long-random-key\n', /whitespace/],
    ['a key ending in a carriage return', 'a-long-random-key\r', /whitespace/],
    ['a key ending in spaces', 'a-long-random-key  ', /whitespace/],
    ['a key starting with a tab', '\ta-long-random-key', /whitespace/],
    ['a key ending in a no-break space', 'a-long-random-key\u00a0', /whitespace/],
    ['a key with a NUL inside', 'a-long\u0000random-key', /control or invisible/],
    ['a key with a line break inside', 'a-long\nrandom-key', /control or invisible/],
    ['a key with a byte order mark at its start', '\ufeffa-long-random-key', /./],
    ['a key with a zero-width joiner inside', 'a-long\u200drandom-key', /control or invisible/],
  ])('%s', (_label, key, problem) => {
    if (problem === undefined) expect(keyTextProblem(key)).toBeUndefined();
    else expect(keyTextProblem(key)).toMatch(problem);
  });

  it('reads a key file ending in one line break as the key, and one ending in a blank line as a key production refuses', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-key-file-'));
    try {
      const keyFile = join(dir, 'admin-key');
      const withKeyFile = () => keysOf(safe({ admin: { api_key: `\${file:${keyFile}}` } }));
      writeFileSync(keyFile, 'a-long-random-admin-key-0001\n');
      expect(withKeyFile()).toEqual([]);
      writeFileSync(keyFile, 'a-long-random-admin-key-0001\n\n');
      expect(withKeyFile()).toEqual(['admin.api_key']);
      writeFileSync(keyFile, 'a-long-random-admin-key-0001  \n');
      expect(withKeyFile()).toEqual(['admin.api_key']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('in development (docs/security.md)', () => {
  const development = (over: Doc) => safe({ ...over, server: { environment: 'development', ...((over.server as Doc) ?? {}) } });

  it('a credential under 16 characters is a finding to warn about, the configuration loads', () => {
    const config = parseConfig(development({ auth: { api_keys: ['ten-chars!'] } }), {});
    expect(config.server.environment).toBe('development');
    expect(findUnsafeSettings(config).map((f) => f.key)).toEqual(['auth.api_keys[0]']);
  });

  it.each<[string, Doc]>([
    ['admin.api_key', { admin: { api_key: 'ten-chars!' } }],
    ['auth.oauth.signing_secret', { auth: { mode: 'oauth', oauth: { client_id: 'crm', client_secret: 'x'.repeat(32), signing_secret: 'ten-chars!' } } }],
    ['providers.ib.webhook_secret', { providers: { ib: { type: 'infobip', api_key: 'k', webhook_secret: 'ten-chars!' } } }],
  ])('%s under 16 characters is refused by the schema, in development too', (key, over) => {
    expect(() => parseConfig(development(over), {})).toThrow(new RegExp(`${key.replace(/\./g, '\\.')}: must be at least 16 characters`));
  });
});

describe('isPrivateHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['localhost', true],
    ['10.0.0.5', true],
    ['172.20.1.1', true],
    ['192.168.1.10', true],
    ['[::1]', true],
    ['[fd00::1]', true],
    ['gateway', true],
    ['203.0.113.7', false],
    ['sms-gw.example.com', false],
    ['sms-gw.example.com.', false],
    ['[2001:db8::1]', false],
  ])('%s → %s', (host, expected) => {
    expect(isPrivateHost(host)).toBe(expected);
  });
});

describe('isLoopbackHost, on hosts as the URL parser writes them', () => {
  it.each([
    ['https://localhost', true],
    ['https://localhost.', true],
    ['https://LOCALHOST..', true],
    ['https://api.localhost.', true],
    ['https://127.0.0.1', true],
    ['https://127.9.8.7', true],
    ['https://127.1', true],
    ['https://2130706433', true],
    ['https://127.0.0.1.', true],
    ['https://0.0.0.0', true],
    ['https://0', true],
    ['https://[::1]', true],
    ['https://[0:0:0:0:0:0:0:1]', true],
    ['https://[::]', true],
    ['https://[::ffff:127.0.0.1]', true],
    ['https://[::ffff:8.8.8.8]', false],
    ['https://10.0.0.5', false],
    ['https://localhost.example.com', false],
    ['https://sms-gw.example.com.', false],
  ])('%s → %s', (url, expected) => {
    expect(isLoopbackHost(new URL(url).hostname)).toBe(expected);
  });

  it('reads an IPv4-mapped address as its IPv4 when deciding what is private', () => {
    expect(isPrivateHost(new URL('https://[::ffff:10.1.2.3]').hostname)).toBe(true);
    expect(isPrivateHost(new URL('https://[::ffff:8.8.8.8]').hostname)).toBe(false);
  });
});
