/**
 * node dist/bench/search-pairs.js --seed FILE | --database postgres://…/NAME [--runs 40] [--only NAME,…] [--limit 50]
 *
 * Every documented search of GET /admin/messages and the console (src/delivery/message-query.ts: recipient, user_id,
 * activity_id, sms_id, provider, status, from/to) alone and in every pair, timed through the gateway's own search
 * (src/ledger/message-search.ts, on the ledger's read connection) against a prefilled ledger (bench/prefill.ts).
 * Each run picks a message of the ledger at a random time and searches with its values, so key filters find
 * something; provider and status go round every value (10 status words, the ledger's providers), so pairs both match
 * and miss. A run that shows a full page also asks for the next one (the console's "older" link), timed on its own.
 * Prints one JSON line per case: {bench, case, queries, p50_ms, p95_ms, p99_ms, max_ms, rows_per_page}. Target: p95
 * under 200 ms. The file is opened as the gateway opens it and only read.
 */
import { parseArgs } from 'node:util';
import { openLedger } from '../src/ledger/engine/db.js';
import { SEARCH_STATUSES, searchMessages, type MessageFilter, type MessageSummary } from '../src/ledger/message-search.js';

const DAY_MS = 86_400_000;
type Filter = Omit<MessageFilter, 'limit'>;
type Kind = 'recipient' | 'user_id' | 'activity_id' | 'sms_id' | 'provider' | 'status' | 'one day' | 'one week';

const KINDS: Kind[] = ['recipient', 'user_id', 'activity_id', 'sms_id', 'provider', 'status', 'one day', 'one week'];
const STATUSES = [...SEARCH_STATUSES.keys()];

/** A cheap fixed pseudo-random number in [0, 1) for run k and a salt. */
const mix = (k: number, salt: number) => (Math.imul(k ^ salt, 2654435761) >>> 0) / 2 ** 32;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function filterOf(kind: Kind, m: MessageSummary, k: number, providers: string[]): Filter {
  switch (kind) {
    case 'recipient':
      return { recipient: m.recipient };
    case 'user_id':
      return m.user_id === null ? {} : { userId: m.user_id };
    case 'activity_id':
      return { activityKey: m.activity_key };
    case 'sms_id':
      return { smsId: m.sms_id };
    case 'provider':
      return { provider: providers[k % providers.length]! };
    case 'status':
      return { status: STATUSES[k % STATUSES.length]! };
    case 'one day':
      return { from: m.created_at - DAY_MS / 2, to: m.created_at + DAY_MS / 2 };
    case 'one week':
      return { from: m.created_at - 3 * DAY_MS, to: m.created_at + 4 * DAY_MS };
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string' },
      database: { type: 'string' },
      runs: { type: 'string', default: '40' },
      only: { type: 'string' },
      limit: { type: 'string', default: '50' },
    },
  });
  if (!values.seed === !values.database) throw new Error('give --seed FILE (SQLite) or --database URL (PostgreSQL)');
  const runs = Number(values.runs);
  const limit = Number(values.limit);
  const url = values.seed ? `sqlite:${values.seed}` : values.database!;
  const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 2 });
  const db = ledger.readDb;
  try {
    const newest = (await searchMessages(db, { limit: 1 })).rows[0];
    if (!newest) throw new Error('the ledger holds no message');
    // The oldest message's time, by halving: searches page newest first only.
    // PostgreSQL hands bigint columns back as text.
    const end = Number(newest.created_at);
    let start = end - 400 * DAY_MS;
    for (let span = 200 * DAY_MS; span >= 60_000; span = Math.floor(span / 2)) {
      if ((await searchMessages(db, { to: start + span, limit: 1 })).rows.length === 0) start += span;
    }
    const providers = new Set<string>();
    // Sample messages: the newest before a random time.
    const samples: MessageSummary[] = [];
    for (let k = 0; samples.length < runs && k < runs * 4; k++) {
      const at = start + Math.floor(mix(k, 0x51ed) * (end - start));
      const m = (await searchMessages(db, { to: at + 1, limit: 1 })).rows[0];
      if (m && m.user_id !== null) samples.push({ ...m, created_at: Number(m.created_at) });
      if (m) providers.add(m.provider);
    }
    const providerList = [...providers].sort();
    const cases: Array<[string, Kind[]]> = [['newest, no filter', []], ...KINDS.map((k): [string, Kind[]] => [k, [k]])];
    for (let i = 0; i < KINDS.length; i++)
      for (let j = i + 1; j < KINDS.length; j++) {
        if (KINDS[i]!.startsWith('one ') && KINDS[j]!.startsWith('one ')) continue;
        cases.push([`${KINDS[i]} + ${KINDS[j]}`, [KINDS[i]!, KINDS[j]!]]);
      }
    const only = values.only?.split(',');
    for (const [name, kinds] of cases) {
      if (only && !only.includes(name)) continue;
      const timings: number[] = [];
      let shown = 0;
      let slowest = { ms: 0, filter: {} as Filter };
      const started = performance.now();
      for (let k = 0; k < samples.length; k++) {
        const filter = Object.assign({}, ...kinds.map((kind) => filterOf(kind, samples[k]!, k, providerList))) as Filter;
        let t = performance.now();
        const first = await searchMessages(db, { ...filter, limit });
        const ms = performance.now() - t;
        timings.push(ms);
        if (ms > slowest.ms) slowest = { ms, filter };
        shown += first.rows.length;
        const last = first.rows.at(-1);
        if (first.more && last) {
          t = performance.now();
          await searchMessages(db, { ...filter, limit, after: { createdAt: Number(last.created_at), smsId: last.sms_id } });
          timings.push(performance.now() - t);
        }
        // A case far over its target has said what it has to say.
        if (performance.now() - started > 60_000) break;
      }
      timings.sort((a, b) => a - b);
      const round = (ms: number) => Math.round(ms * 100) / 100;
      console.log(
        JSON.stringify({
          bench: 'search-pairs',
          case: name,
          queries: timings.length,
          p50_ms: round(percentile(timings, 0.5)),
          p95_ms: round(percentile(timings, 0.95)),
          p99_ms: round(percentile(timings, 0.99)),
          max_ms: round(timings.at(-1)!),
          rows_per_page: Math.round(shown / samples.length),
          ...(percentile(timings, 0.95) > 200 ? { slowest: { ms: round(slowest.ms), filter: slowest.filter } } : {}),
        }),
      );
    }
  } finally {
    await ledger.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
