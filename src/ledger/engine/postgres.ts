/** The PostgreSQL ledger: a pool of connections. pg is loaded when a PostgreSQL ledger opens, so a SQLite process never loads it. */
import { createRequire } from 'node:module';
import { Kysely, PostgresDialect } from 'kysely';
import type PgModule from 'pg';
import type { Config } from '../../config/schema.js';
import type { DialectFlags, Ledger, LedgerOptions } from './ledger.js';
import type { Database } from '../schema.js';

export function openPostgresLedger(config: Config['database'], options: LedgerOptions, flags: DialectFlags): Ledger {
  const pg = createRequire(import.meta.url)('pg') as typeof PgModule;
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.pool_size,
    // JIT off, unless the URL's own `options` say otherwise. The ledger's statements read a few rows by an index, but
    // PostgreSQL's statistics describe a column, not the rows a partial index holds: with a million events owed it
    // costed the event claim, which reads at most its limit, past jit_above_cost and compiled it every round, 20 to
    // 40 ms each time (bench/README.md "The event claim at a backlog of a million").
    ...(/[?&]options=/.test(config.url) ? {} : { options: '-c jit=off' }),
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
  return { db, readDb: db, flags, spaceCheckpoints: () => () => {}, close: () => db.destroy() };
}
