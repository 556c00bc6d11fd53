/**
 * Builds the backend operator.backend names. The http backend connects on its first call; the sql backend opens its
 * read-only scan connection when given the database config (the gateway does; createApp's fallback does not).
 */
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Config } from '../config/schema.js';
import type { Database } from '../ledger/schema.js';
import type { OperatorBackend } from './backend.js';
import { createHttpBackend } from './http-backend.js';
import { createSqlBackend } from './sql-backend.js';
import { createUpstream } from './upstream.js';

export function createOperatorBackend(
  config: Config['operator'],
  db: Kysely<Database>,
  now: () => number,
  database?: Config['database'],
): OperatorBackend {
  if (config.backend === 'http') {
    const upstream = createUpstream({
      // The config schema requires base_url for this backend.
      baseUrl: config.base_url!,
      headers: config.headers,
      timeoutMs: config.timeout,
      connections: config.max_connections,
    });
    return createHttpBackend({ upstream, db, now, timeoutMs: config.timeout });
  }
  const scan = database && openScanConnection(database);
  return createSqlBackend({ db, scanDb: scan?.db, now, pageSize: config.reconciliation_page_size, close: scan?.close });
}

/**
 * SQLite: reconciliation reads through a second, read-only connection with a small page cache. A scan of millions of
 * rows would otherwise push the send path's hot pages out of the shared connection's cache (better-sqlite3 sets
 * 16 MB), and fill that cache with pages read once. WAL mode lets the two connections read side by side.
 * PostgreSQL draws its connections from the pool anyway.
 */
function openScanConnection(database: Config['database']): { db: Kysely<Database>; close: () => Promise<void> } | undefined {
  const file = database.url.startsWith('sqlite:') ? database.url.slice('sqlite:'.length) : null;
  if (!file || file === ':memory:') return undefined;
  const sqlite = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  sqlite.pragma('cache_size = -2000');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, close: () => db.destroy() };
}
