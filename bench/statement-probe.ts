/**
 * Where a gateway's time in SQLite goes, statement by statement, measured from inside the served process
 * (bench/README.md "Where a filled ledger's time goes"). Preloaded into `serve` like memory-probe.ts:
 *
 *   STATEMENT_PROBE_OUT=/tmp/statements.tsv BENCH_SERVER_NODE_OPTIONS="--import=$PWD/dist/bench/statement-probe.js" \
 *     node dist/bench/run.js --mode batch [--ledger FILE]
 *
 * It wraps `run`, `get`, `all` and `iterate` of better-sqlite3's statements (one prototype shared by every statement,
 * so the gateway's code is untouched) and every 2 s writes, slowest first: total ms, calls, and the statement's text
 * with each list of placeholders folded, so the texts of every row count of one insert add up as one. Time spent
 * iterating is counted when `iterate` is called only. Idle in any process whose arguments lack `serve`, and in its
 * worker threads.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

const out = process.env.STATEMENT_PROBE_OUT;

/** The statement's text without its lists of placeholders and whitespace runs, cut to 200 characters. */
function statementShape(sql: string): string {
  return sql
    .replace(/\(\?(?:, \?)*\)(?:, \(\?(?:, \?)*\))*/g, '(…)')
    .replace(/\?(?:, \?)+/g, '?…')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
}

function install(file: string): void {
  const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
  const probe = new Database(':memory:');
  const prototype = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  const totals = new Map<string, { calls: number; ns: bigint }>();
  const shapes = new WeakMap<BetterSqlite3.Statement, string>();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = prototype[method]!;
    prototype[method] = function (this: BetterSqlite3.Statement, ...args: unknown[]) {
      const started = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        const ns = process.hrtime.bigint() - started;
        let shape = shapes.get(this);
        if (shape === undefined) shapes.set(this, (shape = statementShape(this.source)));
        const entry = totals.get(shape) ?? { calls: 0, ns: 0n };
        entry.calls++;
        entry.ns += ns;
        totals.set(shape, entry);
      }
    };
  }
  const write = () => {
    const rows = [...totals].sort((a, b) => Number(b[1].ns - a[1].ns));
    writeFileSync(file, rows.map(([shape, { calls, ns }]) => `${(Number(ns) / 1e6).toFixed(1)}\t${calls}\t${shape}\n`).join(''));
  };
  setInterval(write, 2_000).unref();
  process.on('exit', write);
}

// The main thread only: the checkpoint thread (a Worker) is preloaded too, and would write the same file.
if (out && isMainThread && process.argv.includes('serve')) install(out);
