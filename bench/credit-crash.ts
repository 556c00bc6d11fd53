/**
 * Credits pushed through SIGKILLs (docs/crash-windows.md "Credits"): `--credits` credits committed due in a fresh
 * ledger (a SQLite file, or a database of its own on the PostgreSQL server named by --database), then
 * `crm-sms-gateway serve` pushes them to operator.credits.url, a receiver in this process that counts each push by
 * its Idempotency-Key. `serve` is killed with SIGKILL `--kills` times while it pushes, each time started again at
 * once. Prints one JSON line: credits per second from the first push to the last credit received (with no kills,
 * the outbox's throughput), the pushes, credits received twice, the most doubled by one kill, and credits the
 * ledger does not show delivered at the end (lost).
 *
 *   npm run build && node dist/bench/credit-crash.js [--credits 5000] [--kills 0] [--database postgres://…] [--answer-ms 2]
 *     [--lease 2s] [--concurrency N]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { parseConfig } from '../src/config/load.js';
import { inTransaction, migrateToLatest, openLedger } from '../src/ledger/engine/db.js';
import { insertCreditUnlessKnown } from '../src/ledger/credits.js';
import { createBenchDatabase } from './database.js';
import { baseConfig, CLI } from './server-process.js';

const { values: args } = parseArgs({
  options: {
    credits: { type: 'string', default: '5000' },
    kills: { type: 'string', default: '0' },
    database: { type: 'string' },
    'answer-ms': { type: 'string', default: '2' },
    lease: { type: 'string', default: '2s' },
    /** operator.credits.concurrency; unset: the configuration's default. */
    concurrency: { type: 'string' },
  },
});
const CREDITS = Number(args.credits);
const KILLS = Number(args.kills);
const ANSWER_MS = Number(args['answer-ms']);

const database = await createBenchDatabase(args.database);
const databaseConfig = parseConfig({ database: { url: database.url }, auth: { api_keys: ['x'] }, providers: { s: { type: 'sandbox' } } }, {}).database;
const ledger = openLedger(databaseConfig);
await migrateToLatest(ledger.db);
const at = Date.now();
for (let start = 0; start < CREDITS; start += 500) {
  await inTransaction(ledger.db, async (trx) => {
    for (let i = start; i < Math.min(CREDITS, start + 500); i++) {
      await insertCreditUnlessKnown(trx, {
        dedup_key: `bench-${i}`,
        kind: 'bonus',
        user_id: `player-${i % 997}`,
        bonus_code: 'FS50',
        amount: null,
        currency: null,
        request_json: JSON.stringify({ user_id: `player-${i % 997}`, bonus_code: 'FS50' }),
        crm_id: null,
        crm_action_id: String(i),
        crm_action_group_id: null,
        crm_action_communication_profile_id: null,
        crm_activity_id: String(i),
        crm_trigger_hash: null,
        crm_player_origin_id: null,
        state: 'done',
        http_status: null,
        answer_json: null,
        created_at: at,
        updated_at: at,
        delivery: 'due',
        next_delivery_at: at,
        delivery_claim_token: null,
        delivered_at: null,
        delivery_error: null,
      });
    }
  });
}

/** Pushes per Idempotency-Key, and the kill (0: before any) after which each key's second push came. */
const pushes = new Map<string, number>();
const doubledAfterKill = new Map<number, number>();
let kills = 0;
/** When the first push arrived: the clock starts there, not at the process's start. */
let firstPushAt: number | undefined;
const receiver = createServer(async (req, res) => {
  for await (const _ of req);
  firstPushAt ??= performance.now();
  const key = String(req.headers['idempotency-key']);
  const n = (pushes.get(key) ?? 0) + 1;
  pushes.set(key, n);
  if (n === 2) doubledAfterKill.set(kills, (doubledAfterKill.get(kills) ?? 0) + 1);
  if (ANSWER_MS > 0) await new Promise((resolve) => setTimeout(resolve, ANSWER_MS));
  res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
});
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');

const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-credit-crash-'));
const configFile = join(dir, 'credit-crash.yaml');
writeFileSync(
  configFile,
  YAML.stringify({
    ...baseConfig(dir),
    database: { url: database.url },
    log: { level: 'warn' },
    operator: {
      backend: 'sql',
      credits: {
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/credits`,
        lease: args.lease,
        // A push must end within half the lease (src/config/schema.ts).
        timeout: '900ms',
        poll_interval: '50ms',
        ...(args.concurrency ? { concurrency: Number(args.concurrency) } : {}),
      },
    },
  }),
);

function startServe(): ChildProcess {
  return spawn(process.execPath, [CLI, 'serve', '--config', configFile], { stdio: 'ignore', env: { PATH: process.env.PATH ?? '' } });
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what} (${pushes.size} of ${CREDITS} received)`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

let serve = startServe();
for (let k = 1; k <= KILLS; k++) {
  // Spread the kills over the run: each while credits are being pushed.
  await until(() => pushes.size >= Math.floor((CREDITS * k) / (KILLS + 1)), 300_000, `kill ${k}`);
  serve.kill('SIGKILL');
  await once(serve, 'exit');
  kills = k;
  serve = startServe();
}
await until(() => pushes.size === CREDITS, 600_000, 'every credit');
const seconds = (performance.now() - firstPushAt!) / 1000;
// The last marks: a credit is only done once the ledger shows it delivered.
let undelivered = CREDITS;
for (const deadline = Date.now() + 30_000; undelivered > 0 && Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
  const row = await ledger.db
    .selectFrom('operator_credits')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('delivery', '<>', 'delivered')
    .executeTakeFirstOrThrow();
  undelivered = Number(row.n);
}
serve.kill('SIGTERM');
await once(serve, 'exit');
await ledger.close();
receiver.close();
await database.drop();
rmSync(dir, { recursive: true, force: true });

const received = [...pushes.values()].reduce((a, b) => a + b, 0);
console.log(
  JSON.stringify({
    database: database.kind,
    credits: CREDITS,
    kills: KILLS,
    answer_ms: ANSWER_MS,
    concurrency: args.concurrency ? Number(args.concurrency) : 'default',
    credits_per_s: Math.round(CREDITS / seconds),
    seconds: Math.round(seconds * 10) / 10,
    pushes: received,
    doubled: received - pushes.size,
    most_doubled_by_one_kill: Math.max(0, ...[...doubledAfterKill.entries()].filter(([k]) => k > 0).map(([, n]) => n)),
    doubled_without_a_kill: doubledAfterKill.get(0) ?? 0,
    lost: undelivered,
    load1: Math.round(loadavg()[0]! * 100) / 100,
  }),
);
