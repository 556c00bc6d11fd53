/**
 * What the keys of the number and provider-id indexes cost on a large SQLite ledger (migration
 * 2026-11-29-70-time-keys, docs/ledger.md): on a prefilled ledger (bench/prefill.ts), `--rounds` transactions of
 * `--group` messages inserted as the claim inserts them (with their (player, number) pairs), then their provider ids
 * recorded as the record does, each in its own transaction; then the lookups those indexes serve, for numbers and
 * provider ids of messages picked at random over the whole ledger: a search by number (a first page of 50) and a
 * receipt's lookup by provider id. Prints one JSON line: µs a message for each step, CPU µs a message (user + system
 * of this process), read system calls and KiB written (the WAL) a message, µs a lookup at p50 / p95. The messages are
 * stamped at the end of the ledger's last full day, where that day's part of a day-led tree is largest.
 *
 *   npm run build && node dist/bench/time-keys.js --ledger FILE [--rounds 60] [--group 80] [--lookups 300]
 *
 * The layout is read from the ledger: `messages_recipient` (keys by number and provider id alone), or
 * `messages_recipient_time` with its bucket (`created_at / 86400000` as migrated; `--hour` on a copy builds the same
 * two indexes with hour buckets, `created_at / 3600000`, to compare). The rows it adds stay in the file: run it on a
 * copy. It compares the layouts before migration 2026-11-29-90-provider-id-only, whose partial index its lookup
 * does not name: a ledger migrated past it is refused (bench/README.md "2026-11-29 (day): only the messages found
 * by the provider's id" measures that one with the served gateway).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';

const { values } = parseArgs({
  options: {
    ledger: { type: 'string' },
    rounds: { type: 'string', default: '60' },
    group: { type: 'string', default: '80' },
    lookups: { type: 'string', default: '300' },
    hour: { type: 'boolean', default: false },
  },
});
if (!values.ledger) throw new Error('--ledger FILE: a prefilled SQLite ledger (a copy: rows are added)');
const rounds = Number(values.rounds);
const group = Number(values.group);
const lookups = Number(values.lookups);

const db = new BetterSqlite3(values.ledger);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
// The writer's cache as `serve` sets it (src/ledger/engine/sqlite.ts); checkpoints run off the commit path there.
db.pragma('cache_size = -4000');
db.pragma('wal_autocheckpoint = 0');

if (db.prepare("select 1 from sqlite_master where name = 'messages_provider_id_only'").get() !== undefined)
  throw new Error('this ledger is past migration 2026-11-29-90-provider-id-only: time-keys compares the layouts before it');

if (values.hour) {
  const t = performance.now();
  db.exec(`drop index if exists messages_recipient; drop index if exists messages_provider_message_id;
    drop index if exists messages_recipient_time; drop index if exists messages_provider_id_time;
    create index messages_recipient_time on messages ((created_at / 3600000), recipient, created_at);
    create index messages_provider_id_time on messages ((created_at / 3600000), provider, provider_message_id);`);
  db.pragma('wal_checkpoint(TRUNCATE)');
  console.log(JSON.stringify({ bench: 'time-keys', built: 'hour', seconds: Math.round((performance.now() - t) / 100) / 10 }));
}

const recipientSql = (db.prepare("select sql from sqlite_master where name = 'messages_recipient_time'").get() as { sql: string } | undefined)?.sql;
const bucketMs = recipientSql === undefined ? 0 : Number(/created_at \/ (\d+)/.exec(recipientSql)![1]);
const layout = bucketMs === 0 ? 'number' : bucketMs === 86_400_000 ? 'day' : bucketMs === 3_600_000 ? 'hour' : `${bucketMs} ms`;
const bucket = `created_at / ${bucketMs}`;

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const sample = db.prepare('select activity_json, user_id, recipient from messages order by created_at desc limit 1').get() as {
  activity_json: string;
  user_id: string;
  recipient: string;
};
const insert = db.prepare(`insert into messages (sms_id, activity_key, activity_json, user_id, request_id, provider, recipient, sender, encoding,
  segments, content, state, attempts, created_at, updated_at, dispatched_at) values (?, ?, ?, ?, 'req', ?, ?, 'Casino', 'gsm7', 1, 'hello there',
  'dispatching', 1, ?, ?, ?)`);
const pair = db.prepare('insert into message_user_recipients (user_id, recipient) values (?, ?) on conflict do nothing');
const record = db.prepare(`update messages set state = 'submitted', provider_message_id = ?, provider_status = 'accepted', submitted_at = ?,
  updated_at = ? where sms_id = ?`);
const begin = db.prepare('begin');
const commit = db.prepare('commit');
const rand = (n: number) => Math.floor(Math.random() * n);
const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[rand(16)]).join('');
const smsId = (at: number) =>
  `${at
    .toString(16)
    .padStart(12, '0')
    .replace(/(.{8})(.{4})/, '$1-$2')}-7${hex(3)}-8${hex(3)}-${hex(12)}`;
const providers = ['sandbox', 'sandbox', 'sandbox', 'sandbox', 'sandbox', 'sandbox', 'sandbox', 'twilio', 'twilio', 'smpp'];

const spent = { insert: 0, pairs: 0, record: 0, commits: 0 };
const timed = (step: keyof typeof spent, work: () => void) => {
  const t = performance.now();
  work();
  spent[step] += performance.now() - t;
};
// Where the day's part of the tree is at its largest: the inserts are stamped at the end of the ledger's last full
// day (a ledger prefilled up to now has only the hours since midnight in today's part). The old layout does not care.
const { newest } = db.prepare('select max(created_at) as newest from messages').get() as { newest: number };
const stampFrom = (Math.floor(newest / 86_400_000) - 1) * 86_400_000 + 86_400_000 - 60_000 - rounds * group;
const io = () => {
  const fields = Object.fromEntries(
    readFileSync('/proc/self/io', 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(': ') as [string, string]),
  );
  return { reads: Number(fields.syscr), written: Number(fields.wchar) };
};
const started = performance.now();
const cpuStarted = cpuMs();
const ioStarted = io();
let seq = 0;
for (let r = 0; r < rounds; r++) {
  const rows = Array.from({ length: group }, () => {
    const at = stampFrom + seq;
    seq++;
    return {
      sms_id: smsId(at),
      key: `tk-${process.pid}-${seq}`,
      user: `tk-player-${rand(200_000)}`,
      provider: providers[rand(providers.length)]!,
      recipient: `+4477${String(rand(100_000_000)).padStart(8, '0')}`,
      at,
    };
  });
  begin.run();
  timed('insert', () => {
    for (const m of rows) insert.run(m.sms_id, m.key, sample.activity_json, m.user, m.provider, m.recipient, m.at, m.at, m.at);
  });
  timed('pairs', () => {
    for (const m of rows) pair.run(m.user, m.recipient);
  });
  timed('commits', () => commit.run());
  begin.run();
  const now = Date.now();
  timed('record', () => {
    for (const m of rows) record.run(`${m.provider}-${hex(24)}`, now, now, m.sms_id);
  });
  timed('commits', () => commit.run());
}
const messages = rounds * group;
const perMessage = (ms: number) => Math.round((ms * 1000) / messages);
const send = {
  insert: perMessage(spent.insert),
  pairs: perMessage(spent.pairs),
  record: perMessage(spent.record),
  commits: perMessage(spent.commits),
  wall: perMessage(performance.now() - started),
  cpu: perMessage(cpuMs() - cpuStarted),
};
// Pages read through the file system (SQLite's own cache missed) and bytes written to the WAL, a message.
const ioEnded = io();
const pages = {
  reads: Math.round(((ioEnded.reads - ioStarted.reads) / messages) * 10) / 10,
  wal_kb: Math.round(((ioEnded.written - ioStarted.written) / messages / 1024) * 10) / 10,
};

// Lookups: numbers and provider ids of messages at random places in the ledger (rowids are dense in a prefilled one).
const { lo, hi } = db.prepare('select min(rowid) as lo, max(rowid) as hi from messages').get() as { lo: number; hi: number };
const byRowid = db.prepare('select recipient, provider, provider_message_id, created_at from messages where rowid = ?');
const picks: Array<{ recipient: string; provider: string; provider_message_id: string; created_at: number }> = [];
while (picks.length < lookups) {
  const row = byRowid.get(lo + rand(hi - lo + 1)) as (typeof picks)[number] | undefined;
  if (row?.provider_message_id && row.recipient !== '[blanked]') picks.push(row);
}
const span = db.prepare('select (select min(created_at) from messages) as oldest, (select max(created_at) from messages) as newest');
const days = (): number[] => {
  const { oldest, newest } = span.get() as { oldest: number; newest: number };
  const out: number[] = [];
  for (let b = Math.floor(newest / bucketMs); b >= Math.floor(oldest / bucketMs); b--) out.push(b);
  return out;
};
const COLUMNS = 'sms_id, recipient, provider, state, created_at';
const percentiles = (us: number[]) => {
  us.sort((a, b) => a - b);
  const at = (q: number) => Math.round(us[Math.min(us.length - 1, Math.floor(q * us.length))]! * 10) / 10;
  return { p50: at(0.5), p95: at(0.95) };
};
const timeEach = (work: (p: (typeof picks)[number]) => unknown) =>
  percentiles(
    picks.map((p) => {
      const t = performance.now();
      work(p);
      return (performance.now() - t) * 1000;
    }),
  );
let searchUs: { p50: number; p95: number };
let receiptUs: { p50: number; p95: number };
let buckets = 0;
if (bucketMs === 0) {
  const search = db.prepare(`select ${COLUMNS} from messages where recipient = ? order by created_at desc, sms_id desc limit 51`);
  const receipt = db.prepare(`select ${COLUMNS} from messages where provider = ? and provider_message_id in (?)`);
  searchUs = timeEach((p) => search.all(p.recipient));
  receiptUs = timeEach((p) => receipt.all(p.provider, p.provider_message_id));
} else {
  const statements = new Map<number, BetterSqlite3.Statement>();
  const searchIn = (n: number) => {
    let s = statements.get(n);
    if (!s) {
      s = db.prepare(`select ${COLUMNS} from messages where ${bucket} in (${Array(n).fill('?').join(', ')}) and recipient = ?
        order by ${bucket} desc, created_at desc, sms_id desc limit 51`);
      statements.set(n, s);
    }
    return s;
  };
  const receiptIn = new Map<number, BetterSqlite3.Statement>();
  const receiptOf = (n: number) => {
    let s = receiptIn.get(n);
    if (!s) {
      s = db.prepare(`select ${COLUMNS} from messages where ${bucket} in (${Array(n).fill('?').join(', ')}) and provider = ? and provider_message_id in (?)`);
      receiptIn.set(n, s);
    }
    return s;
  };
  buckets = days().length;
  searchUs = timeEach((p) => {
    const list = days();
    return searchIn(list.length).all(...list, p.recipient);
  });
  // As src/ledger/receipt-targets.ts: the recent two buckets first, then the span without them when not found.
  const recentDays = Math.max(2, Math.ceil((2 * 86_400_000) / bucketMs));
  receiptUs = timeEach((p) => {
    const today = Math.floor(Date.now() / bucketMs);
    const recent = Array.from({ length: recentDays }, (_, k) => today - k);
    const found = receiptOf(recent.length).all(...recent, p.provider, p.provider_message_id);
    if (found.length > 0) return found;
    const older = days().filter((b) => b <= today - recentDays || b > today);
    return receiptOf(older.length).all(...older, p.provider, p.provider_message_id);
  });
}
const sizes = Object.fromEntries(
  (
    db
      .prepare(
        "select name, sum(pgsize) as bytes from dbstat where name in ('messages_recipient', 'messages_provider_message_id', 'messages_recipient_time', 'messages_provider_id_time') group by name",
      )
      .all() as Array<{ name: string; bytes: number }>
  ).map((r) => [r.name, Math.round(r.bytes / 1e5) / 10]),
);
console.log(
  JSON.stringify({
    bench: 'time-keys',
    layout,
    rounds,
    group,
    us_per_message: send,
    per_message: pages,
    buckets,
    search_by_number_us: searchUs,
    receipt_by_provider_id_us: receiptUs,
    index_mb: sizes,
  }),
);
db.close();
