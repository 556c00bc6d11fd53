/**
 * How the console's front page holds up at scale: seeds a ledger of 10,000,000 messages (with their receipts,
 * conversions and the matching delivery_stats buckets, spread over 30 days) straight through better-sqlite3 in
 * large transactions, then times loadConsoleSummary with the outbox kinds' panels (target ≤ 100 ms) and a search by activity.id, and prints one
 * JSON line with the figures and the ledger's size on disk.
 *
 *   npm run build && node dist/bench/console-summary.js [--messages 10000000] [--keep]
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { loadConsoleSummary } from '../src/console/summary.js';
import { conversionPanel } from '../src/delivery/dead-letters-page.js';
import { eventPanel } from '../src/events/dead-events-page.js';
import { creditPanel } from '../src/operator/credits/dead-credits-page.js';
import { findMessageByActivityKey } from '../src/ledger/messages.js';
import { migrateToLatest, openLedger } from '../src/ledger/engine/db.js';
import { HOUR_MS, MINUTE_MS, MINUTE_STATS_RETENTION_MS, toStatsRows, type StatsEvent } from '../src/ledger/delivery-stats.js';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '10000000' }, keep: { type: 'boolean', default: false } } });
const MESSAGES = Number(values.messages);
const PROVIDERS = ['sandbox', 'backup'] as const;
const DAY_MS = 24 * HOUR_MS;
const SPAN_MS = 30 * DAY_MS;
const UNKNOWN_AFTER_MS = 72 * HOUR_MS;
const CHUNK = 100_000;

type Fate = 'delivered' | 'undelivered' | 'failed' | 'delivery_unknown' | 'rejected' | 'retryable';

/** A fixed, plausible mix: mostly delivered, a few of everything else. */
function fateOf(i: number): Fate {
  const r = (i * 2654435761) % 1000;
  if (r < 900) return 'delivered';
  if (r < 940) return 'undelivered';
  if (r < 960) return 'failed';
  if (r < 980) return 'delivery_unknown';
  if (r < 990) return 'rejected';
  return 'retryable';
}

/** Time-ordered ids shaped like UUIDs (the gateway uses UUIDv7), cheap to make ten million of. */
function smsIdOf(at: number, i: number): string {
  const hex = at.toString(16).padStart(12, '0') + i.toString(16).padStart(20, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function directorySize(dir: string): number {
  return readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

async function seed(file: string, now: number) {
  const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db);
  await ledger.close();

  const sqlite = new BetterSqlite3(file);
  // Seeding only: nothing here must survive a crash, so skip the journal and the fsyncs.
  sqlite.pragma('journal_mode = OFF');
  sqlite.pragma('synchronous = OFF');
  sqlite.pragma('cache_size = -1000000');
  const insertMessage = sqlite.prepare(`insert into messages (sms_id, activity_key, activity_json, provider, provider_message_id, recipient, sender,
    encoding, segments, content, state, error, error_code, attempts, provider_status, delivery_status, delivery_source,
    created_at, updated_at, dispatched_at, submitted_at, completed_at)
    values (?, ?, ?, ?, ?, ?, 'Casino', 'gsm7', 1, null, ?, ?, null, 1, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const insertReceipt =
    sqlite.prepare(`insert into receipts (provider, dedup_key, sms_id, provider_message_id, provider_status, mapped_status, error_code, matched, received_at)
    values (?, ?, ?, ?, ?, ?, null, ?, ?)`);
  const insertConversion =
    sqlite.prepare(`insert into conversions (sms_id, delivery_status, attempts, next_attempt_at, claimed_until, claim_token, posted_at, last_error, dead, created_at)
    values (?, ?, ?, ?, 0, null, ?, ?, ?, ?)`);
  const insertStats = sqlite.prepare(`insert into delivery_stats (period, bucket_start, provider, outcome, n) values (?, ?, ?, ?, ?)
    on conflict (period, bucket_start, provider, outcome) do update set n = delivery_stats.n + excluded.n`);

  const start = now - SPAN_MS;
  const backlogFrom = MESSAGES - 2_000;
  let settledSeen = 0;
  const seedChunk = sqlite.transaction((from: number, to: number) => {
    const events: StatsEvent[] = [];
    for (let i = from; i < to; i++) {
      const at = start + Math.floor((i / MESSAGES) * SPAN_MS);
      const provider = PROVIDERS[i % 10 < 7 ? 0 : 1];
      const fate = fateOf(i);
      const smsId = smsIdOf(at, i);
      const providerMessageId = `pm-${i}`;
      const sent = fate !== 'rejected' && fate !== 'retryable';
      const settleAt = fate === 'delivery_unknown' ? at + UNKNOWN_AFTER_MS : at + 2_000 + (i % 58_000);
      const settled = sent && settleAt <= now;
      const status = settled ? fate : null;
      const activity = `{"id":"act-${i}","brand_id":7,"user_id":"u-${i % 100_000}","activity_id":${i % 5_000},"action_group_id":3,"trigger_hash":"th","action_id":5}`;
      insertMessage.run(
        smsId,
        `act-${i}`,
        activity,
        provider,
        sent ? providerMessageId : null,
        `+4477009${String(i % 100_000).padStart(5, '0')}`,
        sent ? 'submitted' : fate,
        sent ? null : 'refused by provider',
        sent ? 'accepted' : null,
        status,
        status ? (fate === 'delivery_unknown' ? 'timeout' : 'receipt') : null,
        at,
        settled ? settleAt : at,
        at,
        sent ? at + 50 : null,
        settled ? settleAt : null,
      );
      events.push({ at, provider, outcome: sent ? 'submitted' : fate });
      if (!settled) continue;
      events.push({ at: settleAt, provider, outcome: fate });
      if (fate !== 'delivery_unknown') {
        insertReceipt.run(provider, `${provider}|${smsId}|${providerMessageId}|${fate}|`, smsId, providerMessageId, fate, fate, 1, settleAt);
      }
      // The newest settled messages still owe the CRM their conversion (1,000 due, 200 backing off, 50 dead);
      // everything older was posted.
      const owed = i >= backlogFrom ? settledSeen++ : Infinity;
      const state = owed < 1_000 ? 'due' : owed < 1_200 ? 'retrying' : owed < 1_250 ? 'dead' : 'posted';
      const attempts = state === 'due' ? 0 : state === 'retrying' ? 3 : state === 'dead' ? 25 : 1;
      const posted = state === 'posted' ? settleAt + 1_000 : null;
      const error = state === 'retrying' || state === 'dead' ? 'webhook answered 503' : null;
      insertConversion.run(smsId, fate, attempts, settleAt, posted, error, state === 'dead' ? 1 : 0, settleAt);
    }
    // The sweep keeps two days of minute buckets; hour buckets stay.
    for (const row of toStatsRows(events)) {
      if (row.period === 'minute' && row.bucket_start < now - MINUTE_STATS_RETENTION_MS) continue;
      insertStats.run(row.period, row.bucket_start, row.provider, row.outcome, row.n);
    }
  });

  const progressEvery = Math.max(CHUNK, Math.floor(MESSAGES / 10 / CHUNK) * CHUNK);
  for (let from = 0; from < MESSAGES; from += CHUNK) {
    seedChunk(from, Math.min(MESSAGES, from + CHUNK));
    if ((from + CHUNK) % progressEvery === 0) process.stderr.write(`seeded ${from + CHUNK} messages\n`);
  }
  const parked =
    sqlite.prepare(`insert into receipts (provider, dedup_key, sms_id, provider_message_id, provider_status, mapped_status, error_code, matched, received_at)
    values ('backup', ?, null, ?, 'delivered', 'delivered', null, 0, ?)`);
  sqlite.transaction(() => {
    for (let i = 0; i < 100; i++) parked.run(`backup||orphan-${i}|delivered|`, `orphan-${i}`, now - i * MINUTE_MS);
  })();
  const statsRows = (sqlite.prepare('select count(*) as n from delivery_stats').get() as { n: number }).n;
  sqlite.pragma('journal_mode = WAL');
  sqlite.exec('analyze');
  sqlite.close();
  return { statsRows };
}

async function measure(file: string, now: number) {
  const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
  try {
    const timings: number[] = [];
    let summary: Awaited<ReturnType<typeof loadConsoleSummary>> | undefined;
    let conversions: Awaited<ReturnType<typeof conversionPanel.load>> | undefined;
    for (let run = 0; run < 21; run++) {
      const started = performance.now();
      summary = await loadConsoleSummary(ledger.db, PROVIDERS, now);
      // The outbox kinds' panels, as the dashboard reads them beside the summary (src/outbox/panel.ts).
      conversions = await conversionPanel.load(ledger.db);
      for (const panel of [eventPanel, creditPanel]) await panel.load(ledger.db);
      timings.push(performance.now() - started);
    }
    const searchStarted = performance.now();
    const found = await findMessageByActivityKey(ledger.db, `act-${Math.floor(MESSAGES / 2)}`);
    const searchMs = performance.now() - searchStarted;
    const steady = timings.slice(1).sort((a, b) => a - b);
    const day = summary!.windows[1]!.rows.find((r) => r.provider === 'all')!.counts;
    return {
      first: timings[0]!,
      median: steady[Math.floor(steady.length / 2)]!,
      max: steady[steady.length - 1]!,
      searchMs,
      found: Boolean(found),
      backlog: conversions!.backlog,
      parked: conversions!.parked,
      daySubmitted: day.submitted,
    };
  } finally {
    await ledger.close();
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'console-summary-bench-'));
  const file = join(dir, 'ledger.db');
  const now = Date.now();
  try {
    const seedStarted = performance.now();
    const { statsRows } = await seed(file, now);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const result = await measure(file, now);
    const round = (ms: number) => Math.round(ms * 100) / 100;
    console.log(
      JSON.stringify({
        bench: 'console-summary',
        messages: MESSAGES,
        seed_seconds: Math.round(seedSeconds),
        ledger_bytes: directorySize(dir),
        ledger_gib: Math.round((directorySize(dir) / 2 ** 30) * 100) / 100,
        delivery_stats_rows: statsRows,
        summary_ms_first: round(result.first),
        summary_ms_median: round(result.median),
        summary_ms_max: round(result.max),
        summary_target_ms: 100,
        search_by_activity_id_ms: round(result.searchMs),
        found: result.found,
        backlog: result.backlog,
        parked: result.parked,
        last_day_sent: result.daySubmitted,
      }),
    );
  } finally {
    if (values.keep) process.stderr.write(`ledger kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

await main();
