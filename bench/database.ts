/**
 * The ledger a benchmark run shares between its gateway instances: a SQLite file in a temp dir by default, or a
 * fresh database on the PostgreSQL server named by --database (created for the run, dropped after). For
 * PostgreSQL, `cpuMs()` sums the CPU of the server's processes, so a run can report the database's share.
 */
import { closeSync, copyFileSync, fsyncSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { procCpuMs } from './server-process.js';

export interface BenchDatabase {
  url: string;
  kind: 'sqlite' | 'postgres';
  /** CPU used so far by the database server's processes (null for SQLite, which runs inside the gateway). */
  cpuMs(): number | null;
  drop(): Promise<void>;
}

function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Copies `from` to `to` and has the copy written to the disk before the run: left in the page cache, its gigabytes
 * were written back during the run, and the checkpointer's fsyncs waited behind them (batch p99 715 ms against 168
 * on a synced copy, bench/README.md "A filled ledger measured again: the seed's shape, the copy's write-back,
 * PostgreSQL, the move beside sends").
 */
function copyWrittenBack(from: string, to: string): void {
  copyFileSync(from, to);
  const fd = openSync(to, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `seed`: a prefilled ledger (bench/prefill.ts) the run starts from a copy of, so the original serves every run: a
 * SQLite file, or with a server URL the name of a database there, copied with `create database … template`.
 * `ledger`: a ledger served as it is, for ledgers too large to copy for each run (30 million messages are 40 GB):
 * a SQLite file, or with a server URL a database's name. Each run adds its messages to it, a few thousandths of such
 * a ledger.
 */
export async function createBenchDatabase(serverUrl: string | undefined, seed?: string, ledger?: string): Promise<BenchDatabase> {
  if (ledger && !serverUrl) return { url: `sqlite:${ledger}`, kind: 'sqlite', cpuMs: () => null, drop: async () => {} };
  if (!serverUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-bench-ledger-'));
    // A prefilled file is closed in WAL mode with its log checkpointed away: the file alone is the ledger.
    if (seed) copyWrittenBack(seed, join(dir, 'ledger.db'));
    return { url: `sqlite:${join(dir, 'ledger.db')}`, kind: 'sqlite', cpuMs: () => null, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  // Backends come and go with connections; those alive during the run hold nearly all of its work.
  const cpuMs = () => postgresPids().reduce((sum, pid) => sum + (procCpuMs(pid) ?? 0), 0);
  const url = new URL(serverUrl);
  if (ledger) {
    if (!/^[a-z_][a-z0-9_]*$/.test(ledger)) throw new Error(`--ledger with --database names a database (got "${ledger}")`);
    url.pathname = `/${ledger}`;
    return { url: url.toString(), kind: 'postgres', cpuMs, drop: async () => {} };
  }
  const name = `gw_bench_${Date.now().toString(36)}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  if (seed && !/^[a-z_][a-z0-9_]*$/.test(seed)) throw new Error(`--seed with --database names a database (got "${seed}")`);
  await admin(seed ? `create database ${name} template ${seed}` : `create database ${name}`);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: 'postgres',
    cpuMs,
    drop: () => admin(`drop database if exists ${name} with (force)`),
  };
}
