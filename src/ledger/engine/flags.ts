/**
 * Each dialect's flags (DialectFlags, ledger.ts) and the lookup of a ledger's own: apart from db.ts, which opens a
 * ledger and migrates it, so that the day partitions' DDL (partitions.ts), which db.ts runs on a new ledger, can read
 * and set them without the two files naming each other.
 */
import { type Kysely, PostgresAdapter } from 'kysely';
import type { DialectFlags } from './ledger.js';
import type { Database } from '../schema.js';

// Frozen: a ledger's own flags are a copy (openLedger), and only those change.
export const SQLITE_FLAGS: DialectFlags = Object.freeze({
  kind: 'sqlite',
  skipLocked: false,
  writesNumberEntries: true,
  stopsEventLoop: true,
  namesIndexes: true,
  concurrentWriters: false,
  partitionsByDay: false,
});
export const POSTGRES_FLAGS: DialectFlags = Object.freeze({
  kind: 'postgres',
  skipLocked: true,
  writesNumberEntries: false,
  stopsEventLoop: false,
  namesIndexes: false,
  concurrentWriters: true,
  // Read off the database when the ledger first connects (postgres.ts), and again after migrating: a layout the
  // operator chooses, and the one a new ledger is made with (db.ts).
  partitionsByDay: false,
});

/** PostgreSQL: whether messages is a partitioned table (relkind 'p'), read into `partitionsByDay`. */
export const LAYOUT_QUERY = "select relkind from pg_class where oid = to_regclass('messages')";

/**
 * Each open ledger's flags, by the adapter its connection and every transaction of it share: a PostgreSQL ledger's
 * layout is its database's, not its dialect's.
 */
const flagsByAdapter = new WeakMap<object, DialectFlags>();

export function registerFlags(db: Pick<Kysely<Database>, 'getExecutor'>, flags: DialectFlags): void {
  flagsByAdapter.set(db.getExecutor().adapter, flags);
}

/** The flags of the ledger a connection (or transaction) belongs to, for query functions given only the database. */
export function dialectFlagsOf(db: Pick<Kysely<Database>, 'getExecutor'>): DialectFlags {
  const adapter = db.getExecutor().adapter;
  return flagsByAdapter.get(adapter) ?? (adapter instanceof PostgresAdapter ? POSTGRES_FLAGS : SQLITE_FLAGS);
}
