/** Builds the backend operator.backend names. No I/O: the http backend connects on its first call. */
import type { Kysely } from 'kysely';
import type { Config } from '../config/schema.js';
import type { Database } from '../ledger/schema.js';
import type { OperatorBackend } from './backend.js';
import { createHttpBackend } from './http-backend.js';
import { createSqlBackend } from './sql-backend.js';
import { createUpstream } from './upstream.js';

export function createOperatorBackend(config: Config['operator'], db: Kysely<Database>, now: () => number): OperatorBackend {
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
  return createSqlBackend({ db, now, pageSize: config.reconciliation_page_size });
}
