/**
 * The statements every outbox table shares (conversions, crm_events, operator_credits): mark rows sent, back a row
 * off or dead-letter it, and make dead rows due again. Each table is described once (its column names and how it
 * writes "sent", "due" and "dead"); its claim, lists and counts stay in its own file (conversions.ts, events.ts,
 * credit-delivery.ts), because that is where the kinds differ (per-player heads, post groups, claim order).
 * Marks only touch rows still held by the round's token: a claim that expired and was taken over is the new
 * holder's to mark.
 */
import { sql, type Kysely, type RawBuilder, type Transaction, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import { IDS_PER_STATEMENT, idChunks } from './chunks.js';
import type { DialectFlags } from './engine/ledger.js';
import { createQueryTemplate } from './query-template.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

export interface OutboxTable<T extends keyof Database> {
  table: T;
  columns: { attempts: string; nextAttemptAt: string; claimedUntil: string; claimToken: string; error: string };
  /** What "sent" writes besides the cleared error and claim (a time, a state, an HTTP status). */
  sent: (now: number, status: number | null) => Record<string, unknown>;
  /** The row's state column(s) for due (false) or dead (true). */
  state: (dead: boolean) => Record<string, unknown>;
  /** Rows that are dead and not sent, as SQL a partial index can see (a literal, not a parameter). */
  deadWhere: string;
  /** What "failed" writes besides the back-off (the receiver's HTTP status). */
  failed?: (status: number | null) => Record<string, unknown>;
  /** The claim token is cleared by a mark (else it stays, and the lease alone frees the row). */
  clearsToken: boolean;
  /** Stored errors are cut to this many characters. */
  errorLimit?: number;
}

/**
 * After a table's name in a claim: the index of its due rows, where the dialect lets a statement name one
 * (DialectFlags.namesIndexes). A claim reads the due rows in their index's order up to its limit, whatever the
 * backlog; a plan from another index reads every owed row.
 */
export function indexedBy(flags: Pick<DialectFlags, 'namesIndexes'>, index: string): RawBuilder<unknown> {
  return flags.namesIndexes ? sql`indexed by ${sql.id(index)}` : sql``;
}

/** One row a round failed to send, with its plan (src/outbox/decisions.ts). */
export interface FailedOutboxRow {
  id: number;
  httpStatus: number | null;
  error: string;
  dead: boolean;
  nextAttemptAt: number;
}

export function outboxStatements<T extends 'conversions' | 'crm_events' | 'operator_credits' | 'held_sends'>(t: OutboxTable<T>) {
  type Replay = UpdateQueryBuilder<Database, T, T, UpdateResult>;
  const c = t.columns;
  const released = { [c.claimedUntil]: 0, ...(t.clearsToken ? { [c.claimToken]: null } : {}) };
  // Compiled once per chunk size: conversions mark every post of the SMS hot path (src/ledger/query-template.ts).
  const markSentTemplate = createQueryTemplate(
    (db: Kysely<any>, { ids, token, now, status }: { ids: number[]; token: string; now: number; status: number | null }) =>
      db
        .updateTable(t.table as string)
        .set((eb: any) => ({
          ...t.sent(now, status),
          // Every kind counts the attempt that was taken, so `attempts` is the requests made, in every outbox.
          [c.attempts]: eb(c.attempts, '+', 1),
          [c.error]: null,
          ...released,
        }))
        .where('id', 'in', ids)
        .where(c.claimToken, '=', token),
  );

  return {
    async markSent(db: Db, ids: number[], token: string, now: number, status: number | null): Promise<void> {
      for (const chunk of idChunks(ids, IDS_PER_STATEMENT)) await markSentTemplate(db, { ids: chunk, token, now, status });
    },

    /** Backs each row off until its nextAttemptAt, or dead-letters it: one statement per row, each its own values. */
    async markFailed(db: Db, rows: FailedOutboxRow[], token: string): Promise<void> {
      const any = db as Kysely<any>;
      for (const r of rows) {
        await any
          .updateTable(t.table as string)
          .set((eb: any) => ({
            ...t.state(r.dead),
            [c.attempts]: eb(c.attempts, '+', 1),
            [c.nextAttemptAt]: r.nextAttemptAt,
            [c.error]: t.errorLimit === undefined ? r.error : r.error.slice(0, t.errorLimit),
            ...t.failed?.(r.httpStatus),
            ...released,
          }))
          .where('id', '=', r.id)
          .where(c.claimToken, '=', token)
          .execute();
      }
    },

    /**
     * Dead rows due again now with a fresh attempt count; `narrow` adds the kind's filter (ids, a provider, a user).
     * Answers how many.
     */
    async replayDead(db: Db, now: number, narrow: (query: Replay) => Replay = (q) => q): Promise<number> {
      const query = (db as Kysely<any>)
        .updateTable(t.table as string)
        .set({ ...t.state(false), [c.attempts]: 0, [c.nextAttemptAt]: now, [c.claimedUntil]: 0 })
        .where(sql<boolean>`${sql.raw(t.deadWhere)}`) as unknown as Replay;
      const result = await narrow(query).executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}
