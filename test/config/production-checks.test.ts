/** What production refuses and development warns about: one finding per unsafe setting, naming its key. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { findUnsafeSettings, isPrivateHost } from '../../src/config/production-checks.js';

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
    ['a loopback public_url with a real provider', { server: { public_url: 'http://127.0.0.1:8080' } }, ['server.public_url']],
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
    ['[2001:db8::1]', false],
  ])('%s → %s', (host, expected) => {
    expect(isPrivateHost(host)).toBe(expected);
  });
});
