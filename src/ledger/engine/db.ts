/**
 * Opens the ledger database chosen by `database.url` alone (its dialect's own module: sqlite.ts, postgres.ts) and runs
 * the migrations.
 */
import { Migrator } from 'kysely/migration';
import { type Kysely, type Transaction, sql } from 'kysely';
import type { Config } from '../../config/schema.js';
import { dialectFlagsOf, LAYOUT_QUERY, POSTGRES_FLAGS, registerFlags, SQLITE_FLAGS } from './flags.js';
import type { Ledger, LedgerOptions, LedgerSettings } from './ledger.js';
import { migrations } from './migrations.js';
import { layOutNewLedger, serverHoldsLayoutByDay } from './partitions.js';
import { openPostgresLedger } from './postgres.js';
import type { Database } from '../schema.js';
import { openSqliteLedger, openSqliteScanConnection } from './sqlite.js';

export function openLedger(config: LedgerSettings, options: LedgerOptions = {}): Ledger {
  // Each dialect's driver is loaded by its own module, when a ledger of that dialect opens: a SQLite process never
  // loads pg, a PostgreSQL one never loads better-sqlite3.
  const ledger = config.url.startsWith('sqlite:')
    ? openSqliteLedger(config, options, SQLITE_FLAGS)
    : openPostgresLedger(config, options, { ...POSTGRES_FLAGS });
  registerFlags(ledger.db, ledger.flags);
  return ledger;
}

export interface MigrationStep {
  name: string;
  /** 1-based position among the migrations this run applies. */
  index: number;
  total: number;
}

export interface MigrateOptions {
  /**
   * Told before each pending migration runs (the `migrate` command's progress). On a ledger that exists, each then runs
   * in its own transaction instead of all in one.
   */
  onStep?: (step: MigrationStep) => void;
  /**
   * PostgreSQL: the layout a new ledger is made with (`database.layout`; by day when left out). A ledger that exists
   * keeps its own: `crm-sms-gateway partition` converts a flat one.
   */
  layout?: Config['database']['layout'];
  /** The clock the day tables of a new ledger are made from. */
  now?: number;
}

/**
 * Kysely's Migrator takes this advisory lock on PostgreSQL (its PostgresAdapter's key); a session that holds it
 * already is granted it again, so the Migrator runs inside the transaction that took it here.
 */
const MIGRATION_LOCK = BigInt('3853314791062309107');

/**
 * Applies the pending migrations and answers their names. On PostgreSQL, a new ledger (no migration applied yet) is
 * migrated and, unless `layout` is flat or the server is older than 15 (the layout's keys need `nulls not distinct`),
 * laid out by day (layOutNewLedger), all in one transaction under the migration lock: a second instance starting on the
 * same empty database waits for it and finds a ledger with every migration and its layout, and a job that reads the
 * schema meanwhile finds every migration pending and refuses, so no process ever reads the flat layout of a ledger that
 * is about to change. The layout flag is read again after, for the process that waited with it read before.
 */
export async function migrateToLatest(db: Kysely<Database>, options: MigrateOptions = {}): Promise<string[]> {
  const migrator = (on: Kysely<Database>) => new Migrator({ db: on, provider: { getMigrations: async () => migrations } });
  if (dialectFlagsOf(db).kind === 'sqlite') return runMigrations(migrator(db), options.onStep);
  const made = await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK)})`.execute(trx);
    const { rows } = await sql<{ table: string | null }>`select to_regclass('kysely_migration')::text as table`.execute(trx);
    if (rows[0]?.table && (await sql`select from kysely_migration limit 1`.execute(trx)).rows.length > 0) return undefined;
    const applied = await runMigrations(migrator(trx), options.onStep);
    if (options.layout !== 'flat' && (await serverHoldsLayoutByDay(trx))) await layOutNewLedger(trx, options.now ?? Date.now());
    return applied;
  });
  const applied = made ?? (await runMigrations(migrator(db), options.onStep));
  const { rows } = await sql<{ relkind: string }>`${sql.raw(LAYOUT_QUERY)}`.execute(db);
  dialectFlagsOf(db).partitionsByDay = rows[0]?.relkind === 'p';
  return applied;
}

async function runMigrations(migrator: Migrator, onStep: MigrateOptions['onStep']): Promise<string[]> {
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
