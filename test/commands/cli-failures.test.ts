/**
 * The CLI fails like a tool: one line naming the key and what to do, the right exit code, no stack trace. Each case
 * runs the built command (dist/src/cli.js, as the bin hands over to it) as a child process on real ports, a real
 * SQLite file and, with TEST_DATABASE_URL, the real PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/child.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { waitFor } from '../helpers/gateway.js';

/** Whether a user who owns none of these files can read them and pass through every folder above them. */
function othersCanReach(files: string[]): boolean {
  return files.every((file) => {
    let path = realpathSync(file);
    if ((statSync(path).mode & 0o004) === 0) return false;
    for (let dir = dirname(path); dir !== path; path = dir, dir = dirname(dir)) if ((statSync(dir).mode & 0o001) === 0) return false;
    return true;
  });
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-cli-failures-'));
  // The EACCES case runs the command as an unprivileged user, which must reach the config and the ledger.
  chmodSync(dir, 0o777);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], options: { env?: Record<string, string>; uid?: number } = {}): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A config file in development (short test keys only warn) with what each case changes. */
function config(name: string, lines: string[], database = `sqlite:${join(dir, `${name}.db`)}`): string {
  const file = join(dir, `${name}.yaml`);
  const server = lines.filter((l) => l.startsWith('  '));
  const rest = lines.filter((l) => !l.startsWith('  '));
  writeFileSync(
    file,
    [
      'server:',
      '  environment: development',
      '  host: 127.0.0.1',
      ...(server.some((l) => l.startsWith('  port:')) ? [] : ['  port: 0']),
      ...server,
      'database:',
      `  url: ${database}`,
      'auth:',
      '  api_keys: [cli-failures-crm-key-0001]',
      'crm:',
      '  webhook_url: http://127.0.0.1:9',
      '  webhook_api_key: cli-failures-webhook-key',
      'providers:',
      '  sandbox: { type: sandbox, receipt_secret: cli-failures-receipt-secret }',
      'log:',
      '  level: warn',
      ...rest,
    ].join('\n'),
  );
  chmodSync(file, 0o644);
  return file;
}

/** What a failure must look like: exactly one line on stderr, no stack frame. */
function oneLine(result: Result): string {
  expect(result.stderr).not.toMatch(/\n\s+at /);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  return lines[0]!;
}

async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('--version and --help', () => {
  it('--version and -v print the package version and exit 0', async () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const result = await run([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`crm-sms-gateway ${version} (node ${process.version})\n`);
    }
  });

  it.each([
    ['serve', /--no-migrate/],
    ['migrate', /Brings the database schema up to date/],
    ['flush', /Never migrates/],
    ['retention', /one retention pass/],
    ['import', /NDJSON user records/],
  ])('%s --help describes that command only', async (command, text) => {
    const result = await run([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^usage: crm-sms-gateway ${command} `));
    expect(result.stdout).toMatch(text);
    expect(result.stdout).not.toMatch(/^commands:/m);
  });

  it('--help alone lists every command', async () => {
    const result = await run(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['serve', 'migrate', 'flush', 'retention', 'import users FILE']) expect(result.stdout).toContain(`  ${command} `);
  });
});

describe('usage errors exit 2 with one line, then the usage', () => {
  it.each([
    [['serve', '--frob'], "crm-sms-gateway: Unknown option '--frob'", /^usage: crm-sms-gateway serve /m],
    [['flush', '--config'], "crm-sms-gateway: Option '-c, --config <value>' argument missing", /^usage: crm-sms-gateway flush /m],
    [['--frob'], "crm-sms-gateway: Unknown option '--frob'", /^usage: crm-sms-gateway <command>/m],
    [['migrate', 'now'], 'crm-sms-gateway: unexpected argument "now"', /^usage: crm-sms-gateway migrate /m],
    [['import', 'players', 'x.ndjson'], 'crm-sms-gateway: unexpected arguments', /^usage: crm-sms-gateway import users FILE/m],
  ])('%j', async (args, first, usage) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(first);
    expect(result.stderr).toMatch(usage);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('listeners that cannot start name their key', () => {
  it('server.port in use: one line with the address, exit 1', async () => {
    const held = await holdPort();
    try {
      const result = await run(['serve', '--config', config('api-in-use', [`  port: ${held.port}`])]);
      expect(result.code).toBe(1);
      expect(oneLine(result)).toBe(
        `crm-sms-gateway: server.port: 127.0.0.1:${held.port} is already in use (EADDRINUSE): stop what listens there or choose another port`,
      );
    } finally {
      held.server.close();
    }
  });

  it('metrics.port in use: names metrics.port, not server.port', async () => {
    const held = await holdPort();
    try {
      const result = await run(['serve', '--config', config('metrics-in-use', [`metrics:\n  port: ${held.port}`])]);
      expect(result.code).toBe(1);
      expect(oneLine(result)).toMatch(new RegExp(`^crm-sms-gateway: metrics\\.port: 127\\.0\\.0\\.1:${held.port} is already in use \\(EADDRINUSE\\)`));
    } finally {
      held.server.close();
    }
  });

  // As root the command runs as nobody (65534), as the image's user would; otherwise as this user. Nobody must be
  // able to reach node and the CLI: a checkout under a private directory (mktemp -d is 0700) cannot be tested so.
  const asRoot = process.getuid?.() === 0;
  it.skipIf(asRoot && !othersCanReach([process.execPath, CLI]))('a port below 1024 for an unprivileged user: EACCES, naming server.port', async () => {
    const uid = asRoot ? 65534 : undefined;
    const result = await run(['serve', '--config', config('privileged-port', ['  port: 81'])], uid === undefined ? {} : { uid });
    expect(result.code).toBe(1);
    expect(oneLine(result)).toBe(
      'crm-sms-gateway: server.port: not allowed to listen on 127.0.0.1:81 (EACCES): ports below 1024 need privileges; use 1024 or above',
    );
  });
});

describe('a database that cannot be used names database.url', () => {
  it.each(['migrate', 'serve', 'flush', 'retention'])('%s: PostgreSQL where nothing listens, one line with host:port, exit 1', async (command) => {
    const held = await holdPort();
    held.server.close(); // a port that was just free: nothing listens there now
    const result = await run([command, '--config', config(`pg-down-${command}`, [], `postgres://gateway:secret-pw@127.0.0.1:${held.port}/ledger`)]);
    expect(result.code).toBe(1);
    const line = oneLine(result);
    expect(line).toMatch(new RegExp(`^crm-sms-gateway: database\\.url: cannot use PostgreSQL at 127\\.0\\.0\\.1:${held.port}/ledger: nothing listens there: `));
    expect(line).toContain('ECONNREFUSED');
    expect(line).not.toContain('secret-pw');
  });

  it.runIf(process.env.TEST_DATABASE_URL)('PostgreSQL without that database: 3D000, naming database.url', async () => {
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/gw_missing_${process.pid}`;
    const result = await run(['migrate', '--config', config('pg-no-database', [], url.toString())]);
    expect(result.code).toBe(1);
    expect(oneLine(result)).toMatch(
      /^crm-sms-gateway: database\.url: cannot use PostgreSQL at [^ ]+\/gw_missing_\d+: the database does not exist .*\(3D000\)$/,
    );
  });

  it('a SQLite file under a path that is a file: one line naming the file', async () => {
    writeFileSync(join(dir, 'not-a-folder'), '');
    const result = await run(['migrate', '--config', config('sqlite-bad-path', [], `sqlite:${join(dir, 'not-a-folder', 'ledger.db')}`)]);
    expect(result.code).toBe(1);
    expect(oneLine(result)).toMatch(
      new RegExp(`^crm-sms-gateway: database\\.url: cannot use the SQLite file ${join(dir, 'not-a-folder', 'ledger.db')}: .*(EEXIST|ENOTDIR)`),
    );
  });
});

/** A production config in `dir` that production accepts but for what the test writes in place of its values. */
function productionConfig(name: string, values: { databaseUrl: string; webhookUrl: string; adminKey?: string }): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'server:',
      '  environment: production',
      '  host: 127.0.0.1',
      'database:',
      `  url: ${values.databaseUrl}`,
      'auth:',
      '  api_keys: [a-long-random-crm-key-0001]',
      'admin:',
      `  api_key: ${values.adminKey ?? 'a-long-random-admin-key-0001'}`,
      'crm:',
      `  webhook_url: ${values.webhookUrl}`,
      '  webhook_api_key: a-long-random-webhook-key-01',
      'providers:',
      '  sandbox: { type: sandbox, receipt_secret: a-long-random-receipt-secret-01 }',
    ].join('\n'),
  );
  return file;
}

describe('configuration errors exit 78', () => {
  it('names every missing environment variable at once', async () => {
    const file = config('missing-vars', ['relay:\n  api_keys: ["${RELAY_KEY}"]'], '${CLI_TEST_DATABASE_URL}');
    const result = await run(['migrate', '--config', file]);
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('2 environment variables are missing:\n');
    expect(result.stderr).toContain('  - database.url: environment variable CLI_TEST_DATABASE_URL is not set');
    expect(result.stderr).toContain('  - relay.api_keys.0: environment variable RELAY_KEY is not set');
  });

  it('refuses a duration without a unit, naming the key', async () => {
    const result = await run(['serve', '--config', config('bare-duration', ['  shutdown_timeout: 20'])]);
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('server.shutdown_timeout: 20 has no unit (write e.g. 20ms or 20s)');
  });

  it('in production, a misspelt DATABASE_URL or an unset CRM_WEBHOOK_URL falling back to a default is refused', async () => {
    const file = productionConfig('production-defaults', {
      databaseUrl: `\${DATABASE_URL:-sqlite:${join(dir, 'production-defaults.db')}}`,
      webhookUrl: '${CRM_WEBHOOK_URL:-http://127.0.0.1:9090}',
    });
    for (const command of ['serve', 'migrate', 'flush']) {
      const result = await run([command, '--config', file], { env: { DATABSE_URL: 'postgres://typo.example/gw' } });
      expect(result.code).toBe(78);
      expect(result.stderr).toContain(
        '  - database.url comes from the default of ${DATABASE_URL:-…} (DATABASE_URL not set): production takes it only when set',
      );
      expect(result.stderr).toContain('  - crm.webhook_url comes from the default of ${CRM_WEBHOOK_URL:-…} (CRM_WEBHOOK_URL not set)');
    }
    // import users serves nobody, but a misspelt DATABASE_URL would load players into an empty SQLite file.
    const imported = await run(['import', 'users', join(dir, 'none.ndjson'), '--config', file], { env: { DATABSE_URL: 'postgres://typo.example/gw' } });
    expect(imported.code).toBe(78);
    expect(imported.stderr).toContain('  - database.url comes from the default of ${DATABASE_URL:-…}');
    expect(imported.stderr).not.toContain('crm.webhook_url');
    const set = await run(['migrate', '--config', file], {
      env: { DATABASE_URL: `sqlite:${join(dir, 'production-set.db')}`, CRM_WEBHOOK_URL: 'https://crm.example.com' },
    });
    expect(set.code).toBe(0);
  });

  it('in production, a key file ending in a blank line is refused naming the key; one ending in a line break is read', async () => {
    const keyFile = join(dir, 'admin-key');
    const file = productionConfig('production-key-file', {
      databaseUrl: `sqlite:${join(dir, 'production-key-file.db')}`,
      webhookUrl: 'https://crm.example.com',
      adminKey: `\${file:${keyFile}}`,
    });
    writeFileSync(keyFile, 'a-long-random-admin-key-0001\n\n');
    const refused = await run(['migrate', '--config', file]);
    expect(refused.code).toBe(78);
    expect(refused.stderr).toContain('admin.api_key begins or ends with whitespace (a key file ending in a blank line or in spaces?)');
    expect(refused.stderr).not.toContain('a-long-random-admin-key-0001');
    writeFileSync(keyFile, 'a-long-random-admin-key-0001\n');
    expect((await run(['migrate', '--config', file])).code).toBe(0);
  });
});

describe('the schema: jobs never migrate, serve and migrate run on a newer one', () => {
  let database: TestDatabase;
  let file: string;
  const users = () => {
    const path = join(dir, 'schema-users.ndjson');
    writeFileSync(path, '');
    return path;
  };
  const jobs = () => [
    ['flush', '--config', file],
    ['retention', '--config', file],
    ['import', 'users', users(), '--config', file],
  ];

  beforeAll(async () => {
    database = await createTestDatabase(join(dir, 'schema'), 'flat');
    file = config('schema', ['operator:\n  backend: sql'], database.url);
  });
  afterAll(() => database.drop());

  it('flush, retention and import users refuse a schema not yet migrated, naming migrate, and create nothing', async () => {
    for (const args of jobs()) {
      const result = await run(args);
      expect(result.code, args[0]).toBe(1);
      expect(oneLine(result)).toMatch(
        new RegExp(
          `^crm-sms-gateway: ${args[0] === 'import' ? 'import users' : args[0]}: the database schema is not up to date \\(\\d+ pending: 2026-11-23-01-messages, 2026-11-23-02-delivery, 2026-11-23-10-operator and \\d+ more\\); run \`crm-sms-gateway migrate\` first$`,
        ),
      );
    }
    if (database.url.startsWith('sqlite:')) {
      const db = new BetterSqlite3(database.url.slice('sqlite:'.length), { readonly: true });
      expect(db.prepare("select name from sqlite_master where type = 'table' and name = 'messages'").all()).toEqual([]);
      db.close();
    }
  });

  it('serve --no-migrate on that schema says so in one line', async () => {
    const result = await run(['serve', '--no-migrate', '--config', file]);
    expect(result.code).toBe(1);
    expect(oneLine(result)).toMatch(
      /^crm-sms-gateway: serve --no-migrate: the database schema is not up to date \(\d+ pending: .*run `crm-sms-gateway migrate` first$/,
    );
  });

  it('after migrate they run; a schema migrated by a newer version is refused by them and run on by serve and migrate', async () => {
    const migrated = await run(['migrate', '--config', file]);
    expect(migrated.code, migrated.stderr + migrated.stdout).toBe(0);
    for (const args of jobs()) {
      const result = await run(args);
      expect(result.code, `${args[0]} on a current schema: ${result.stderr}${result.stdout}`).toBe(0);
    }

    // What a newer version's `migrate` leaves: one more row in Kysely's migration table.
    const future = '2099-01-01-00-from-a-newer-version';
    await insertMigrationRow(database.url, future);

    for (const args of jobs()) {
      const result = await run(args);
      expect(result.code, args[0]).toBe(1);
      expect(oneLine(result)).toContain(`the database schema is newer than this crm-sms-gateway (1 unknown migration: ${future}): a newer version migrated it`);
    }
    const migrate = await run(['migrate', '--config', file]);
    expect(migrate.code).toBe(0);
    expect(migrate.stderr).toContain(`warning: the database schema is newer than this crm-sms-gateway (1 unknown migration: ${future})`);
    expect(migrate.stdout).toBe('database schema is up to date\n');

    for (const flags of [[], ['--no-migrate']]) {
      const serve = spawn(process.execPath, [CLI, 'serve', ...flags, '--config', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      serve.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      await waitFor(() => out.includes('running on it as an older version'), 15_000, `serve ${flags.join(' ')} saying it runs on a newer schema`);
      serve.kill('SIGTERM');
      expect(await new Promise((resolve) => serve.on('close', resolve))).toBe(0);
    }
  }, 90_000);
});

async function insertMigrationRow(url: string, name: string): Promise<void> {
  if (url.startsWith('sqlite:')) {
    const db = new BetterSqlite3(url.slice('sqlite:'.length));
    db.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run(name, new Date().toISOString());
    db.close();
    return;
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('insert into kysely_migration (name, timestamp) values ($1, $2)', [name, new Date().toISOString()]);
  } finally {
    await client.end();
  }
}
