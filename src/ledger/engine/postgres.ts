/** The PostgreSQL ledger: a pool of connections. pg is loaded when a PostgreSQL ledger opens, so a SQLite process never loads it. */
import { createRequire } from 'node:module';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import type PgModule from 'pg';
import { LAYOUT_QUERY } from './flags.js';
import type { DialectFlags, Ledger, LedgerOptions, LedgerSettings } from './ledger.js';
import { StatementNames } from './statement-names.js';
import type { Database } from '../schema.js';

export function openPostgresLedger(config: LedgerSettings, options: LedgerOptions, flags: DialectFlags): Ledger {
  const pg = createRequire(import.meta.url)('pg') as typeof PgModule;
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.pool_size,
    // A connection's named statements keep the generic plans made there, and only an ANALYZE makes PostgreSQL plan them
    // again: on a server without autovacuum, a plan made while a table was empty would stay as long as the connection.
    // A connection retired after ten minutes (when given back, never in the middle of a transaction) takes its plans
    // with it, and the next plans see the table's size then.
    maxLifetimeSeconds: config.prepared_statements === false ? 0 : 600,
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
  const lostNames = () =>
    options.logger?.warn(
      'PostgreSQL does not know a statement this connection prepared (a pooler in transaction mode?): the ledger sends its statements unnamed from now on; set database.prepared_statements: false',
    );
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: readingLayout(config.prepared_statements === false ? pool : namingPool(pool, lostNames), flags) }),
  });
  // PostgreSQL reads take a connection of their own from the pool anyway.
  return { db, readDb: db, flags, spaceCheckpoints: () => () => {}, close: () => db.destroy() };
}

/**
 * The pool, reading the ledger's layout on its first connection, before any statement of the ledger's runs there:
 * whether messages is a partitioned table (src/ledger/engine/partitions.ts). Every command connects before it sends (its
 * schema check reads the migrations first); a new ledger is laid out in the transaction of its first migrations, after
 * which migrateToLatest (db.ts) reads the layout again; and `partition` refuses while another connection is open. So a
 * process never sees the layout change under it.
 */
function readingLayout(pool: PostgresPool, flags: DialectFlags): PostgresPool {
  let read: Promise<void> | undefined;
  const readOn = async (client: PostgresPoolClient) => {
    const { rows } = await client.query<{ relkind: string }>(LAYOUT_QUERY, []);
    flags.partitionsByDay = rows[0]?.relkind === 'p';
  };
  return {
    options: pool.options,
    connect: async () => {
      const client = await pool.connect();
      try {
        await (read ??= readOn(client).catch((error: unknown) => {
          read = undefined;
          throw error;
        }));
      } catch (error) {
        client.release();
        throw error;
      }
      return client;
    },
    end: () => pool.end(),
  };
}

/** SQLSTATE invalid_sql_statement_name: "prepared statement … does not exist". */
const UNKNOWN_STATEMENT = '26000';

/**
 * The pool as Kysely sees it, sending the statements marked `named` under their names (statement-names.ts). pg
 * prepares a name on a connection the first time it is sent there, and only binds and runs it after that. Where the
 * server does not know a name pg prepared (26000: a pooler in transaction mode put the statement on another server
 * connection), that statement fails and every later one goes unnamed, so the relay goes on instead of failing round
 * after round (docs/deployment.md).
 */
function namingPool(pool: PgModule.Pool, lostNames: () => void): PostgresPool {
  const names = new StatementNames();
  // One face per connection, so that Kysely, which keys its own state by the client it is given, sees the same one.
  const faces = new WeakMap<PgModule.PoolClient, PostgresPoolClient>();
  const faceOf = (client: PgModule.PoolClient) => {
    let face = faces.get(client);
    if (face === undefined) {
      face = {
        query: async (text: string, values: unknown[]) => {
          const name = names.nameOf(text);
          try {
            return await client.query({ name, text, values });
          } catch (error) {
            if (name !== undefined && (error as { code?: string }).code === UNKNOWN_STATEMENT && names.stop()) lostNames();
            throw error;
          }
        },
        release: (destroy?: boolean) => client.release(destroy),
      } as unknown as PostgresPoolClient;
      faces.set(client, face);
    }
    return face;
  };
  return { options: pool.options, connect: async () => faceOf(await pool.connect()), end: () => pool.end() };
}
