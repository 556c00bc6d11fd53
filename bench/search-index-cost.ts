/**
 * What the message-search indexes cost the send path: stores `--rows` messages (default 200,000) in transactions of
 * 500, as the send path's grouped claims do, then records each one's provider answer, on a migrated SQLite ledger
 * (WAL, synchronous NORMAL, as `serve` runs it). Each variant drops every search index of `messages` and builds its
 * own set; variants run alternately, `--rounds` times (default 3). Prints one JSON line per run: µs per insert and
 * per answer update, wall and CPU (user + system of this process: the one to compare on a shared machine).
 *
 *   npm run build && node dist/bench/search-index-cost.js [--rows 200000] [--rounds 3] [--variants none,v60,latest]
 *     [--cache-kib N] [--checkpoint-every GROUPS] [--players 50000] [--numbers any|per-player]
 *
 * `latest` is the schema as migrated; `v60` the five indexes of migration 2026-11-24-60-console as built there; the
 * others are single indexes or candidate shapes (bench/README.md gives their figures and why none replaced v60).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { migrateToLatest, openLedger } from '../src/ledger/engine/db.js';

/** Indexes of `messages` that serve the send path, the receipts and the sweeps, not the search: never dropped. */
const NOT_SEARCH = new Set(['messages_provider_message_id', 'messages_awaiting_receipt', 'messages_unresolved_sends']);
const STATUS = 'coalesce(delivery_status, state)';
const V60: Record<string, string> = {
  created: 'create index messages_created on messages (created_at)',
  recipient: 'create index messages_recipient on messages (recipient, created_at)',
  user_id: 'create index messages_user_id on messages (user_id, created_at) where user_id is not null',
  provider: 'create index messages_provider_created on messages (provider, created_at)',
  status: `create index messages_status on messages (${STATUS}, created_at)`,
};
const PAIRS =
  'create table if not exists message_user_recipients (user_id text not null, recipient text not null, primary key (user_id, recipient)) without rowid';
const VARIANTS: Record<string, string[] | 'latest'> = {
  none: [],
  latest: 'latest',
  v60: Object.values(V60),
  ...Object.fromEntries(Object.entries(V60).map(([name, ddl]) => [`only-${name}`, [ddl]])),
  'v60-no-created': [V60.recipient!, V60.user_id!, V60.provider!, V60.status!],
  'v60-no-random': [V60.created!, V60.provider!, V60.status!],
  // The status index holding only the rare words; the common ones (pending, sent, delivered) read other keys.
  'only-status-rare': [`create index messages_status on messages (${STATUS}, created_at) where ${STATUS} not in ('dispatching', 'submitted', 'delivered')`],
  // Shorter keys for the two random-order indexes.
  'only-recipient-bare': ['create index messages_recipient on messages (recipient)'],
  'only-user_id-bare': ['create index messages_user_id on messages (user_id) where user_id is not null'],
  // The number's last seven digits: a shorter key, rechecked against the row.
  'only-recipient-tail': ['create index messages_recipient on messages (substr(recipient, -7), created_at)'],
  // The day first: inserts land in the current day's part of the index, still in random order within it.
  'only-recipient-day': ['create index messages_recipient on messages (created_at / 86400000, recipient, created_at)'],
  // The player's numbers in a small table of their own instead of messages_user_id (2026-11-24-81-search-keys):
  // a player's next message to a number already known only reads it.
  pairs: [V60.created!, V60.recipient!, V60.provider!, V60.status!, PAIRS],
  'only-pairs': [PAIRS],
};

const GROUP = 500;
const round = (us: number) => Math.round(us * 10) / 10;

async function run(rows: number, variant: string, cacheKib: number, checkpointEvery: number, players: number, perPlayer: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'search-index-cost-'));
  const file = join(dir, 'ledger.db');
  const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db);
  await ledger.close();
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // `serve` checkpoints on a thread of its own (ledger/engine/checkpointer.ts), never inside a commit.
  db.pragma('wal_autocheckpoint = 0');
  if (cacheKib) db.pragma(`cache_size = -${cacheKib}`);
  const indexes = VARIANTS[variant];
  if (indexes === undefined) throw new Error(`unknown variant ${variant}: one of ${Object.keys(VARIANTS).join(', ')}`);
  if (indexes !== 'latest') {
    const existing = db.prepare("select name from sqlite_master where type = 'index' and tbl_name = 'messages' and sql is not null").all() as Array<{
      name: string;
    }>;
    for (const { name } of existing) if (!NOT_SEARCH.has(name)) db.exec(`drop index ${name}`);
    db.exec('drop table if exists message_user_recipients');
    for (const ddl of indexes) db.exec(ddl);
  }
  const pairs = db.prepare("select 1 from sqlite_master where name = 'message_user_recipients'").get() !== undefined;
  const pair = pairs ? db.prepare('insert into message_user_recipients (user_id, recipient) values (?, ?) on conflict do nothing') : undefined;
  const insert = db.prepare(`insert into messages (sms_id, activity_key, activity_json, user_id, request_id, provider, recipient, sender, encoding, segments,
    state, attempts, created_at, updated_at, dispatched_at) values (?, ?, ?, ?, 'req', 'sandbox', ?, 'Casino', 'gsm7', 1, 'dispatching', 1, ?, ?, ?)`);
  const answer = db.prepare(`update messages set state = 'submitted', provider_message_id = ?, submitted_at = ?, updated_at = ? where sms_id = ?`);
  // Time-ordered ids like the gateway's UUIDv7; players and numbers spread as a campaign's would be.
  const smsId = (i: number) => `0193${i.toString(16).padStart(12, '0')}-${((i * 2654435761) >>> 0).toString(16)}`;
  const cpuMs = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  // With --checkpoint-every, the WAL is copied into the file and cut every so many groups, as the checkpointer
  // thread would; its time is kept apart (it is off the commit path) but it is CPU the random keys also cost.
  let checkpointMs = 0;
  let checkpointCpuMs = 0;
  const maybeCheckpoint = (group: number) => {
    if (!checkpointEvery || group % checkpointEvery !== checkpointEvery - 1) return;
    const [t, c] = [performance.now(), cpuMs()];
    db.pragma('wal_checkpoint(TRUNCATE)');
    checkpointMs += performance.now() - t;
    checkpointCpuMs += cpuMs() - c;
  };
  let started = performance.now();
  let cpuStarted = cpuMs();
  for (let from = 0; from < rows; from += GROUP) {
    maybeCheckpoint(from / GROUP);
    db.transaction(() => {
      for (let i = from; i < Math.min(rows, from + GROUP); i++) {
        const at = 1_764_000_000_000 + i;
        const player = (i * 104_729) % players;
        const number = `+4477${String((perPlayer ? player * 7919 : i * 7919) % 1_000_000).padStart(8, '0')}`;
        insert.run(smsId(i), `a-${i}`, `{"id":"a-${i}","user_id":"u-${player}"}`, `u-${player}`, number, at, at, at);
        pair?.run(`u-${player}`, number);
      }
    })();
  }
  const insertUs = ((performance.now() - started - checkpointMs) * 1000) / rows;
  const insertCpuUs = ((cpuMs() - cpuStarted - checkpointCpuMs) * 1000) / rows;
  const insertCheckpointCpuUs = (checkpointCpuMs * 1000) / rows;
  [checkpointMs, checkpointCpuMs] = [0, 0];
  started = performance.now();
  cpuStarted = cpuMs();
  for (let from = 0; from < rows; from += GROUP) {
    maybeCheckpoint(from / GROUP);
    db.transaction(() => {
      for (let i = from; i < Math.min(rows, from + GROUP); i++) answer.run(`pm-${i}`, 1, 1, smsId(i));
    })();
  }
  const updateUs = ((performance.now() - started - checkpointMs) * 1000) / rows;
  const updateCpuUs = ((cpuMs() - cpuStarted - checkpointCpuMs) * 1000) / rows;
  const updateCheckpointCpuUs = (checkpointCpuMs * 1000) / rows;
  const cache = -(db.pragma('cache_size', { simple: true }) as number);
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    bench: 'search-index-cost',
    variant,
    rows,
    players,
    numbers: perPlayer ? 'per-player' : 'any',
    cache_kib: cache,
    insert_us: round(insertUs),
    insert_cpu_us: round(insertCpuUs),
    answer_update_us: round(updateUs),
    answer_update_cpu_us: round(updateCpuUs),
    ...(checkpointEvery ? { insert_checkpoint_cpu_us: round(insertCheckpointCpuUs), answer_checkpoint_cpu_us: round(updateCheckpointCpuUs) } : {}),
  };
}

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '3' },
    variants: { type: 'string', default: 'none,v60,latest' }, // 0: the connection's default; 0: never (the WAL grows by every dirtied page: GBs at a million rows)
    'cache-kib': { type: 'string', default: '0' },
    'checkpoint-every': { type: 'string', default: '0' },
    // per-player: each player's messages go to the player's own number, as a CRM's do; any: every message to a
    // number of its own (the worst case for message_user_recipients: every pair is new)
    players: { type: 'string', default: '50000' },
    numbers: { type: 'string', default: 'any' },
  },
});
for (let round = 0; round < Number(values.rounds); round++) {
  for (const variant of values.variants.split(','))
    console.log(
      JSON.stringify(
        await run(
          Number(values.rows),
          variant,
          Number(values['cache-kib']),
          Number(values['checkpoint-every']),
          Number(values.players),
          values.numbers === 'per-player',
        ),
      ),
    );
}
