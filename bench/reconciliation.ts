/**
 * Reconciliation benchmark (docs/connecting-the-crm.md "Player data"): 1,000,000 users in a temp SQLite ledger, all blocked, then one
 * POST /reconciliation {"field":"blocked"} through the real server, run as `crm-sms-gateway serve` in a child
 * process so its peak RSS is the server's alone (VmHWM from /proc), three times in a row. Prints one JSON line;
 * the 1-minute load average is in it because a busy machine inflates the times.
 * Targets: time to last byte ≤ 2 s, server peak RSS ≤ 120 MB.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/reconciliation.js [users]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { parseConfig } from '../src/config/load.js';
import { migrateToLatest, openLedger } from '../src/ledger/engine/db.js';

const USERS = Number(process.argv[2] ?? 1_000_000);
const TARGET_TTLB_MS = 2_000;
const TARGET_RSS_MB = 120;
const API_KEY = 'bench-crm-key';
const RUNS = 3;
const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.js');

/** A realistic stored record (~600 bytes), so the table is the size a real one would be. */
function record(userId: string): string {
  return JSON.stringify({
    user_id: userId,
    username: `player${userId}`,
    first_name: 'Ann',
    last_name: 'Example',
    title: 'Ms',
    sex: 'Female',
    birth_date: '1990-01-01',
    email: `${userId}@example.com`,
    mobile: '21435678',
    mobile_prefix: '+356',
    address: '1 Main Street',
    city: 'Valletta',
    postal_code: 'VLT 1000',
    country: 'MT',
    currency: 'EUR',
    language: 'en',
    market: 'mt',
    origin: 'casino.example.com',
    registration_code: 'ABC123',
    registration_date: '2020-01-01T10:00:00Z',
    affiliate_reference: 'AFF_1',
    roles: ['VIP'],
    is_blocked: true,
    is_excluded: false,
  });
}

async function seed(file: string): Promise<number> {
  const started = performance.now();
  const ledger = openLedger(
    parseConfig({ database: { url: `sqlite:${file}` }, auth: { api_keys: ['x'] }, providers: { s: { type: 'sandbox' } } }, {}).database,
  );
  await migrateToLatest(ledger.db);
  await ledger.close();
  // Bulk load with one prepared statement: the seeding is set-up, not what is measured.
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insert = db.prepare('insert into operator_users (user_id, record_json, is_blocked, is_excluded, updated_at) values (?, ?, 1, 0, 0)');
  const load = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = String(10_000_000 + i);
      insert.run(id, record(id));
    }
  });
  for (let i = 0; i < USERS; i += 50_000) load(i, Math.min(USERS, i + 50_000));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return performance.now() - started;
}

async function waitForHealth(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('server did not start within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

function post(url: string, body: string, started: number): Promise<{ status: number; chunks: Buffer[]; firstByteMs: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' } }, (res) => {
      const firstByteMs = performance.now() - started;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, chunks, firstByteMs }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** VmHWM is the peak resident set of the process so far; VmRSS the current one. */
function rssMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 102.4) / 10;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-bench-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'config.yaml');
  writeFileSync(
    configFile,
    [
      `server: { environment: development, host: 127.0.0.1, port: ${port} }`,
      `database: { url: "sqlite:${join(dir, 'ledger.db')}" }`,
      `auth: { mode: api_key, api_keys: [${API_KEY}] }`,
      'providers: { sandbox: { type: sandbox } }',
      'delivery: { worker: false }',
      'log: { level: warn }',
    ].join('\n'),
  );
  const seedMs = await seed(join(dir, 'ledger.db'));
  const server = spawn(process.execPath, [CLI, 'serve', '--config', configFile], { stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    await waitForHealth(url);
    const idleRss = rssMb(server.pid!, 'VmHWM');
    // The first run is the one the CRM gets from a fresh process (cold JIT); later runs show the steady state.
    const runs: Array<{ first_byte_ms: number; last_byte_ms: number }> = [];
    let complete = true;
    let bytes = 0;
    for (let run = 0; run < RUNS; run++) {
      // node:http rather than fetch: the web-streams client would cost more than the server being measured.
      const started = performance.now();
      const { status, chunks, firstByteMs } = await post(`${url}/reconciliation`, JSON.stringify({ field: 'blocked' }), started);
      runs.push({ first_byte_ms: Math.round(firstByteMs), last_byte_ms: Math.round(performance.now() - started) });
      const body = Buffer.concat(chunks);
      bytes = body.length;
      const parsed = JSON.parse(body.toString('utf8')) as { users: string[]; timestamp?: string; error?: string };
      complete &&= status === 200 && parsed.users.length === USERS && parsed.error === undefined && typeof parsed.timestamp === 'string';
    }
    const rss = rssMb(server.pid!, 'VmHWM');
    const best = Math.min(...runs.map((r) => r.last_byte_ms));
    console.log(
      JSON.stringify({
        bench: 'reconciliation',
        users: USERS,
        complete,
        bytes,
        seed_ms: Math.round(seedMs),
        first_run: runs[0],
        last_byte_ms_per_run: runs.map((r) => r.last_byte_ms),
        server_peak_rss_mb: rss,
        server_peak_rss_before_mb: idleRss,
        load_average_1m: Math.round(loadavg()[0]! * 100) / 100,
        targets: { last_byte_ms: TARGET_TTLB_MS, server_peak_rss_mb: TARGET_RSS_MB },
        within_targets: complete && runs[0]!.last_byte_ms <= TARGET_TTLB_MS && rss <= TARGET_RSS_MB,
        within_targets_warm: complete && best <= TARGET_TTLB_MS && rss <= TARGET_RSS_MB,
      }),
    );
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
