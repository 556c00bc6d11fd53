/**
 * The SQLite ledger (the embedded default): the writer connection with its busy handling and statement cache, the
 * read-only connection beside it, and the scan connection. better-sqlite3 is loaded when a SQLite ledger opens, so
 * a PostgreSQL process never loads it.
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, SqliteDriver, type DatabaseConnection, type SqliteDialectConfig } from 'kysely';
import { startCheckpointer } from './checkpointer.js';
import type { DialectFlags, Ledger, LedgerOptions, LedgerSettings } from './ledger.js';
import type { Database } from '../schema.js';

type SqliteConstructor = typeof BetterSqlite3;
let driver: SqliteConstructor | undefined;
/** better-sqlite3, loaded on first use. */
const Sqlite = (): SqliteConstructor => (driver ??= createRequire(import.meta.url)('better-sqlite3') as SqliteConstructor);

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
  const sqlite = new (Sqlite())(file, { readonly: true, fileMustExist: true });
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

export function openSqliteLedger(config: LedgerSettings, options: LedgerOptions, flags: DialectFlags): Ledger {
  const file = config.url.slice('sqlite:'.length);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new (Sqlite())(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma(`synchronous = ${config.sqlite_synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  // serve and a cron flush share the file: statements that find it busy are retried on a timer, never waited
  // for inside SQLite with the event loop stopped (ImmediateSqliteDriver).
  sqlite.pragma('busy_timeout = 0');
  sqlite.pragma('foreign_keys = ON');
  // 4 MiB of page cache, not better-sqlite3's 16: the send path appends at the right edge of each table and index,
  // and 1,000 pages hold those edges and the interior pages of a ledger of millions of rows; the rest of what it
  // reads is in the system's file cache. The 16 MiB filled up within one peer benchmark run and stayed in the peak
  // (bench/README.md "Memory": single 228–279 → 202–209 MiB, at the same submit rate).
  sqlite.pragma('cache_size = -4000');
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }, sqlite) });
  const background = file === ':memory:' ? undefined : options.backgroundCheckpoints;
  const checkpointer = background ? startCheckpointer(sqlite, file, background.logger) : undefined;
  // An in-memory database is private to its connection: it reads through the writer.
  const reader = file === ':memory:' ? undefined : openReadConnection(file);
  return {
    db,
    readDb: reader?.db ?? db,
    flags,
    spaceCheckpoints(walBytes) {
      if (file === ':memory:') return () => {};
      if (checkpointer) return checkpointer.spaceOut(walBytes);
      // Commits checkpoint (a short command): past this many pages instead of SQLite's 1,000, then as before.
      sqlite.pragma(`wal_autocheckpoint = ${Math.max(1_000, Math.ceil(walBytes / 4_096))}`);
      return () => {
        if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
      };
    },
    async close() {
      await reader?.close();
      await db.destroy();
      await checkpointer?.close();
    },
  };
}

/**
 * SQLite: a second, read-only connection with a small page cache, for long scans (operator reconciliation). A scan
 * of millions of rows would otherwise push the send path's hot pages out of the shared connection's cache
 * (better-sqlite3 sets 16 MB), and fill that cache with pages read once. WAL mode lets the two connections read
 * side by side.
 */
export function openSqliteScanConnection(file: string): { db: Kysely<Database>; close: () => Promise<void> } {
  const sqlite = new (Sqlite())(file, { readonly: true, fileMustExist: true });
  sqlite.pragma('cache_size = -2000');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, close: () => db.destroy() };
}
