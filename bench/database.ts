/**
 * The ledger a benchmark run shares between its gateway instances: a SQLite file in a temp dir by default, or a
 * fresh database on the PostgreSQL server named by --database (created for the run, dropped after). For
 * PostgreSQL, `cpuMs()` sums the CPU of the server's processes, so a run can report the database's share.
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
 * `seed`: a prefilled ledger (bench/prefill.ts) the run starts from a copy of, so the original serves every run: a
 * SQLite file, or with a server URL the name of a database there, copied with `create database … template`.
 */
export async function createBenchDatabase(serverUrl: string | undefined, seed?: string): Promise<BenchDatabase> {
  if (!serverUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-bench-ledger-'));
    // A prefilled file is closed in WAL mode with its log checkpointed away: the file alone is the ledger.
    if (seed) copyFileSync(seed, join(dir, 'ledger.db'));
    return { url: `sqlite:${join(dir, 'ledger.db')}`, kind: 'sqlite', cpuMs: () => null, drop: async () => rmSync(dir, { recursive: true, force: true }) };
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
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: 'postgres',
    // Backends come and go with connections; those alive during the run hold nearly all of its work.
    cpuMs: () => postgresPids().reduce((sum, pid) => sum + (procCpuMs(pid) ?? 0), 0),
    drop: () => admin(`drop database if exists ${name} with (force)`),
  };
}
