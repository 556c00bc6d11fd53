/** parseConfig and loadConfig: a wrong file stops the start with a message naming the key and what is wrong. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';

type Doc = Record<string, unknown>;
const minimal = (extra: Doc = {}): Doc => ({ auth: { api_keys: ['k'] }, providers: { sandbox: { type: 'sandbox' } }, ...extra });

function configError(document: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(document, env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected the config to be refused');
}

describe('refused configurations name the key', () => {
  it.each<[string, Doc, RegExp]>([
    ['an unknown top-level key', minimal({ serverr: {} }), /unknown key serverr\b/],
    ['a misspelt nested key', minimal({ sms: { max_segmnts: 3 } }), /unknown key sms\.max_segmnts\b/],
    [
      'an unknown key inside a provider',
      { ...minimal(), providers: { sandbox: { type: 'sandbox', dlr_delay: 5 } } },
      /unknown key providers\.sandbox\.dlr_delay\b/,
    ],
    [
      "the sandbox's receipts switch as a string",
      { ...minimal(), providers: { sandbox: { type: 'sandbox', receipts: 'no' } } },
      /providers\.sandbox\.receipts: .*boolean/,
    ],
    [
      'a __proto__ key inside a provider (from YAML, an own key)',
      { ...minimal(), providers: { sandbox: JSON.parse('{"type":"sandbox","__proto__":{"receipts":false}}') } },
      /unknown key providers\.sandbox\.__proto__\b/,
    ],
    ['a port written as words', minimal({ server: { port: 'eighty' } }), /server\.port: .*number/],
    ['a port out of range', minimal({ server: { port: 70_000 } }), /server\.port: /],
    [
      'server.workers, removed, with what to do instead',
      minimal({ server: { workers: 2 } }),
      /server\.workers: removed .*run one gateway process per instance and scale with replicas/,
    ],
    [
      'a removed key and an unknown one side by side, each named',
      minimal({ server: { workers: 'auto', portt: 1 } }),
      /server\.workers: removed[^\n]*\n {2}- unknown key server\.portt\b/,
    ],
    ['max_segments as a string', minimal({ sms: { max_segments: 'ten' } }), /sms\.max_segments: .*number/],
    ['smart_encoding as a string', minimal({ sms: { smart_encoding: 'yes' } }), /sms\.smart_encoding: .*boolean/],
    ['a duration that is not one', minimal({ sms: { batch_deadline: 'soon' } }), /sms\.batch_deadline: "soon" is not a duration/],
    // `shutdown_timeout: 20` meant 20 ms when a bare number was read as milliseconds.
    ['a duration without a unit', minimal({ server: { shutdown_timeout: 20 } }), /server\.shutdown_timeout: 20 has no unit \(write e\.g\. 20ms or 20s\)/],
    ['a duration without a unit, as text', minimal({ sms: { send_timeout: '1500' } }), /sms\.send_timeout: "1500" has no unit/],
    ['a duration from a variable without a unit', minimal({ sms: { send_timeout: '${SEND_TIMEOUT:-10}' } }), /sms\.send_timeout: "10" has no unit/],
    ['a negative duration', minimal({ sms: { send_timeout: -5 } }), /sms\.send_timeout: -5 is not a duration/],
    ['a database url of another kind', minimal({ database: { url: 'mysql://x' } }), /database\.url: must start with sqlite: or postgres:\/\//],
    ['an unknown provider type', { ...minimal(), providers: { mine: { type: 'carrier-pigeon' } } }, /providers\.mine\.type: .*sandbox/],
    ['no provider at all', { auth: { api_keys: ['k'] } }, /providers: /],
    ['no key for the SMS endpoints', { providers: { sandbox: { type: 'sandbox' } } }, /sms\.api_keys: no key for \/channels\/sms/],
    [
      'an alias used by two providers (case-insensitively)',
      { ...minimal(), providers: { a: { type: 'sandbox', aliases: ['shared'] }, b: { type: 'sandbox', aliases: ['SHARED'] } } },
      /providers\.b\.aliases: "SHARED" already names provider a/,
    ],
    [
      "an alias equal to another provider's name",
      { ...minimal(), providers: { a: { type: 'sandbox' }, b: { type: 'sandbox', aliases: ['A'] } } },
      /providers\.b\.aliases: "A" already names provider a/,
    ],
    [
      'a default provider that is not configured',
      minimal({ sms: { default_provider: 'ghost' } }),
      /sms\.default_provider: "ghost" is not a configured provider/,
    ],
    ['a default region that is not two letters', minimal({ sms: { default_region: 'GBR' } }), /sms\.default_region: /],
  ])('%s', (_label, document, message) => {
    expect(configError(document)).toMatch(message);
  });

  it('lists every problem, not only the first', () => {
    const message = configError(minimal({ sms: { max_segmnts: 3 }, server: { port: 'x' } }));
    expect(message).toMatch(/sms\.max_segmnts/);
    expect(message).toMatch(/server\.port/);
  });
});

describe('environment references', () => {
  it('name the variable that is missing and has no default', () => {
    expect(configError(minimal({ crm: { webhook_api_key: '${CRM_KEY}' } }))).toMatch(/crm\.webhook_api_key: environment variable CRM_KEY is not set/);
  });

  it('name every missing variable at once, in the order of the file', () => {
    const message = configError(
      minimal({ database: { url: '${DATABASE_URL}' }, crm: { webhook_url: '${CRM_WEBHOOK_URL}', webhook_api_key: 'x-${CRM_KEY}-${CRM_KEY_2}' } }),
    );
    expect(message.split('\n')).toEqual([
      '3 environment variables are missing:',
      '  - database.url: environment variable DATABASE_URL is not set (nor DATABASE_URL_FILE) and has no default',
      '  - crm.webhook_url: environment variable CRM_WEBHOOK_URL is not set (nor CRM_WEBHOOK_URL_FILE) and has no default',
      '  - crm.webhook_api_key: environment variable CRM_KEY, CRM_KEY_2 is not set (nor CRM_KEY_FILE, CRM_KEY_2_FILE) and has no default',
    ]);
  });

  it('treat an empty variable as missing', () => {
    expect(configError(minimal({ crm: { webhook_api_key: '${CRM_KEY}' } }), { CRM_KEY: '' })).toMatch(/CRM_KEY/);
  });

  it.each([
    ['the default when the variable is unset', {}, 'fallback-key'],
    ['the variable when it is set', { CRM_KEY: 'from-env' }, 'from-env'],
  ])('use %s', (_label, env: Record<string, string>, expected) => {
    expect(parseConfig(minimal({ crm: { webhook_api_key: '${CRM_KEY:-fallback-key}' } }), env).crm.webhook_api_key).toBe(expected);
  });

  it.each([
    ['from its default', {}, 8080],
    ['from the environment', { PORT: '9090' }, 9090],
  ])('turn a whole-value ${PORT:-8080} into a number %s', (_label, env: Record<string, string>, port) => {
    const config = parseConfig(minimal({ server: { port: '${PORT:-8080}' } }), env);
    expect(config.server.port).toBe(port);
  });

  it('turn a whole-value boolean reference into a boolean', () => {
    expect(parseConfig(minimal({ sms: { smart_encoding: '${SMART:-true}' } }), {}).sms.smart_encoding).toBe(true);
  });

  it('substitute several references inside one string and keep it a string', () => {
    const config = parseConfig(minimal({ server: { public_url: 'https://${HOST:-gw.example}:${PORT:-8443}/sms' } }), { HOST: 'sms.example' });
    expect(config.server.public_url).toBe('https://sms.example:8443/sms');
  });

  it.each<[string, Record<string, string>, (c: ReturnType<typeof parseConfig>) => unknown, unknown]>([
    ['a phone number stays text', { FROM: '+15005550006' }, (c) => (c.providers.tw as { from?: string }).from, '+15005550006'],
    ['an all-digit key stays text', { KEY: '1234567890123456' }, (c) => c.auth.api_keys[0], '1234567890123456'],
    ['a secret starting with # is kept, not read as a comment', { ADMIN: '#not-a-comment-0123' }, (c) => c.admin.api_key, '#not-a-comment-0123'],
    ['quotes are kept', { ADMIN: '"quoted-admin-key-01"' }, (c) => c.admin.api_key, '"quoted-admin-key-01"'],
    ['a YAML-looking value is not parsed', { ADMIN: '{a: 1, b: [2]} 0123456789' }, (c) => c.admin.api_key, '{a: 1, b: [2]} 0123456789'],
    ['a number where the schema asks for one', { RATE: '2.5' }, (c) => (c.providers.tw as { rate_per_second?: number }).rate_per_second, 2.5],
    ['a port written as a number', { PORT: '8081' }, (c) => c.server.port, 8081],
  ])('take environment values as text: %s', (_label, env, read, expected) => {
    const document = {
      server: { port: '${PORT:-8080}' },
      auth: { api_keys: ['${KEY:-k}'] },
      admin: { api_key: '${ADMIN:-admin-key-0123456789}' },
      providers: {
        tw: { type: 'twilio', account_sid: `AC${'0'.repeat(32)}`, auth_token: '${TOKEN:-0000}', from: '${FROM:-+15550000000}', rate_per_second: '${RATE:-1}' },
      },
    };
    expect(read(parseConfig(document, env))).toEqual(expected);
  });

  it('refuse text where the schema asks for a number, naming the key', () => {
    expect(configError(minimal({ server: { port: '${PORT}' } }), { PORT: 'eighty' })).toMatch(/server\.port: .*number/);
  });

  it.each<[string, Doc, Record<string, string>, string]>([
    ['the key when it is written', minimal({ server: { environment: 'development' } }), { GATEWAY_ENV: 'production' }, 'development'],
    ['GATEWAY_ENV when the key is absent', minimal(), { GATEWAY_ENV: 'development' }, 'development'],
    ['production when neither is set', minimal(), {}, 'production'],
    ['a reference to GATEWAY_ENV with a default', minimal({ server: { environment: '${GATEWAY_ENV:-development}' } }), {}, 'development'],
  ])('server.environment is %s', (_label, document, env, expected) => {
    expect(parseConfig(document, env).server.environment).toBe(expected);
  });

  it('refuse a GATEWAY_ENV that is neither production nor development', () => {
    expect(configError(minimal(), { GATEWAY_ENV: 'staging' })).toMatch(/GATEWAY_ENV: must be production or development/);
  });

  it('work inside lists', () => {
    expect(parseConfig(minimal({ sms: { api_keys: ['${OLD:-a}', '${NEW:-b}'] } }), { NEW: 'rotated' }).sms.api_keys).toEqual(['a', 'rotated']);
  });
});

describe('secrets from files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-secrets-'));
  const secret = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('read ${file:PATH} as the whole value, without the line break at its end', () => {
    const file = secret('webhook-key', 'from-a-mounted-secret\n');
    expect(parseConfig(minimal({ crm: { webhook_api_key: `\${file:${file}}` } }), {}).crm.webhook_api_key).toBe('from-a-mounted-secret');
  });

  it('keep the text of a file exactly: no YAML, no further references, inner line breaks kept', () => {
    const file = secret('odd', '#${NOT_A_REF} {a: 1}\nsecond line\n');
    const config = parseConfig(minimal({ admin: { api_key: `\${file:${file}}` } }), { NOT_A_REF: 'x' });
    expect(config.admin.api_key).toBe('#${NOT_A_REF} {a: 1}\nsecond line');
  });

  it.each<[string, Record<string, string>, string]>([
    ['the variable itself when it is set', { CRM_KEY: 'from-env', CRM_KEY_FILE: '/nonexistent' }, 'from-env'],
    ['VAR_FILE when VAR is unset', { CRM_KEY_FILE: 'FILE' }, 'from-the-file'],
    ['VAR_FILE when VAR is empty', { CRM_KEY: '', CRM_KEY_FILE: 'FILE' }, 'from-the-file'],
  ])('take %s', (_label, env, expected) => {
    const file = secret('crm-key', 'from-the-file\n');
    const withFile = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === 'FILE' ? file : v]));
    expect(parseConfig(minimal({ crm: { webhook_api_key: '${CRM_KEY}' } }), withFile).crm.webhook_api_key).toBe(expected);
  });

  it('turn a number read from a file into a number where the schema asks for one', () => {
    const file = secret('port', '9091\n');
    expect(parseConfig(minimal({ server: { port: '${PORT:-8080}' } }), { PORT_FILE: file }).server.port).toBe(9091);
  });

  it.each<[string, () => [Doc, Record<string, string>], RegExp]>([
    [
      'a ${file:} that does not exist',
      () => [minimal({ crm: { webhook_api_key: '${file:/nonexistent/secret}' } }), {}],
      /crm\.webhook_api_key: cannot read the file \/nonexistent\/secret \(ENOENT\)/,
    ],
    [
      'a VAR_FILE that does not exist',
      () => [minimal({ crm: { webhook_api_key: '${CRM_KEY}' } }), { CRM_KEY_FILE: '/nonexistent/key' }],
      /crm\.webhook_api_key: cannot read the CRM_KEY_FILE file \/nonexistent\/key/,
    ],
    ['a secret file over 64 KiB', () => [minimal({ crm: { webhook_api_key: `\${file:${secret('huge', 'x'.repeat(70_000))}}` } }), {}], /is over 65536 bytes/],
    ['neither VAR nor VAR_FILE', () => [minimal({ crm: { webhook_api_key: '${CRM_KEY}' } }), {}], /CRM_KEY is not set \(nor CRM_KEY_FILE\)/],
  ])('refuse %s, naming the key', (_label, make, message) => {
    const [document, env] = make();
    expect(configError(document, env)).toMatch(message);
  });
});

describe('a valid configuration', () => {
  it('is frozen, so nothing can change it after the start', () => {
    const config = parseConfig(minimal(), {});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.sms)).toBe(true);
  });

  it.each<[string, string | number, number]>([
    ['0 without a unit (the same in every unit)', 0, 0],
    ['"0" without a unit', '0', 0],
    ['milliseconds', '250ms', 250],
    ['seconds with a fraction', '1.5s', 1_500],
    ['minutes', '5m', 300_000],
    ['hours', '72h', 259_200_000],
    ['days', '2d', 172_800_000],
  ])('reads a duration of %s', (_label, written, ms) => {
    expect(parseConfig(minimal({ delivery: { unknown_after: written } }), {}).delivery.unknown_after).toBe(ms);
  });

  it('gets defaults for everything not written, with durations in milliseconds', () => {
    const config = parseConfig(minimal(), {});
    expect(config.server).toMatchObject({ port: 8080, body_limit_bytes: 5 * 1024 * 1024 });
    expect(config.sms).toMatchObject({ max_segments: 10, batch_deadline: 20_000, send_timeout: 10_000 });
    expect(config.database.url).toBe('sqlite:./data/gateway.db');
  });
});

describe('loadConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it('loads the shipped config.yaml with no environment at all', async () => {
    const config = await loadConfig('config.yaml', {});
    expect(config.server.port).toBe(8080);
    expect(Object.keys(config.providers)).toEqual(['sandbox']);
  });

  it('names the file and the key when the YAML has an unknown key', async () => {
    const file = write('unknown.yaml', 'providers:\n  sandbox: { type: sandbox }\nauth:\n  api_keys: [k]\nsms:\n  max_segmnts: 3\n');
    await expect(loadConfig(file, {})).rejects.toThrow(new RegExp(`${file.replace(/[.]/g, '\\.')} is not valid:\\n  - unknown key sms\\.max_segmnts`));
  });

  it('says the file cannot be read when it does not exist', async () => {
    await expect(loadConfig(join(dir, 'missing.yaml'), {})).rejects.toThrow(/cannot read .*missing\.yaml/);
  });

  it('says the file is not valid YAML', async () => {
    await expect(loadConfig(write('broken.yaml', 'server:\n  port: [1, 2\n'), {})).rejects.toThrow(/broken\.yaml is not valid YAML/);
  });

  const SECRET = 'Zq7-not-to-be-printed-9xK';
  it.each([
    ['a value holding ": "', `admin:\n  api_key: ${SECRET}: more\n`, /at line 2, column 12 \(in admin\.api_key\): a value holds ": "/],
    [
      'an unclosed quote',
      `server:\n  port: 8080\nadmin:\n  api_key: "${SECRET}\nauth:\n  api_keys: [k]\n`,
      /at line 7, column 1 \(in admin\.api_key\): a closing quote/,
    ],
    [
      'a list item out of line',
      `auth:\n  api_keys:\n    - k1\n   - ${SECRET}\n`,
      /at line 4, column 1 \(in auth\.api_keys[.\d]*\): .*list item is out of line/,
    ],
    [
      'an unknown escape in double quotes',
      `crm:\n  webhook_api_key: "ab\\q${SECRET}"\n`,
      /at line 2, column 23 \(in crm\.webhook_api_key\): .*unknown \\ escape/,
    ],
    ['a secret starting with *, read as an alias', `admin:\n  api_key: *${SECRET}\n`, /at line 2, column 12 \(in admin\.api_key\): an alias/],
    ['a secret starting with !, read as a tag', `admin:\n  api_key: !${SECRET}\n`, /at line 2, column 12 \(in admin\.api_key\): .*unknown tag/],
    ['a key written twice', `admin:\n  api_key: ${SECRET}\n  api_key: ${SECRET}\n`, /at line 3, column 3 \(in admin\): a key is written twice/],
    [
      'a brand id beyond 2^53 as a key, which YAML reads rounded',
      `routing:\n  brands:\n    9007199254740993:\n      countries: [FR]\nadmin:\n  api_key: ${SECRET}\n`,
      /at line 3, column 5 \(in routing\.brands[.\d]*\): an integer beyond 2\^53 .*write it in quotes/,
    ],
    [
      'an id beyond 2^53 in a list',
      `quiet_hours:\n  windows:\n    - countries: [FR]\n      brands: [12, -12345678901234567890]\n`,
      /at line 4, column 20 \(in quiet_hours\.windows\.0\.brands[.\d]*\): an integer beyond 2\^53/,
    ],
  ])('names the line, the column and the key path of %s, never the text there', async (_label, text, expected) => {
    const error = await loadConfig(write('secret.yaml', text), {}).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.message).toMatch(/secret\.yaml is not valid YAML at line/);
    expect(error!.message).toMatch(expected);
    expect(error!.message).not.toContain(SECRET.slice(0, 6));
  });

  it('says how to write a reference inside a flow list or map, where YAML reads its { as a map', async () => {
    const file = write('flow.yaml', 'auth:\n  api_keys: [${CRM_API_KEY}]\nproviders:\n  sandbox: { type: sandbox }\n');
    await expect(loadConfig(file, { CRM_API_KEY: 'a-long-random-crm-key-0001' })).rejects.toThrow(
      /flow\.yaml is not valid YAML at .*\n[^]*must be quoted there: "\$\{CRM_API_KEY\}"/,
    );
    const quoted = write('quoted.yaml', 'auth:\n  api_keys: ["${CRM_API_KEY}"]\nproviders:\n  sandbox: { type: sandbox }\n');
    expect((await loadConfig(quoted, { CRM_API_KEY: 'a-long-random-crm-key-0001' })).auth.api_keys).toEqual(['a-long-random-crm-key-0001']);
  });

  it('substitutes from the environment it is given, not process.env', async () => {
    const file = write('env.yaml', 'server:\n  port: ${GW_TEST_PORT:-7000}\nauth:\n  api_keys: [k]\nproviders:\n  sandbox: { type: sandbox }\n');
    expect((await loadConfig(file, { GW_TEST_PORT: '7100' })).server.port).toBe(7100);
  });
});

describe('event relay keys (docs/events.md)', () => {
  const kafka = { transport: 'kafka', kafka: { brokers: ['127.0.0.1:9092'], topic: 'crm' } };
  it.each([
    ['kafka without its block', { crm: { integration: { transport: 'kafka' } } }, 'crm.integration.kafka: required when transport is kafka'],
    [
      'a broker that is not host:port',
      { crm: { integration: { ...kafka, kafka: { brokers: ['kafka'], topic: 'crm' } } } },
      'crm.integration.kafka.brokers.0: must be host:port',
    ],
    [
      'two kinds on one method and path',
      { crm: { integration: { events: { casino: { path: '/v1/integration/payment' } } } } },
      'casino and payment both use POST /v1/integration/payment',
    ],
    ['an unknown kind', { crm: { integration: { events: { poker: { path: '/p' } } } } }, 'poker'],
    ['a path without its slash', { crm: { integration: { events: { payment: { path: 'v1/pay' } } } } }, 'crm.integration.events.payment.path: must be a path'],
    [
      'a send lease shorter than a provider call may take',
      { sms: { dispatch_lease: '8s' } },
      'sms.dispatch_lease: must be longer than sms.send_timeout and sms.batch_deadline',
    ],
    [
      'a send lease shorter than a batch may take',
      { sms: { dispatch_lease: '15s', send_timeout: '5s' } },
      'sms.dispatch_lease: must be longer than sms.send_timeout and sms.batch_deadline',
    ],
    [
      'a credit lease a push could outlive',
      { operator: { credits: { lease: '20s', timeout: '10s' } } },
      'operator.credits.lease: must be longer than twice operator.credits.timeout',
    ],
    [
      'a lease shorter than a Kafka send may take',
      { crm: { integration: { ...kafka, timeout: '10s' } }, relay: { lease: '20s' } },
      'relay.lease: must be longer than 3 × crm.integration.timeout',
    ],
  ])('refuses %s, naming it', (_label, extra, message) => {
    expect(() => parseConfig(minimal(extra), {})).toThrow(message);
  });

  it('takes kafka, per-kind overrides, push credentials and retry_client_errors', () => {
    const config = parseConfig(
      minimal({
        crm: { integration: { ...kafka, events: { device_link: { type: 'LINK', topic: 'devices' } }, push: { username: 'u', password: 'p' } } },
        relay: { retry_client_errors: true },
      }),
      {},
    );
    expect(config.crm.integration.events.device_link).toEqual({ type: 'LINK', topic: 'devices' });
    expect(config.crm.integration.push).toEqual({ username: 'u', password: 'p' });
    expect(config.relay.retry_client_errors).toBe(true);
  });
});
