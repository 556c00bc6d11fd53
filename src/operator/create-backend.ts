/**
 * Builds the backend operator.backend names. The http backend connects on its first call; the sql backend opens its
 * read-only scan connection (src/ledger/engine/db.ts, openScanConnection) when given the database config (the gateway does;
 * createApp's fallback does not).
 */
import type { Kysely } from 'kysely';
import type { Config } from '../config/schema.js';
import type { Shutdown } from '../kit/shutdown.js';
import { openScanConnection } from '../ledger/engine/db.js';
import type { Ledger } from '../ledger/engine/ledger.js';
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
  /** The ledger's read connection (src/ledger/engine/db.ts), for the sql backend's reads. */
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

/** `serve`'s backend, on the ledger's connections; it closes with the providers, early in the shutdown. */
export function startOperatorBackend(config: Readonly<Config>, ledger: Ledger, now: () => number, shutdown: Shutdown): OperatorBackend {
  const backend = createOperatorBackend(config.operator, ledger.db, now, config.database, ledger.readDb);
  shutdown.add('providers', 'closing the operator backend', () => Promise.allSettled([backend.close()]));
  return backend;
}
