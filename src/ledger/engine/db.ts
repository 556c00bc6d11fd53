/**
 * Opens the ledger database chosen by `database.url` alone (its dialect's own module: sqlite.ts, postgres.ts) and runs
 * the migrations.
 */
import { Migrator } from 'kysely/migration';
import { type Kysely, PostgresAdapter, type Transaction, sql } from 'kysely';
import type { Config } from '../../config/schema.js';
import type { DialectFlags, Ledger, LedgerOptions, LedgerSettings } from './ledger.js';
import { migrations } from './migrations.js';
import { openPostgresLedger } from './postgres.js';
import type { Database } from '../schema.js';
import { openSqliteLedger, openSqliteScanConnection } from './sqlite.js';

// Frozen: a ledger's own flags are a copy (openLedger), and only those change.
const SQLITE_FLAGS: DialectFlags = Object.freeze({
  kind: 'sqlite',
  skipLocked: false,
  writesNumberEntries: true,
  stopsEventLoop: true,
  namesIndexes: true,
  concurrentWriters: false,
  partitionsByDay: false,
});
const POSTGRES_FLAGS: DialectFlags = Object.freeze({
  kind: 'postgres',
  skipLocked: true,
  writesNumberEntries: false,
  stopsEventLoop: false,
  namesIndexes: false,
  concurrentWriters: true,
  // Read off the database when the ledger first connects (postgres.ts): a layout the operator chooses.
  partitionsByDay: false,
});

/**
 * Each open ledger's flags, by the adapter its connection and every transaction of it share: a PostgreSQL ledger's
 * layout is its database's, not its dialect's.
 */
const flagsByAdapter = new WeakMap<object, DialectFlags>();

/** The flags of the ledger a connection (or transaction) belongs to, for query functions given only the database. */
export function dialectFlagsOf(db: Pick<Kysely<Database>, 'getExecutor'>): DialectFlags {
  const adapter = db.getExecutor().adapter;
  return flagsByAdapter.get(adapter) ?? (adapter instanceof PostgresAdapter ? POSTGRES_FLAGS : SQLITE_FLAGS);
}

export function openLedger(config: LedgerSettings, options: LedgerOptions = {}): Ledger {
  // Each dialect's driver is loaded by its own module, when a ledger of that dialect opens: a SQLite process never
  // loads pg, a PostgreSQL one never loads better-sqlite3.
  const ledger = config.url.startsWith('sqlite:')
    ? openSqliteLedger(config, options, SQLITE_FLAGS)
    : openPostgresLedger(config, options, { ...POSTGRES_FLAGS });
  flagsByAdapter.set(ledger.db.getExecutor().adapter, ledger.flags);
  return ledger;
}

export interface MigrationStep {
  name: string;
  /** 1-based position among the migrations this run applies. */
  index: number;
  total: number;
}

/**
 * `onStep`: told before each pending migration runs (the `migrate` command's progress). Each then runs on its
 * own (in its own transaction where the database has transactional DDL) instead of all in one.
 */
export async function migrateToLatest(db: Kysely<Database>, onStep?: (step: MigrationStep) => void): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  if (!onStep) {
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw new Error(`migration failed: ${error instanceof Error ? error.message : String(error)}`);
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  }
  const pending = (await migrator.getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name);
  const applied: string[] = [];
  for (const [i, name] of pending.entries()) {
    onStep({ name, index: i + 1, total: pending.length });
    const { error, results } = await migrator.migrateUp();
    if (error) throw new Error(`migration ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    applied.push(...(results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName));
  }
  return applied;
}

/** The schema against this version's migrations: what it has not applied yet, and what it applied that this version does not know. */
export interface MigrationState {
  pending: string[];
  /** Applied by a newer crm-sms-gateway (the database was migrated forward, then an older image started). */
  unknown: string[];
}

/** Reads only: the first statements a command runs, so a database that cannot be reached fails here. */
export async function readMigrationState(db: Kysely<Database>): Promise<MigrationState> {
  // Kysely's own migration table (Migrator's default name); it does not exist before the first migration.
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  const applied = tables.some((t) => t.name === 'kysely_migration')
    ? (await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows.map((r) => r.name)
    : [];
  const known = Object.keys(migrations).sort();
  const done = new Set(applied);
  return { pending: known.filter((name) => !done.has(name)), unknown: applied.filter((name) => !Object.hasOwn(migrations, name)).sort() };
}

/** The database answers a trivial query (readiness checks); throws when it does not. */
export async function pingDatabase(db: Kysely<any>): Promise<void> {
  await sql`select 1`.execute(db);
}

/**
 * SQLite: a second, read-only connection with a small page cache, for long scans (operator reconciliation; sqlite.ts).
 * PostgreSQL draws its connections from the pool anyway, and an in-memory database has no file to share: both get
 * undefined.
 */
export function openScanConnection(database: Config['database']): { db: Kysely<Database>; close: () => Promise<void> } | undefined {
  const file = database.url.startsWith('sqlite:') ? database.url.slice('sqlite:'.length) : null;
  return file && file !== ':memory:' ? openSqliteScanConnection(file) : undefined;
}

/**
 * Runs `work` in one transaction (committed when it resolves, rolled back when it throws). Callers outside the
 * ledger choose the unit of work with this; the statements inside are the ledger's query functions.
 */
export function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(work);
}
