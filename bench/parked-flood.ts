/**
 * node dist/bench/parked-flood.js [--receipts 30000] [--max-parked 10000] [--database postgres://…/NAME]
 *
 * A source pushing receipts for ids we never issued, as an SMSC may over its bind: each receipt goes through the
 * receipt intake's `storePushed` on its own, as a deliver_sm does (src/delivery/intake.ts), against a new migrated
 * ledger (a SQLite file in a temporary folder, or on the server --database names a new database NAME_<pid>, dropped
 * after). The pile grows to the provider's bound and stays there while the oldest are set aside. Prints one JSON
 * line: receipts a second and the process's CPU a receipt, over all of them and over the last tenth (the pile at its
 * bound), and the parked and set-aside counts at the end. On PostgreSQL the server's CPU is not in these figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { createReceiptIntake } from '../src/delivery/intake.js';
import { migrateToLatest, openLedger } from '../src/ledger/engine/db.js';
import { createTransactionQueue } from '../src/ledger/engine/transaction-queue.js';

const { values } = parseArgs({
  options: {
    receipts: { type: 'string', default: '30000' },
    'max-parked': { type: 'string', default: '10000' },
    database: { type: 'string' },
  },
});
const receipts = Number(values.receipts);
const maxParked = Number(values['max-parked']);

const folder = mkdtempSync(join(tmpdir(), 'parked-flood-'));
let url = `sqlite:${join(folder, 'ledger.db')}`;
let dropDatabase = async () => {};
if (values.database) {
  // The URL names the server and a prefix: the run creates NAME_<pid> through the server's own `postgres` database.
  const server = new URL(values.database);
  const name = `${server.pathname.slice(1) || 'parked_flood'}_${process.pid}`;
  server.pathname = '/postgres';
  const adminUrl = server.toString();
  const onServer = async (statement: string) => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(statement);
    await admin.end();
  };
  await onServer(`create database ${name}`);
  dropDatabase = () => onServer(`drop database ${name}`);
  server.pathname = `/${name}`;
  url = server.toString();
}

const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 2 });
await migrateToLatest(ledger.db);
const intake = createReceiptIntake({ queue: createTransactionQueue(ledger.db), now: Date.now, logger: pino({ level: 'silent' }) });

const tail = Math.floor(receipts * 0.9);
const started = performance.now();
const cpu = process.cpuUsage();
let tailCpu = cpu;
let tailStarted = started;
for (let i = 0; i < receipts; i++) {
  if (i === tail) {
    tailCpu = process.cpuUsage();
    tailStarted = performance.now();
  }
  await intake.storePushed('smsc', [{ providerMessageId: `flood-${i}`, providerStatus: 'DELIVRD', status: 'delivered', perPart: true }], {
    maxParked,
  });
}
const ended = performance.now();
const cpuUs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};
const [allCpu, lastCpu] = [cpuUs(cpu), cpuUs(tailCpu)];
const counts = await ledger.db
  .selectFrom('receipts')
  .select(['matched', (eb) => eb.fn.countAll<number>().as('n')])
  .groupBy('matched')
  .execute();
const count = (matched: number) => Number(counts.find((c) => Number(c.matched) === matched)?.n ?? 0);
console.log(
  JSON.stringify({
    bench: 'parked-flood',
    database: values.database ? 'postgres' : 'sqlite',
    receipts,
    max_parked: maxParked,
    receipts_per_s: Math.round(receipts / ((ended - started) / 1000)),
    cpu_us_per_receipt: Math.round(allCpu / receipts),
    last_tenth_receipts_per_s: Math.round((receipts - tail) / ((ended - tailStarted) / 1000)),
    last_tenth_cpu_us_per_receipt: Math.round(lastCpu / (receipts - tail)),
    parked: count(0),
    set_aside: count(2),
  }),
);
await ledger.close();
await dropDatabase();
rmSync(folder, { recursive: true, force: true });
