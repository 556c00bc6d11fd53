/**
 * The package's bin (dist/src/bin.js) on a Node older than 22.19, as `npx crm-sms-gateway …` and cron lines run it on
 * a server whose node is Node 20: it re-runs the command through .ci/node24, the shim `npm start` uses, and says in
 * one line what it needs where there is no shim. Runs only where such an old node is installed (this machine's
 * /usr/bin/node is Node 20); on Node 24 alone, the bin hands over in-process and test/commands/cli.test.ts covers it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/gateway.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'src', 'bin.js');

/** A node on this machine older than 22.19 (the machine's own, before .ci/node24 put Node 24 first on PATH). */
function findOldNode(): { path: string; version: string } | undefined {
  const candidates = [...(process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'node')), '/usr/bin/node', '/usr/local/bin/node'];
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      const version = execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
      const [major = 0, minor = 0] = version.split('.').map(Number);
      if (major < 22 || (major === 22 && minor < 19)) return { path, version };
    } catch {
      // not runnable here
    }
  }
  return undefined;
}

const old = findOldNode();

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: Record<string, string | undefined>, cwd = ROOT): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.runIf(old)(`the bin on the machine's Node ${old?.version ?? '(none older than 22.19 here)'}`, () => {
  let dir: string;
  let config: string;
  /** The old node first on PATH, as on a server where Node 24 is not installed system-wide. */
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-bin-'));
    config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      [
        'server: { environment: development, host: 127.0.0.1, port: 0 }',
        `database: { url: "sqlite:${join(dir, 'ledger.db')}" }`,
        'auth: { api_keys: [bin-test-crm-key-000001] }',
        'crm: { webhook_url: "http://127.0.0.1:9", webhook_api_key: bin-test-webhook-key-01 }',
        'providers: { sandbox: { type: sandbox, receipt_secret: bin-test-receipt-secret-01 } }',
      ].join('\n'),
    );
    // npm_config_cache: npx's cache of its own, so no earlier run's link to another bin path is reused.
    // npm_config_ignore_scripts: with a fresh cache, npx installs this package from its folder and runs its `prepare`
    // script, which rebuilt dist/ under the other test files' running CLIs (a CI run failed on a half-written module).
    env = {
      ...process.env,
      PATH: `${dirname(old!.path)}${delimiter}${process.env.PATH}`,
      npm_config_cache: join(dir, 'npm-cache'),
      npm_config_ignore_scripts: 'true',
    };
    // A fresh clone whose tests run on a Node 24 from elsewhere has no .node24/ yet: the shim's one-time install (and
    // its lines on stderr) happens here, not in the first command a test asserts on, whichever file ran first.
    await run('sh', [join(ROOT, '.ci', 'node24'), '--env'], env);
  }, 180_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs the command on Node 24 through .ci/node24', async () => {
    const result = await run(old!.path, [BIN, '--version'], env);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^crm-sms-gateway \d+\.\d+\.\d+ \(node v(2[3-9]|[3-9]\d)\.\d+\.\d+\)\n$/);
    expect(result.code).toBe(0);
  });

  it('`npx crm-sms-gateway migrate` then `flush`, as docs/operations.md documents them for cron', async () => {
    expect((await run('node', ['--version'], env)).stdout.trim()).toBe(`v${old!.version}`);
    const migrate = await run('npx', ['crm-sms-gateway', 'migrate', '--config', config], env);
    expect(migrate.stdout, migrate.stderr).toMatch(/^applied \d+ migration\(s\): 2026-11-23-01-messages,/);
    expect(migrate.code).toBe(0);
    const flush = await run('npx', ['crm-sms-gateway', 'flush', '--config', config], env);
    expect(flush.stdout, flush.stderr).toBe('flush: posted=0 failed=0 dead=0 left=0 dead_total=0 unknown_marked=0\n');
    expect(flush.code).toBe(0);
    expect(migrate.stderr + flush.stderr).not.toMatch(/TypeError|\n\s+at /);
  }, 120_000);

  it('hands SIGTERM to serve, which stops in order and exits 0', async () => {
    const child = spawn(old!.path, [BIN, 'serve', '--config', config], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const url = await waitFor(() => /"url":"(http:[^"]+)"/.exec(out)?.[1], 30_000, `serve listening (${out})`);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    child.kill('SIGTERM');
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(out).toMatch(/"signal":"SIGTERM"[^\n]*"msg":"shutting down"/);
  }, 60_000);

  it('without the shim (an installed package), says in one line which Node it needs', async () => {
    const lonely = join(dir, 'installed', 'dist', 'src');
    mkdirSync(lonely, { recursive: true });
    copyFileSync(BIN, join(lonely, 'bin.js'));
    writeFileSync(join(dir, 'installed', 'package.json'), '{"type":"module"}');
    const result = await run(old!.path, [join(lonely, 'bin.js'), 'flush'], env, dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      new RegExp(`^crm-sms-gateway needs Node\\.js 22\\.19 or newer and this is v${old!.version.replaceAll('.', '\\.')}: install Node 24 [^\\n]*\\n$`),
    );
  });
});
