/**
 * What the search indexes of migration 2026-11-24-60-console cost the send path: stores `--rows` messages (default
 * 200,000) in transactions of 500, as the send path's grouped claims do, then records each one's provider answer,
 * on a migrated SQLite ledger (WAL, synchronous NORMAL, as `serve` runs it) with and without those indexes,
 * alternating `--rounds` times (default 3). Prints one JSON line per run: µs per insert and per answer update.
 *
 *   npm run build && node dist/bench/search-index-cost.js [--rows 200000] [--rounds 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { migrateToLatest, openLedger } from '../src/ledger/db.js';

const SEARCH_INDEXES = ['messages_created', 'messages_recipient', 'messages_user_id', 'messages_provider_created', 'messages_status'];
const GROUP = 500;

async function run(rows: number, withSearchIndexes: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'search-index-cost-'));
  const file = join(dir, 'ledger.db');
  const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db);
  await ledger.close();
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // `serve` checkpoints on a thread of its own (ledger/checkpointer.ts), never inside a commit.
  db.pragma('wal_autocheckpoint = 0');
  if (!withSearchIndexes) for (const name of SEARCH_INDEXES) db.exec(`drop index ${name}`);
  const insert = db.prepare(`insert into messages (sms_id, activity_key, activity_json, user_id, request_id, provider, recipient, sender, encoding, segments,
    state, attempts, created_at, updated_at, dispatched_at) values (?, ?, ?, ?, 'req', 'sandbox', ?, 'Casino', 'gsm7', 1, 'dispatching', 1, ?, ?, ?)`);
  const answer = db.prepare(`update messages set state = 'submitted', provider_message_id = ?, submitted_at = ?, updated_at = ? where sms_id = ?`);
  // Time-ordered ids like the gateway's UUIDv7; players and numbers spread as a campaign's would be.
  const smsId = (i: number) => `0193${i.toString(16).padStart(12, '0')}-${(i * 2654435761 >>> 0).toString(16)}`;
  let started = performance.now();
  for (let from = 0; from < rows; from += GROUP) {
    db.transaction(() => {
      for (let i = from; i < Math.min(rows, from + GROUP); i++) {
        const at = 1_764_000_000_000 + i;
        insert.run(smsId(i), `a-${i}`, `{"id":"a-${i}","user_id":"u-${(i * 104_729) % 50_000}"}`, `u-${(i * 104_729) % 50_000}`, `+4477${String((i * 7919) % 1_000_000).padStart(8, '0')}`, at, at, at);
      }
    })();
  }
  const insertUs = ((performance.now() - started) * 1000) / rows;
  started = performance.now();
  for (let from = 0; from < rows; from += GROUP) {
    db.transaction(() => {
      for (let i = from; i < Math.min(rows, from + GROUP); i++) answer.run(`pm-${i}`, 1, 1, smsId(i));
    })();
  }
  const updateUs = ((performance.now() - started) * 1000) / rows;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { bench: 'search-index-cost', search_indexes: withSearchIndexes, rows, insert_us: Math.round(insertUs * 10) / 10, answer_update_us: Math.round(updateUs * 10) / 10 };
}

const { values } = parseArgs({ options: { rows: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '3' } } });
for (let round = 0; round < Number(values.rounds); round++) {
  console.log(JSON.stringify(await run(Number(values.rows), false)));
  console.log(JSON.stringify(await run(Number(values.rows), true)));
}
