/**
 * The crm-sms-gateway command as a child process, built by `npm test`'s pretest step (tsc) into dist/.
 * Exit codes: 0 success, 2 usage, 78 configuration (EX_CONFIG), as operators' scripts and systemd rely on them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, waitFor } from '../helpers/gateway.js';
import { migrations } from '../../src/ledger/engine/migrations.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));
/** The package's bin (package.json), as npx and cron run it. */
const BIN = fileURLToPath(new URL('../../dist/src/bin.js', import.meta.url));
const KEY = 'cli-test-key';

let dir: string;
const children = new Set<ChildProcess>();

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npx tsc -p tsconfig.json\` (npm test does it in pretest)`);
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-cli-'));
});
afterEach(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeConfig(name: string, extra = '', level = 'info', serverExtra: string[] = []): string {
  const file = join(dir, name);
  const yaml = [
    'server:',
    ...(serverExtra.some((line) => line.includes('environment:')) ? [] : ['  environment: development']),
    '  host: 127.0.0.1',
    '  port: 0',
    ...serverExtra,
    'database:',
    `  url: sqlite:${join(dir, `${name}.db`)}`,
    'auth:',
    `  api_keys: [${KEY}]`,
    'providers:',
    '  sandbox:',
    '    type: sandbox',
    '    dlr_delay_ms: 600000',
    'log:',
    `  level: ${level}`,
    extra,
  ].join('\n');
  writeFileSync(file, yaml);
  return file;
}

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(args: string[]): Run {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** The url from serve's pino line `gateway listening` (port 0 is only discoverable this way). */
function listeningUrl(stdout: string): string | undefined {
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const record = JSON.parse(line) as { msg?: string; url?: string };
    if (record.msg === 'gateway listening') return record.url;
  }
  return undefined;
}

describe('the bin', () => {
  it('runs through its own first line, which caps the young generation, the old one’s growth and malloc’s arenas (bench/README.md "Memory")', async () => {
    // Executed as npx and a shell execute it: the kernel reads the `#!/usr/bin/env -S node …` line with the flags.
    // A preloaded one-liner prints the V8 flags the process got, malloc's setting and V8's heap ceiling in MiB;
    // --help exits 0 without a config.
    const child = spawn(BIN, ['--help'], {
      cwd: dir,
      env: {
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        NODE_OPTIONS:
          "--import=data:text/javascript,console.error(JSON.stringify([process.execArgv,process.env.MALLOC_ARENA_MAX,process.getBuiltinModule('node:v8').getHeapStatistics().heap_size_limit/1048576]))",
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    const [flags, arenas, ceiling] = JSON.parse(err.split('\n')[0]!) as [string[], string, number];
    expect([flags, arenas]).toEqual([['--max-semi-space-size=8', '--max-old-space-size=1536'], '2']);
    // Under 2 GiB V8 lets the old generation grow to about twice what a full collection kept, not four times.
    expect(ceiling).toBeGreaterThan(1536);
    expect(ceiling).toBeLessThan(2048);
  });
});

describe('migrate', () => {
  it('creates the ledger tables and exits 0; a second run finds nothing to do', async () => {
    const config = writeConfig('migrate.yaml');
    const first = start(['migrate', '--config', config]);
    expect(await first.exit).toEqual({ code: 0, signal: null });
    expect(first.stdout()).toMatch(/applied \d+ migration\(s\): 2026-11-23-01-messages, 2026-11-23-02-delivery/);
    // Not a terminal: one progress line per migration as it starts (and every few seconds while it runs), and one
    // with its time when it ends.
    expect(first.stderr()).toMatch(/^migrate: 1 of \d+, 2026-11-23-01-messages, \d+ s \(all: \d+ s\)$/m);
    expect(first.stderr()).toMatch(/^migrate: 1 of \d+, 2026-11-23-01-messages, done in \d+ s \(all: \d+ s\)$/m);
    const last = Object.keys(migrations).sort().at(-1)!;
    expect(first.stderr()).toMatch(new RegExp(`^migrate: (\\d+) of \\1, ${last}, done in `, 'm'));

    const db = new BetterSqlite3(join(dir, 'migrate.yaml.db'), { readonly: true });
    const tables = (db.prepare("select name from sqlite_master where type = 'table' order by name").all() as Array<{ name: string }>).map((t) => t.name);
    db.close();
    expect(tables).toEqual(expect.arrayContaining(['messages', 'message_parts', 'receipts', 'conversions', 'conversion_attempts']));

    const second = start(['migrate', '--config', config]);
    expect(await second.exit).toEqual({ code: 0, signal: null });
    expect(second.stdout()).toMatch(/up to date/);
  });
});

describe('retention', () => {
  it('runs one retention pass: old inbound SMS go, younger ones are blanked, one summary line, exit 0', async () => {
    const config = writeConfig('retention.yaml', ['retention:', '  inbound: 90d', '  blank_personal_data_after: 30d'].join('\n'));
    expect(await start(['migrate', '--config', config]).exit).toEqual({ code: 0, signal: null });
    const db = new BetterSqlite3(join(dir, 'retention.yaml.db'));
    const insert = db.prepare(
      'insert into inbound_messages (provider, provider_message_id, from_number, to_number, content, action, matched_user_ids, received_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const day = 86_400_000;
    for (const [id, age] of [
      ['old', 100],
      ['mid', 40],
      ['young', 1],
    ] as const)
      insert.run('sandbox', id, '+447700900555', '+447700900001', 'STOP', 'opt_out', '[]', Date.now() - age * day);
    db.close();
    const run = start(['retention', '--config', config]);
    expect(await run.exit).toEqual({ code: 0, signal: null });
    expect(run.stdout()).toBe('retention: deleted messages=0 receipts=0 events=0 inbound=1 costs=0 blanked messages=0 inbound=1\n');
    const after = new BetterSqlite3(join(dir, 'retention.yaml.db'), { readonly: true });
    const rows = after.prepare('select provider_message_id as id, from_number from inbound_messages order by id').all();
    after.close();
    expect(rows).toEqual([
      { id: 'mid', from_number: '[blanked]' },
      { id: 'young', from_number: '+447700900555' },
    ]);
  });
});

describe('serve', () => {
  it('logs its url, answers /healthz and exits 0 on SIGTERM', async () => {
    const run = start(['serve', '--config', writeConfig('serve.yaml')]);
    const url = await waitFor(() => listeningUrl(run.stdout()), 15_000, `the listening line (stderr: ${run.stderr()})`);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    run.child.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: 0, signal: null });
    expect(run.stdout()).toMatch(/"msg":"shutting down"/);
  });

  it('collects and compacts its heap once, after it listens (src/kit/heap.ts)', async () => {
    const run = start(['serve', '--config', writeConfig('compact.yaml', '', 'debug')]);
    const records = () =>
      run
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{') && line.endsWith('}'))
        .map((line) => JSON.parse(line) as { msg?: string; pause_ms?: number });
    const compacted = await waitFor(() => records().find((r) => r.msg === 'start-up heap compacted'), 15_000, 'the compaction line');
    expect(compacted.pause_ms).toBeGreaterThan(0);
    const order = records().map((r) => r.msg);
    expect(order.indexOf('gateway listening')).toBeLessThan(order.indexOf('start-up heap compacted'));
    run.child.kill('SIGTERM');
    expect((await run.exit).code).toBe(0);
  });

  it('migrates on start, sends a message, and logs neither its content nor the full phone number', async () => {
    const run = start(['serve', '--config', writeConfig('private.yaml', '', 'debug')]);
    const url = await waitFor(() => listeningUrl(run.stdout()), 15_000, 'the listening line');
    const res = await fetch(`${url}/channels/sms/single`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: JSON.stringify(smsMessage('cli-private', { content: 'Secret bonus code 7731', recipient: '+447700900123' })),
    });
    expect(res.status).toBe(200);
    await waitFor(() => run.stdout().includes('sms dispatched'), 10_000, 'the dispatch log line');
    run.child.kill('SIGTERM');
    expect((await run.exit).code).toBe(0);
    const logs = run.stdout() + run.stderr();
    expect(logs).not.toContain('Secret bonus code');
    expect(logs).not.toContain('447700900123');
  });

  it('gives up after server.shutdown_timeout when a request never finishes, and exits 1 naming what it waited for', async () => {
    const run = start(['serve', '--config', writeConfig('stuck.yaml', '', 'info', ['  shutdown_timeout: 1s'])]);
    const url = new URL(await waitFor(() => listeningUrl(run.stdout()), 15_000, 'the listening line'));
    expect((await fetch(`${url}healthz`)).status).toBe(200);
    // A client that announces a body and never sends it keeps its request open (Node's own limit is 5 minutes).
    const stuck = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => stuck.once('connect', resolve));
    stuck.write(
      `POST /channels/sms/single HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\nx-api-key: ${KEY}\r\ncontent-length: 100\r\n\r\n{"id"`,
    );
    stuck.on('error', () => {});
    await new Promise((resolve) => setTimeout(resolve, 100));

    const stoppedAt = Date.now();
    run.child.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: 1, signal: null });
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    expect(run.stdout()).toContain('shutdown still finishing open requests after server.shutdown_timeout (1000 ms)');
    stuck.destroy();
  });

  it('exits 0 on SIGINT as well', async () => {
    const run = start(['serve', '--config', writeConfig('sigint.yaml')]);
    const url = await waitFor(() => listeningUrl(run.stdout()), 15_000, 'the listening line');
    // serve installs its signal handlers just after logging the url; one answered request proves it has.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    run.child.kill('SIGINT');
    expect(await run.exit).toEqual({ code: 0, signal: null });
  });
});

describe('serve --no-migrate (migrations as a separate step)', () => {
  it('refuses an empty database naming the pending migrations, creates nothing, then serves once migrate ran', async () => {
    const config = writeConfig('no-migrate.yaml');
    const refused = start(['serve', '--no-migrate', '--config', config]);
    expect((await refused.exit).code).toBe(1);
    expect(refused.stderr()).toMatch(/schema is not up to date \(\d+ pending: 2026-11-23-01-messages, .*run `crm-sms-gateway migrate` first/);
    const db = new BetterSqlite3(join(dir, 'no-migrate.yaml.db'), { readonly: true });
    const tables = db.prepare("select name from sqlite_master where type = 'table' and name = 'messages'").all();
    db.close();
    expect(tables).toEqual([]);

    expect((await start(['migrate', '--config', config]).exit).code).toBe(0);
    const run = start(['serve', '--no-migrate', '--config', config]);
    const url = await waitFor(() => listeningUrl(run.stdout()), 15_000, `the listening line (stderr: ${run.stderr()})`);
    const res = await fetch(`${url}/channels/sms/single`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: JSON.stringify(smsMessage('no-migrate-1')),
    });
    expect(res.status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: 0, signal: null });
  }, 90_000); // three process starts in a row: slow on a loaded machine

  it('is refused on other commands with exit 2', async () => {
    const run = start(['flush', '--no-migrate', '--config', writeConfig('no-migrate-flush.yaml')]);
    expect((await run.exit).code).toBe(2);
    expect(run.stderr()).toMatch(/--no-migrate applies to serve only/);
  });
});

describe('failures', () => {
  it.each([
    ['an unknown key', 'sms:\n  max_segmnts: 3', /unknown key sms\.max_segmnts/],
    ['a wrong type', 'sms:\n  smart_encoding: sometimes', /sms\.smart_encoding/],
    ['a missing variable', 'crm:\n  webhook_api_key: ${CLI_TEST_UNSET_VAR}', /CLI_TEST_UNSET_VAR/],
  ])('a config with %s exits 78 naming it on stderr, for serve and migrate', async (label, extra, message) => {
    const config = writeConfig(`bad-${label.replace(/\W+/g, '-')}.yaml`, extra);
    const runs = ['serve', 'migrate'].map((command) => start([command, '--config', config]));
    for (const run of runs) {
      expect((await run.exit).code).toBe(78);
      expect(run.stderr()).toMatch(message);
      expect(listeningUrl(run.stdout())).toBeUndefined();
    }
  });

  it('in production, serve, migrate and flush exit 78 naming every unsafe key; nothing is migrated or served', async () => {
    const config = writeConfig(
      'production.yaml',
      'admin:\n  api_key: dev-admin-key-change-me\ncrm:\n  webhook_url: http://127.0.0.1:9\n  webhook_api_key: short',
      'info',
      ['  environment: production'],
    );
    for (const command of ['serve', 'migrate', 'flush']) {
      const run = start([command, '--config', config]);
      expect((await run.exit).code).toBe(78);
      for (const key of ['auth.api_keys[0]', 'admin.api_key', 'crm.webhook_api_key', 'providers.sandbox.receipt_secret']) {
        expect(run.stderr()).toContain(`  - ${key} `);
      }
      expect(listeningUrl(run.stdout())).toBeUndefined();
    }
    expect(existsSync(join(dir, 'production.yaml.db'))).toBe(false);
  });

  it('in development, serve starts and warns once for each unsafe key', async () => {
    const run = start(['serve', '--config', writeConfig('development.yaml', 'admin:\n  api_key: dev-admin-key-change-me')]);
    await waitFor(() => listeningUrl(run.stdout()));
    const warnings = run
      .stdout()
      .split('\n')
      .filter((line) => line.includes('not safe for production'))
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(warnings).toEqual([
      'not safe for production: auth.api_keys[0] is shorter than 16 characters',
      'not safe for production: admin.api_key is a shipped development value',
      expect.stringMatching(/^not safe for production: providers\.sandbox\.receipt_secret is not set/),
    ]);
    run.child.kill('SIGTERM');
    expect((await run.exit).code).toBe(0);
  });

  it('a config file that does not exist exits 78 naming the file', async () => {
    const run = start(['serve', '--config', join(dir, 'nowhere.yaml')]);
    expect((await run.exit).code).toBe(78);
    expect(run.stderr()).toMatch(/cannot read .*nowhere\.yaml/);
  });

  it('an unknown command exits 2 with the usage on stderr', async () => {
    const run = start(['frobnicate', '--config', writeConfig('unknown-command.yaml')]);
    expect((await run.exit).code).toBe(2);
    expect(run.stderr()).toMatch(/unknown command "frobnicate"[\s\S]*usage: crm-sms-gateway/);
  });

  it('no command at all exits 2 with the usage; --help exits 0', async () => {
    const bare = start([]);
    const help = start(['--help']);
    expect((await bare.exit).code).toBe(2);
    expect(bare.stdout()).toMatch(/usage: crm-sms-gateway/);
    expect((await help.exit).code).toBe(0);
    expect(help.stdout()).toMatch(/serve[\s\S]*migrate/);
  });
});
