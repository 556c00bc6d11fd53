/**
 * The backlog of the outboxes whose owed rows sit in a partial index led by (dead, created_at) with `attempts` in its
 * key: conversions_unposted, crm_events_unsent_state and held_sends_owed (migration 2026-11-30-10-owed-by-age). The
 * oldest owed row of a state is the first entry of that state's part, a seek however many are owed. A count reads
 * every owed entry, and on SQLite a statement stops the event loop for as long as it runs: at a backlog of a million
 * one statement took 100–120 ms, every scrape (bench/README.md "The outboxes' gauges at a backlog of a million"). So
 * there the part of one state is counted a slice of OWED_ROWS_PER_READ entries at a time, each slice a range of
 * creation times, with the event loop free between slices. Rows added or sent meanwhile are counted in the slice that
 * reads their time, never twice: the slices' ranges do not overlap. PostgreSQL counts in one statement: it runs in the
 * server, and slices made a count four times as long there (250 against 62 ms at half a million owed).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { dialectFlagsOf } from './engine/flags.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** One outbox's index of owed rows: its table and the column that is null until the receiver took the row. */
export interface OwedIndex {
  table: 'conversions' | 'crm_events' | 'held_sends';
  done: 'posted_at' | 'sent_at' | 'done_at';
}

export interface OwedCount {
  rows: number;
  /** Of those, the ones tried at least once. */
  retrying: number;
}

/** About 2 ms of SQLite's time for each of a slice's two statements (its end, its count). */
export const OWED_ROWS_PER_READ = 20_000;

/**
 * The end (exclusive) of the slice that begins at `from`, given `boundary`, the creation time of the entry a slice's
 * length past it (null: fewer entries are left, so the slice runs to the end). When more than a slice of rows share
 * the first millisecond, that millisecond is the slice.
 */
export function sliceEnd(from: number | null, boundary: number | null): number | null {
  if (boundary === null) return null;
  return boundary === from ? boundary + 1 : boundary;
}

/** The creation time of the oldest owed row whose `dead` is `dead`, or null when there is none. */
export async function oldestOwed(db: Db, index: OwedIndex, dead: 0 | 1): Promise<number | null> {
  const { rows } = await sql<{ created_at: number | string }>`select created_at from ${sql.table(index.table)}
    where ${sql.ref(index.done)} is null and dead = ${dead} order by dead, created_at limit 1`.execute(db);
  return rows[0] === undefined ? null : Number(rows[0].created_at);
}

/** `rowsPerRead`: a slice's length where statements stop the event loop (DialectFlags.stopsEventLoop). */
export async function countOwed(db: Db, index: OwedIndex, dead: 0 | 1, rowsPerRead = OWED_ROWS_PER_READ): Promise<OwedCount> {
  const sliced = dialectFlagsOf(db).stopsEventLoop;
  const table = sql.table(index.table);
  const owed = sql`${sql.ref(index.done)} is null and dead = ${dead}`;
  const after = (from: number | null) => (from === null ? sql`` : sql`and created_at >= ${from}`);
  const total: OwedCount = { rows: 0, retrying: 0 };
  let from: number | null = null;
  for (;;) {
    const boundary = sliced
      ? (
          await sql<{ created_at: number | string }>`select created_at from ${table} where ${owed} ${after(from)}
            order by dead, created_at limit 1 offset ${rowsPerRead}`.execute(db)
        ).rows[0]
      : undefined;
    const end = sliceEnd(from, boundary === undefined ? null : Number(boundary.created_at));
    const { rows } = await sql<{ n: number | string; retrying: number | string }>`select count(*) as n,
      count(case when attempts > 0 then 1 end) as retrying from ${table}
      where ${owed} ${after(from)} ${end === null ? sql`` : sql`and created_at < ${end}`}`.execute(db);
    total.rows += Number(rows[0]!.n);
    total.retrying += Number(rows[0]!.retrying);
    if (end === null) return total;
    from = end;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
