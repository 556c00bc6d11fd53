/**
 * What a planner makes of a ledger function's statement: the function runs against a freshly migrated, empty ledger
 * (a SQLite file, or a PostgreSQL database of its own, flat: the Kysely given to the function carries no ledger's
 * flags, so its statements are the flat tables'; test/ledger/day-partitions.test.ts reads the layout by day's plans),
 * its statements are captured as Kysely compiles them, and the first one `which` picks is explained (SQLite's EXPLAIN
 * QUERY PLAN, PostgreSQL's EXPLAIN), one step a line.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Database } from '../../src/ledger/schema.js';
import { dropPostgresDatabase, postgresDatabaseUrl } from './database.js';

export interface PlanOptions {
  /** Run on the migrated file before the function (statistics, rows). */
  prepare?: (sqlite: BetterSqlite3.Database) => void;
  /** Which captured statement to explain (default: the first). */
  which?: (query: CompiledQuery) => boolean;
}

export async function sqlitePlanOf(run: (db: Kysely<Database>) => Promise<unknown>, options: PlanOptions = {}): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'crm-query-plans-')), 'ledger.db');
  const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db);
  await ledger.close();
  const sqlite = new BetterSqlite3(file);
  options.prepare?.(sqlite);
  const captured: CompiledQuery[] = [];
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log: (event) => void captured.push(event.query) });
  try {
    await run(db);
    const statement = captured.find(options.which ?? (() => true))!;
    return (sqlite.prepare(`explain query plan ${statement.sql}`).all(...(statement.parameters as unknown[])) as Array<{ detail: string }>)
      .map((p) => p.detail)
      .join('\n');
  } finally {
    await db.destroy();
  }
}

/** The same on PostgreSQL, in a database of its own (on the SQLite run too: the machine's server); `prepare` is not taken. */
export async function postgresPlanOf(run: (db: Kysely<Database>) => Promise<unknown>, options: Pick<PlanOptions, 'which'> = {}): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'crm-query-plans-'));
  const url = postgresDatabaseUrl(dir);
  const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db, { layout: 'flat' });
  await ledger.close();
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const captured: CompiledQuery[] = [];
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (event) => void captured.push(event.query) });
  try {
    await run(db);
    const statement = captured.find(options.which ?? (() => true))!;
    const plan = await pool.query<{ 'QUERY PLAN': string }>(`explain ${statement.sql}`, statement.parameters as unknown[]);
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await db.destroy();
    await dropPostgresDatabase(dir);
  }
}
