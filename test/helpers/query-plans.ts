/**
 * What SQLite's planner makes of a ledger function's statement: the function runs against a freshly migrated, empty
 * ledger file, its statements are captured as Kysely compiles them, and the first one `which` picks is explained
 * (EXPLAIN QUERY PLAN), one step a line.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type CompiledQuery } from 'kysely';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Database } from '../../src/ledger/schema.js';

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
