/**
 * The ledger a benchmark run shares between its gateway instances: a SQLite file in a temp dir by default, or a
 * fresh database on the PostgreSQL server named by --database (created for the run, dropped after). For
 * PostgreSQL, `cpuMs()` sums the CPU of the server's processes, so a run can report the database's share.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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

export async function createBenchDatabase(serverUrl: string | undefined): Promise<BenchDatabase> {
  if (!serverUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-bench-ledger-'));
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
  await admin(`create database ${name}`);
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
