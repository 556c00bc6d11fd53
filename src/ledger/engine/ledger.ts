/**
 * The ledger's types, apart from the code that opens one (db.ts) and each dialect's module (sqlite.ts, postgres.ts):
 * db.ts picks a dialect's module and each module answers a Ledger, so with the types in db.ts the three files named
 * each other in a circle.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Database } from '../schema.js';

/** The `database` settings a ledger opens with: a setting left out (tests, the bench's fill) takes its default. */
export type LedgerSettings = Omit<Config['database'], 'prepared_statements' | 'layout'> & Partial<Pick<Config['database'], 'prepared_statements' | 'layout'>>;

/** Database differences live here as flags, not as `if (sqlite)` scattered through the repositories. */
export interface DialectFlags {
  kind: 'sqlite' | 'postgres';
  /** Row locks that let several instances claim different outbox rows (`FOR UPDATE SKIP LOCKED`). */
  skipLocked: boolean;
  /**
   * recipient_messages is a table the ledger writes (through recipient_messages_recent, by the hour) and retention
   * empties a day at a time (SQLite), not a view over messages and its index messages_recipient_time (PostgreSQL):
   * migrations 2026-11-29-95-recipient-messages and 2026-12-01-10-recent-number-entries.
   */
  writesNumberEntries: boolean;
  /**
   * Each statement runs on the process's own thread and the event loop waits for it (better-sqlite3 is synchronous),
   * so a read that grows with the data is cut into slices with the loop free between them (owed-backlog.ts). Elsewhere
   * it runs in the server, and slices would only add statements.
   */
  stopsEventLoop: boolean;
  /**
   * A statement may name the index it reads (SQLite's INDEXED BY; indexedBy, src/ledger/outbox.ts). The ledger keeps
   * no planner statistics on SQLite (nothing runs ANALYZE), and without them SQLite took an index of the owed rows led
   * by `dead` for an outbox's claim, read every owed row and sorted them, each round. PostgreSQL plans from the
   * statistics autovacuum keeps.
   */
  namesIndexes: boolean;
  /**
   * Several write transactions run at once, each reading what was committed when its statement began (PostgreSQL's
   * read committed). A decision that reads other rows and writes its own, taken in two such transactions, can miss
   * what the other writes: those decisions take a lock of their own (the event heads, src/ledger/events.ts). SQLite
   * writes one transaction at a time.
   */
  concurrentWriters: boolean;
  /**
   * PostgreSQL, a ledger made new on this layout (`database.layout`, the default) or converted by `crm-sms-gateway
   * partition`: messages and receipts are partitioned by the UTC day of their sms_id, with a default partition for the
   * sms_ids before (src/ledger/engine/partitions.ts); an activity's one message is kept by message_keys, and retention
   * drops whole days. Read off the database when the ledger first connects (postgres.ts) and after migrating (db.ts).
   * False on SQLite, which has one table each.
   */
  partitionsByDay: boolean;
}

export interface Ledger {
  db: Kysely<Database>;
  /**
   * Where reads that need no write of their own go (readiness, operator reads, console and admin views). On a SQLite
   * file: a second, read-only connection (openReadConnection, sqlite.ts). Elsewhere: `db` itself.
   */
  readDb: Kysely<Database>;
  flags: DialectFlags;
  /**
   * SQLite: until the returned function is called, the WAL is copied into the database file only once it has grown
   * to `walBytes` (checkpointer.ts), so a bulk change such as retention writes each page it touches once per such
   * checkpoint instead of once per commit. PostgreSQL and an in-memory database: nothing to space out.
   */
  spaceCheckpoints(walBytes: number): () => void;
  close(): Promise<void>;
}

export interface LedgerOptions {
  /** Told when PostgreSQL drops an idle pooled connection (a restart, a failover); the pool reconnects on next use. */
  logger?: Pick<Logger, 'warn'>;
  /** SQLite: checkpoint the WAL on a background thread instead of inside commits (for `serve`; checkpointer.ts). */
  backgroundCheckpoints?: { logger: Pick<Logger, 'warn'> };
}
