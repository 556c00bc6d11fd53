/** Opens the ledger database chosen by `database.url` alone and runs the migrations. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Migrator } from 'kysely/migration';
import {
  CompiledQuery,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type SqliteDialectConfig,
  type Transaction,
  sql,
} from 'kysely';
import { createRequire } from 'node:module';
import type PgModule from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { startCheckpointer } from './checkpointer.js';
import { migrations } from './migrations.js';
import type { Database } from './schema.js';

/** Database differences live here as flags, not as `if (sqlite)` scattered through the repositories. */
export interface DialectFlags {
  kind: 'sqlite' | 'postgres';
  /** Row locks that let several instances claim different outbox rows (`FOR UPDATE SKIP LOCKED`). */
  skipLocked: boolean;
}

const SQLITE_FLAGS: DialectFlags = { kind: 'sqlite', skipLocked: false };
const POSTGRES_FLAGS: DialectFlags = { kind: 'postgres', skipLocked: true };

/** The flags of the dialect a connection (or transaction) speaks, for query functions given only the database. */
export function dialectFlagsOf(db: Pick<Kysely<Database>, 'getExecutor'>): DialectFlags {
  return db.getExecutor().adapter instanceof PostgresAdapter ? POSTGRES_FLAGS : SQLITE_FLAGS;
}

export interface Ledger {
  db: Kysely<Database>;
  /**
   * Where reads that need no write of their own go (readiness, operator reads, console and admin views). On a SQLite
   * file: a second, read-only connection (openReadConnection). Elsewhere: `db` itself.
   */
  readDb: Kysely<Database>;
  flags: DialectFlags;
  close(): Promise<void>;
}

/**
 * Transactions take SQLite's write lock at BEGIN. A plain BEGIN takes it at the first write, and a transaction
 * that read first then fails at once with SQLITE_BUSY if another process (serve and a cron flush share the
 * file) committed in between. While another process holds the lock, SQLite's busy handler would sleep in
 * steps of 1 ms or more with the event loop stopped (better-sqlite3 is synchronous), so the connection never
 * waits in it (busy_timeout 0): a statement outside a transaction that finds the database busy (BEGIN, or a
 * single write such as the sweep's) fails at once and is tried again on a timer, for up to BUSY_TIMEOUT_MS,
 * and this process keeps taking requests meanwhile (they join the next group). Inside a transaction, which
 * holds the lock from BEGIN IMMEDIATE, nothing waits for it.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  private wrapped: DatabaseConnection | undefined;

  constructor(
    options: SqliteDialectConfig,
    private readonly sqlite: BetterSqlite3.Database,
  ) {
    super(options);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    if (!this.wrapped) {
      const sqlite = this.sqlite;
      this.wrapped = {
        executeQuery: (query) => (sqlite.inTransaction ? connection.executeQuery(query) : retryWhileBusy(() => connection.executeQuery(query))),
        streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
      };
    }
    return this.wrapped;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
  }
}

async function retryWhileBusy<T>(run: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      return await run();
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > giveUpAt) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const BUSY_TIMEOUT_MS = 5_000;
const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');

/**
 * The read connection's driver: no transactions, and a statement that finds the database busy (rare for a reader in
 * WAL mode: the WAL being reset or recovered) is tried again on a timer like the writer's, never waited for in SQLite.
 */
class RetryingReadDriver extends SqliteDriver {
  private wrapped: DatabaseConnection | undefined;

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    this.wrapped ??= {
      executeQuery: (query) => retryWhileBusy(() => connection.executeQuery(query)),
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    };
    return this.wrapped;
  }
}

class RetryingReadDialect extends SqliteDialect {
  constructor(private readonly options: SqliteDialectConfig) {
    super(options);
  }
  override createDriver() {
    return new RetryingReadDriver(this.options);
  }
}

/**
 * A read-only connection to the ledger's SQLite file. Kysely runs one statement at a time on a connection, and a
 * transaction keeps the connection from BEGIN IMMEDIATE to COMMIT, including while BEGIN waits for another process's
 * write lock (up to BUSY_TIMEOUT_MS): a read queued behind it on the same connection waited that long (a /userdetails
 * took 5.3 s, /readyz probes timed out). In WAL mode a reader needs no lock a writer holds, and each statement here
 * runs in its own read transaction, so it sees every transaction committed before it began (this process's and
 * others'), never one still open. A read that must see its own transaction's uncommitted writes takes that
 * transaction instead.
 */
function openReadConnection(file: string): { db: Kysely<Database>; close: () => Promise<void> } {
  const sqlite = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  sqlite.pragma('busy_timeout = 0');
  const db = new Kysely<Database>({ dialect: new RetryingReadDialect({ database: withStatementCache(sqlite, 256) }) });
  return {
    db,
    async close() {
      await db.destroy();
      // Kysely closes only a connection it has used: one no request read through must be closed here.
      if (sqlite.open) sqlite.close();
    },
  };
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(
    private readonly options: SqliteDialectConfig,
    private readonly sqlite: BetterSqlite3.Database,
  ) {
    super(options);
  }
  override createDriver() {
    return new ImmediateSqliteDriver(this.options, this.sqlite);
  }
}

/**
 * Kysely's SQLite driver prepares every query anew; preparing costs more than running our small statements, so
 * reuse prepared statements by SQL text (least recently used first out). Multi-row statements have one text per
 * row count, and groups of every size made 256 entries too few: e2e-single (bench/run.ts) prepared ~2,500
 * statements a run. The bound is on the texts' total length as well as their number, because a statement's
 * memory grows with its text (~30 bytes per character measured: ~53 KB for a 30-row insert into messages), so a
 * few hundred statements of 200 rows cannot hold hundreds of MB.
 */
function withStatementCache(sqlite: BetterSqlite3.Database, capacity = 1_024, maxTextChars = 1_000_000) {
  const cache = new Map<string, BetterSqlite3.Statement>();
  let textChars = 0;
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (statement) cache.delete(sql);
      else {
        statement = sqlite.prepare(sql);
        textChars += sql.length;
      }
      cache.set(sql, statement);
      while (cache.size > capacity || textChars > maxTextChars) {
        const oldest = cache.keys().next().value!;
        cache.delete(oldest);
        textChars -= oldest.length;
      }
      return statement;
    },
  };
}

export interface LedgerOptions {
  /** Told when PostgreSQL drops an idle pooled connection (a restart, a failover); the pool reconnects on next use. */
  logger?: Pick<Logger, 'warn'>;
  /** SQLite: checkpoint the WAL on a background thread instead of inside commits (for `serve`; checkpointer.ts). */
  backgroundCheckpoints?: { logger: Pick<Logger, 'warn'> };
}

export function openLedger(config: Config['database'], options: LedgerOptions = {}): Ledger {
  if (config.url.startsWith('sqlite:')) {
    const file = config.url.slice('sqlite:'.length);
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const sqlite = new BetterSqlite3(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma(`synchronous = ${config.sqlite_synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    // serve and a cron flush share the file: statements that find it busy are retried on a timer, never waited
    // for inside SQLite with the event loop stopped (ImmediateSqliteDriver).
    sqlite.pragma('busy_timeout = 0');
    sqlite.pragma('foreign_keys = ON');
    const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }, sqlite) });
    const background = file === ':memory:' ? undefined : options.backgroundCheckpoints;
    const checkpointer = background ? startCheckpointer(sqlite, file, background.logger) : undefined;
    // An in-memory database is private to its connection: it reads through the writer.
    const reader = file === ':memory:' ? undefined : openReadConnection(file);
    return {
      db,
      readDb: reader?.db ?? db,
      flags: SQLITE_FLAGS,
      async close() {
        await reader?.close();
        await db.destroy();
        await checkpointer?.close();
      },
    };
  }
  // Loaded only for a PostgreSQL ledger: the embedded SQLite default never pays its memory.
  const pg = createRequire(import.meta.url)('pg') as typeof PgModule;
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.pool_size,
    // bigint (int8) columns hold epoch milliseconds and counters, all far below 2^53.
    types: { getTypeParser: (oid, format) => (oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) },
  });
  // A connection PostgreSQL terminates (57P01 on a restart, a failover, an administrator) emits 'error' on its
  // client, and an 'error' nobody listens to ends the process. The query that was running, if any, fails on its
  // own; the pool drops the broken client (idle, or when it is given back) and connects anew on next use.
  pool.on('connect', (client) => client.on('error', () => {}));
  pool.on('error', (error: Error & { code?: string }) =>
    options.logger?.warn({ reason: error.message, code: error.code }, 'PostgreSQL closed an idle connection; reconnecting on next use'),
  );
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // PostgreSQL reads take a connection of their own from the pool anyway.
  return { db, readDb: db, flags: POSTGRES_FLAGS, close: () => db.destroy() };
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
 * SQLite: a second, read-only connection with a small page cache, for long scans (operator reconciliation). A scan
 * of millions of rows would otherwise push the send path's hot pages out of the shared connection's cache
 * (better-sqlite3 sets 16 MB), and fill that cache with pages read once. WAL mode lets the two connections read
 * side by side. PostgreSQL draws its connections from the pool anyway, and an in-memory database has no file to
 * share: both get undefined.
 */
export function openScanConnection(database: Config['database']): { db: Kysely<Database>; close: () => Promise<void> } | undefined {
  const file = database.url.startsWith('sqlite:') ? database.url.slice('sqlite:'.length) : null;
  if (!file || file === ':memory:') return undefined;
  const sqlite = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  sqlite.pragma('cache_size = -2000');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, close: () => db.destroy() };
}

/**
 * Runs `work` in one transaction (committed when it resolves, rolled back when it throws). Callers outside the
 * ledger choose the unit of work with this; the statements inside are the ledger's query functions.
 */
export function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(work);
}
