/**
 * Builds the backend operator.backend names. The http backend connects on its first call; the sql backend opens its
 * read-only scan connection (src/ledger/engine/db.ts, openScanConnection) from the database config.
 */
import type { Kysely } from 'kysely';
import type { Config } from '../../config/schema.js';
import type { Shutdown } from '../../kit/shutdown.js';
import { openScanConnection } from '../../ledger/engine/db.js';
import type { Ledger } from '../../ledger/engine/ledger.js';
import type { Database } from '../../ledger/schema.js';
import type { OperatorBackend } from '../backend.js';
import { createHttpBackend } from './http-backend.js';
import { createSqlBackend } from './sql-backend.js';
import { createUpstream } from './upstream.js';

export interface OperatorBackendOptions {
  db: Kysely<Database>;
  /** The ledger's read connection (src/ledger/engine/db.ts), for the sql backend's reads. */
  readDb: Kysely<Database>;
  now: () => number;
  /** Where the sql backend opens its scan connection. */
  database: Config['database'];
}

function createOperatorBackend(config: Config['operator'], { db, readDb, now, database }: OperatorBackendOptions): OperatorBackend {
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
  const scan = openScanConnection(database);
  return createSqlBackend({ db, readDb, scanDb: scan?.db, now, pageSize: config.reconciliation_page_size, close: scan?.close });
}

/** `serve`'s backend, on the ledger's connections; it closes with the providers, early in the shutdown. */
export function startOperatorBackend(config: Readonly<Config>, deps: { ledger: Ledger; now: () => number }, shutdown: Shutdown): OperatorBackend {
  const { ledger, now } = deps;
  const backend = createOperatorBackend(config.operator, { db: ledger.db, readDb: ledger.readDb, now, database: config.database });
  shutdown.add('providers', 'closing the operator backend', () => Promise.allSettled([backend.close()]));
  return backend;
}
