/**
 * Builds the backend operator.backend names. The http backend connects on its first call; the sql backend opens its
 * read-only scan connection (src/ledger/db.ts, openScanConnection) when given the database config (the gateway does;
 * createApp's fallback does not).
 */
import type { Kysely } from 'kysely';
import type { Config } from '../config/schema.js';
import { openScanConnection } from '../ledger/db.js';
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
  /** The ledger's read connection (src/ledger/db.ts), for the sql backend's reads. */
  readDb: Kysely<Database> = db,
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
  return createSqlBackend({ db, readDb, scanDb: scan?.db, now, pageSize: config.reconciliation_page_size, close: scan?.close });
}
