/**
 * npm run bench -- --mode search [--rows 10000000] [--runs 200] [--keep]
 *
 * How message search (src/ledger/message-search.ts) holds up at scale: loads a SQLite ledger with `rows` messages
 * spread over 30 days (plus some dead conversions) in one process, then times searchMessages per filter through
 * the gateway's own ledger connection, and prints one JSON line per filter: {bench, filter, rows, queries, p50_ms,
 * p99_ms, max_ms, target_ms, rows_per_page} (queries: first pages, and second pages from a cursor). The load drops the messages indexes, inserts in large transactions
 * without journal or fsync, and builds the indexes again from the migration's own definitions (sqlite_master), so
 * the indexes measured are the real ones.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { migrateToLatest, openLedger } from '../src/ledger/engine/db.js';
import { searchMessages, type MessageFilter } from '../src/ledger/message-search.js';

const DAY_MS = 86_400_000;
const SPAN_MS = 30 * DAY_MS;
const PROVIDERS = ['sandbox', 'backup', 'vonage'] as const;

/** A cheap, fixed pseudo-random number in [0, 1000) for row i and a salt. */
const mix = (i: number, salt: number) => (Math.imul(i ^ salt, 2654435761) >>> 0) % 1000;

/** Mostly delivered, a few of every other status the search offers. */
function fateOf(i: number): { state: string; delivery: string | null } {
  const r = mix(i, 0x5bd1e995);
  if (r < 880) return { state: 'submitted', delivery: 'delivered' };
  if (r < 920) return { state: 'submitted', delivery: 'undelivered' };
  if (r < 940) return { state: 'submitted', delivery: 'failed' };
  if (r < 960) return { state: 'submitted', delivery: 'delivery_unknown' };
  if (r < 975) return { state: 'submitted', delivery: null };
  if (r < 990) return { state: 'rejected', delivery: null };
  if (r < 996) return { state: 'retryable', delivery: null };
  if (r < 999) return { state: 'uncertain', delivery: null };
  return { state: 'dispatching', delivery: null };
}

const recipientOf = (i: number, rows: number) => `+4477${String((i * 7919) % Math.max(1, Math.floor(rows / 10))).padStart(8, '0')}`;
const userOf = (i: number, rows: number) => `u-${(i * 104_729) % Math.max(1, Math.floor(rows / 20))}`;
const smsIdOf = (at: number, i: number) => {
  const hex = at.toString(16).padStart(12, '0') + i.toString(16).padStart(20, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

async function load(file: string, rows: number, now: number): Promise<number> {
  const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db);
  await ledger.close();
  const started = performance.now();
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('journal_mode = OFF');
  sqlite.pragma('synchronous = OFF');
  sqlite.pragma('cache_size = -1000000');
  // Index builds sort ten million keys: in memory, and on a second thread when there is one.
  sqlite.pragma('temp_store = memory');
  sqlite.pragma('threads = 2');
  // Building an index once over sorted keys is far cheaper than keeping it up to date through ten million inserts.
  const indexes = sqlite.prepare("select name, sql from sqlite_master where type = 'index' and tbl_name = 'messages' and sql is not null").all() as Array<{
    name: string;
    sql: string;
  }>;
  for (const index of indexes) sqlite.exec(`drop index ${index.name}`);
  const insert =
    sqlite.prepare(`insert into messages (sms_id, activity_key, activity_json, user_id, request_id, provider, provider_message_id, recipient, sender,
    encoding, segments, content, state, error, error_code, attempts, provider_status, delivery_status, delivery_source, created_at, updated_at, dispatched_at, submitted_at, completed_at)
    values (?, ?, ?, ?, ?, ?, ?, ?, 'Casino', 'gsm7', 1, null, ?, ?, null, 1, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const start = now - SPAN_MS;
  const chunk = sqlite.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const at = start + Math.floor((i / rows) * SPAN_MS);
      const provider = PROVIDERS[mix(i, 7) < 700 ? 0 : mix(i, 7) < 990 ? 1 : 2];
      const { state, delivery } = fateOf(i);
      const user = userOf(i, rows);
      insert.run(
        smsIdOf(at, i),
        `act-${i}`,
        `{"id":"act-${i}","user_id":"${user}"}`,
        user,
        `req-${i}`,
        provider,
        state === 'submitted' ? `pm-${i}` : null,
        recipientOf(i, rows),
        state,
        state === 'rejected' ? 'refused by provider' : null,
        delivery ?? (state === 'submitted' ? 'accepted' : null),
        delivery,
        delivery ? 'receipt' : null,
        at,
        at,
        at,
        state === 'submitted' ? at + 50 : null,
        delivery ? at + 5_000 : null,
      );
    }
  });
  const step = 200_000;
  for (let from = 0; from < rows; from += step) {
    chunk(from, Math.min(rows, from + step));
    if ((from / step) % 10 === 9)
      process.stderr.write(`loaded ${from + step} messages, ${Math.round((from + step) / ((performance.now() - started) / 1000))} rows/s\n`);
  }
  for (const index of indexes) {
    const t = performance.now();
    sqlite.exec(index.sql);
    process.stderr.write(`built ${index.name} in ${Math.round((performance.now() - t) / 1000)} s\n`);
  }
  // The search by player reads each player's numbers (migration 2026-11-24-81-search-keys); the send path records
  // them with each message, the load all at once.
  const pairs = performance.now();
  sqlite.exec(
    'insert into message_user_recipients (user_id, recipient) select distinct user_id, recipient from messages where user_id is not null on conflict do nothing',
  );
  process.stderr.write(`filled message_user_recipients in ${Math.round((performance.now() - pairs) / 1000)} s\n`);
  // Each message's number entry (migration 2026-11-29-95-recipient-messages), which the claim writes with it, in key order.
  const numbers = performance.now();
  sqlite.exec(`insert into recipient_messages (day, recipient, created_at, sms_id)
    select created_at / 86400000, recipient, created_at, sms_id from messages order by 1, 2, 3, 4`);
  process.stderr.write(`filled recipient_messages in ${Math.round((performance.now() - numbers) / 1000)} s\n`);
  // A few hundred dead conversions among the newest delivered messages, for status=dead.
  const dead =
    sqlite.prepare(`insert into conversions (sms_id, delivery_status, attempts, next_attempt_at, claimed_until, posted_at, last_error, dead, created_at)
    select sms_id, delivery_status, 25, created_at, 0, null, 'webhook answered 503', 1, created_at from messages where delivery_status = 'delivered' and rowid % 997 = 0 order by rowid desc limit 500`);
  dead.run();
  sqlite.exec('analyze');
  sqlite.pragma('journal_mode = WAL');
  sqlite.close();
  return (performance.now() - started) / 1000;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

export async function runSearchBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      mode: { type: 'string', multiple: true },
      rows: { type: 'string', default: '10000000' },
      runs: { type: 'string', default: '200' },
      keep: { type: 'boolean', default: false },
    },
  });
  const rows = Number(values.rows);
  const runs = Number(values.runs);
  if (!Number.isInteger(rows) || rows < 1_000) throw new Error(`--rows must be an integer ≥ 1000 (got ${values.rows})`);
  if (!Number.isInteger(runs) || runs < 10) throw new Error(`--runs must be an integer ≥ 10 (got ${values.runs})`);
  const dir = mkdtempSync(join(tmpdir(), 'message-search-bench-'));
  const file = join(dir, 'ledger.db');
  const now = Date.now();
  try {
    const seconds = await load(file, rows, now);
    const bytes = readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
    process.stderr.write(`loaded ${rows} messages in ${Math.round(seconds)} s (${(bytes / 2 ** 30).toFixed(2)} GiB)\n`);
    const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
    const any = (k: number) => Math.floor(mix(k, 99) * (rows / 1000) + (k % Math.max(1, Math.floor(rows / 1000))));
    const hourAt = (k: number) => now - SPAN_MS + mix(k, 3) * (SPAN_MS / 1000);
    // Each filter as support would use it, with a different value per run.
    const cases: Array<[string, (k: number) => Omit<MessageFilter, 'limit'>]> = [
      ['newest, no filter', () => ({})],
      ['recipient', (k) => ({ recipient: recipientOf(any(k), rows) })],
      ['user_id', (k) => ({ userId: userOf(any(k), rows) })],
      ['activity.id', (k) => ({ activityKey: `act-${any(k)}` })],
      ['sms_id', (k) => ({ smsId: smsIdOf(now - SPAN_MS + Math.floor((any(k) / rows) * SPAN_MS), any(k)) })],
      ['provider (1% of traffic)', () => ({ provider: 'vonage' })],
      ['status delivered', () => ({ status: 'delivered' })],
      ['status refused', () => ({ status: 'refused' })],
      ['status uncertain', () => ({ status: 'uncertain' })],
      ['status dead', () => ({ status: 'dead' })],
      ['one hour, any message', (k) => ({ from: hourAt(k), to: hourAt(k) + 3_600_000 })],
      ['recipient + one week', (k) => ({ recipient: recipientOf(any(k), rows), from: hourAt(k), to: hourAt(k) + 7 * DAY_MS })],
      ['provider + status refused + one day', (k) => ({ provider: 'vonage', status: 'refused', from: hourAt(k), to: hourAt(k) + DAY_MS })],
      ['user_id + status undelivered', (k) => ({ userId: userOf(any(k), rows), status: 'undelivered' })],
    ];
    try {
      for (const [name, filterOf] of cases) {
        const timings: number[] = [];
        let shown = 0;
        for (let k = 0; k < runs; k++) {
          let t = performance.now();
          const first = await searchMessages(ledger.db, { ...filterOf(k), limit: 50 });
          timings.push(performance.now() - t);
          shown += first.rows.length;
          // Every other run also asks for the next page, as the console's "older" link does; timed on its own.
          const last = first.rows.at(-1);
          if (k % 2 === 1 && first.more && last) {
            t = performance.now();
            await searchMessages(ledger.db, { ...filterOf(k), limit: 50, after: { createdAt: last.created_at, smsId: last.sms_id } });
            timings.push(performance.now() - t);
          }
        }
        timings.sort((a, b) => a - b);
        const round = (ms: number) => Math.round(ms * 100) / 100;
        console.log(
          JSON.stringify({
            bench: 'message-search',
            filter: name,
            rows,
            queries: timings.length,
            p50_ms: round(percentile(timings, 0.5)),
            p99_ms: round(percentile(timings, 0.99)),
            max_ms: round(timings.at(-1)!),
            target_ms: 100,
            rows_per_page: Math.round(shown / runs),
          }),
        );
      }
    } finally {
      await ledger.close();
    }
  } finally {
    if (values.keep) process.stderr.write(`ledger kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
