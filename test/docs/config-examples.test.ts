/**
 * Every configuration the docs show starts: each ```yaml block of README.md and docs/*.md, and every
 * commented example of config.yaml, read from where it is written, never copied here. A block is loaded with its
 * `${VAR}` references set to plausible values and started (a real listener on an ephemeral port, a real ledger);
 * one that says `environment: production` must pass production's checks, on PostgreSQL where it names a
 * postgres:// database. A block that is only part of a configuration says so on the line before it
 * (`<!-- fragment: … -->`) and is merged into the shipped config.yaml; the commented examples of config.yaml are
 * uncommented in place, as an operator would.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../src/config/load.js';
import { findUnsafeSettings } from '../../src/config/production-checks.js';
import type { Config } from '../../src/config/schema.js';
import { startGateway } from '../../src/gateway.js';
import { dropPostgresDatabase, postgresDatabaseUrl, testDatabaseUrl } from '../helpers/database.js';
import { mergeConfigDocument } from '../helpers/gateway.js';
import { codeBlocks, markdownFiles, readRepoFile } from '../helpers/markdown.js';

/** A value for each variable the examples reference without a default, shaped as the real one is. */
const PLAUSIBLE: Record<string, string> = {
  CRM_API_KEY: 'crm-api-key-7f3a9c1e5b2d4f60',
  CRM_WEBHOOK_URL: 'https://crm.example.com/hooks',
  CRM_WEBHOOK_API_KEY: 'crm-webhook-key-8e2b6d0a4c1f9e37',
  ADMIN_API_KEY: 'admin-api-key-3c9e1a7f5b2d8e40',
  PUBLIC_URL: 'https://crm-gateway.example.com',
  SANDBOX_RECEIPT_SECRET: '5f0c7a1e9b3d2c4e6a8f0b1d3c5e7a9b',
  TWILIO_ACCOUNT_SID: 'AC0123456789abcdef0123456789abcdef',
  TWILIO_AUTH_TOKEN: '0123456789abcdef0123456789abcdef',
  TWILIO_FROM: '+15005550006',
  VONAGE_API_KEY: 'a1b2c3d4',
  VONAGE_API_SECRET: 'Vv0nageSecret12',
  VONAGE_SIGNATURE_SECRET: 'vonage-signature-secret-0a1b2c3d',
  INFOBIP_BASE_URL: 'https://xk8v2.api.infobip.com',
  INFOBIP_API_KEY: 'infobip-api-key-0123456789abcdef',
  INFOBIP_WEBHOOK_SECRET: 'infobip-webhook-secret-0a1b2c3d',
  SINCH_SERVICE_PLAN_ID: '0a1b2c3d4e5f60718293a4b5c6d7e8f9',
  SINCH_API_TOKEN: 'sinch-api-token-0123456789abcdef',
  SINCH_WEBHOOK_SECRET: 'sinch-webhook-secret-0a1b2c3d4e',
  SMPP_SYSTEM_ID: 'casino01',
  SMPP_PASSWORD: 'pw8chars',
  CRM_INTEGRATION_URL: 'https://crm.example.com/integration',
  CRM_INTEGRATION_TOKEN: 'crm-integration-token-0123456789',
  RELAY_API_KEY: 'relay-api-key-0a1b2c3d4e5f6071',
};

/** Variables referenced without a default (`${VAR}`) outside comments, in order; those with `:-` need none. */
function requiredVariables(text: string): string[] {
  const values = text.replace(/(^|\s)#.*$/gm, '');
  return [...new Set([...values.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!))];
}

/** The environment a block runs in: each variable it needs, plus where the test puts its ledger and listener. */
function environmentFor(text: string, databaseUrl: string): Record<string, string> {
  const env: Record<string, string> = { DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' };
  for (const name of requiredVariables(text)) {
    if (name === 'DATABASE_URL') continue;
    const value = PLAUSIBLE[name];
    if (value === undefined) throw new Error(`${name}: give it a plausible value in PLAUSIBLE (test/docs/config-examples.test.ts)`);
    env[name] = value;
  }
  return env;
}

type Doc = Record<string, unknown>;
const isMap = (v: unknown): v is Doc => v !== null && typeof v === 'object' && !Array.isArray(v);

interface CommentedExample {
  line: number;
  key: string;
  /** 0-based indexes of its lines in config.yaml. */
  lines: number[];
}

/**
 * config.yaml's commented examples: a comment whose text starts with `key:` right after `# `, and the comment lines
 * below it at the same `#` column whose text is indented further. Prose comments start with a word, not `key:`.
 */
function commentedExamples(text: string): CommentedExample[] {
  const lines = text.split('\n');
  const examples: CommentedExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const start = /^(\s*)# ([a-z_]+):(\s|$)/.exec(lines[i]!);
    if (!start) continue;
    const example = { line: i + 1, key: start[2]!, lines: [i] };
    while (i + 1 < lines.length && lines[i + 1]!.startsWith(`${start[1]}#   `)) example.lines.push(++i);
    examples.push(example);
  }
  return examples;
}

/** config.yaml with the given examples uncommented in place (`# ` removed, so each line keeps its indentation). */
function uncomment(text: string, examples: CommentedExample[]): string {
  const chosen = new Set(examples.flatMap((e) => e.lines));
  return text
    .split('\n')
    .map((line, i) => (chosen.has(i) ? line.replace(/^(\s*)# /, '$1') : line))
    .join('\n');
}

/** Starts the configuration on an ephemeral loopback port, checks /readyz and stops it. */
async function startsAndAnswers(config: Readonly<Config>): Promise<void> {
  const gateway = await startGateway({ ...config, server: { ...config.server, host: '127.0.0.1', port: 0 } }, { logger: pino({ level: 'silent' }) });
  try {
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
  } finally {
    await gateway.close();
  }
}

const refused = (config: Readonly<Config>) => findUnsafeSettings(config).filter((f) => f.severity === 'refuse');

const SHIPPED = readRepoFile('config.yaml');
const blocks = markdownFiles().flatMap((file) => codeBlocks(file).filter((b) => b.lang === 'yaml'));
const fragments = blocks.filter((b) => b.note?.startsWith('fragment:'));
const whole = blocks.filter((b) => !b.note?.startsWith('fragment:'));

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-doc-configs-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the docs show configurations, each either whole or marked as a fragment', () => {
  it('finds the README production block and the fragments of docs/', () => {
    expect(whole.map((b) => b.file)).toContain('README.md');
    expect(fragments.length).toBeGreaterThanOrEqual(6);
  });

  it('marks a fragment with the reason on the line before it', () => {
    // Any other comment in front of a yaml block would look like a marker to a reader and be ignored here.
    expect(blocks.filter((b) => b.note !== undefined && !b.note.startsWith('fragment:')).map((b) => `${b.file}:${b.line}`)).toEqual([]);
  });
});

describe.each(whole.map((b) => [`${b.file}:${b.line}`, b] as const))('the whole configuration at %s', (where, block) => {
  const production = /^\s*environment:\s*production\b/m.test(block.text);
  const namesPostgres = /postgres(ql)?:\/\//.test(block.text);
  let databaseDir: string;
  beforeAll(() => {
    databaseDir = mkdtempSync(join(dir, 'whole-'));
  });
  afterAll(async () => {
    if (namesPostgres) await dropPostgresDatabase(databaseDir);
  });

  it(`loads with its variables set${production ? ', passes production checks' : ''} and starts`, async () => {
    const databaseUrl = namesPostgres ? postgresDatabaseUrl(databaseDir) : testDatabaseUrl(databaseDir);
    const file = join(databaseDir, 'config.yaml');
    writeFileSync(file, block.text);
    const config = await loadConfig(file, environmentFor(block.text, databaseUrl));
    if (namesPostgres) expect(config.database.url).toMatch(/^postgres(ql)?:\/\//);
    if (production) {
      expect(config.server.environment).toBe('production');
      expect(refused(config), where).toEqual([]);
    }
    await startsAndAnswers(config);
  });
});

describe.each(fragments.map((b) => [`${b.file}:${b.line}`, b] as const))('the fragment at %s', (where, block) => {
  it('merged into the shipped config.yaml, loads with its variables set and starts', async () => {
    const fragment = YAML.parse(block.text) as unknown;
    expect(isMap(fragment), `${where} is a YAML mapping`).toBe(true);
    const document = mergeConfigDocument(YAML.parse(SHIPPED) as Doc, fragment as Doc);
    const config = parseConfig(document, environmentFor(`${SHIPPED}\n${block.text}`, testDatabaseUrl(mkdtempSync(join(dir, 'fragment-')))), where);
    await startsAndAnswers(config);
  });
});

describe("config.yaml's commented examples", () => {
  const examples = commentedExamples(SHIPPED);

  it('are found, each as YAML once uncommented alone', () => {
    expect(examples.length).toBeGreaterThanOrEqual(5);
    for (const example of examples) {
      expect(() => YAML.parse(uncomment(SHIPPED, [example])), `config.yaml:${example.line} (${example.key})`).not.toThrow();
    }
  });

  it('all uncommented, load with their variables set and start', async () => {
    const text = uncomment(SHIPPED, examples);
    const file = join(dir, 'uncommented.yaml');
    writeFileSync(file, text);
    const config = await loadConfig(file, environmentFor(text, testDatabaseUrl(mkdtempSync(join(dir, 'uncommented-')))));
    expect(Object.keys(config.providers).length).toBeGreaterThan(1);
    await startsAndAnswers(config);
  });

  it('all uncommented, pass production checks with GATEWAY_ENV=production and every variable of the image set', async () => {
    const text = uncomment(SHIPPED, examples);
    const file = join(dir, 'production.yaml');
    writeFileSync(file, text);
    const databaseUrl = 'postgres://gateway:secret@db.example.com:5432/crm_sms_gateway';
    const env = {
      ...environmentFor(text, databaseUrl),
      GATEWAY_ENV: 'production',
      ...Object.fromEntries(
        ['CRM_API_KEY', 'CRM_WEBHOOK_URL', 'CRM_WEBHOOK_API_KEY', 'ADMIN_API_KEY', 'PUBLIC_URL', 'SANDBOX_RECEIPT_SECRET'].map((n) => [n, PLAUSIBLE[n]!]),
      ),
    };
    const config = await loadConfig(file, env);
    expect(config.server.environment).toBe('production');
    expect(refused(config)).toEqual([]);
  });
});

it('is the file the fragment markers name', () => {
  expect(import.meta.filename.endsWith(join('test', 'docs', 'config-examples.test.ts'))).toBe(true);
  expect(fragments.filter((b) => !b.note!.includes('test/docs/config-examples.test.ts')).map((b) => `${b.file}:${b.line}`)).toEqual([]);
});
