/**
 * The time buckets that lead the number's entries (recipient_messages, migration 2026-11-29-95-recipient-messages) and
 * the key of messages_provider_id_only (migrations 2026-11-29-70-time-keys and 2026-11-29-90-provider-id-only,
 * docs/ledger.md). A number or a provider's message id arrives in no order, so a tree keyed by it alone puts each new
 * message on a random page of a tree as large as the table; led by the message's UTC day (`created_at / 86400000`,
 * integer division on both databases) each insert lands in today's part of the tree, whose size is the day's sends,
 * not the ledger's, and retention takes a day's entries together. A query by number or provider id then names the
 * days it looks in: an `IN` list on the leading key, newest day first. At millions of sends a day, today's part of the
 * numbers' tree still outgrew the writer's cache: on SQLite a send's entry is led by the hour instead, and moved under
 * its day once the day is over (hourAt, src/ledger/number-messages.ts).
 */
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { HOUR_MS } from './delivery-stats.js';
import { named } from './engine/statement-names.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** One UTC day. */
export const BUCKET_MS = 86_400_000;

/**
 * The day, as the migrations wrote it in messages_provider_id_only (an index on an expression serves only that
 * expression) and recipient_messages;
 * `table` when the query names messages by an alias.
 */
export function dayOf(table?: string): RawBuilder<number> {
  return table === undefined ? sql<number>`created_at / 86400000` : sql<number>`${sql.ref(`${table}.created_at`)} / 86400000`;
}

/** The bucket a time falls in (created_at is never negative, so flooring is SQL's truncating division). */
export function bucketAt(ms: number): number {
  return Math.floor(ms / BUCKET_MS);
}

/**
 * The hour a time falls in: the bucket of the numbers' entries not moved yet (recipient_messages_recent,
 * src/ledger/number-messages.ts). A day's hours are day * 24 to day * 24 + 23.
 */
export function hourAt(ms: number): number {
  return Math.floor(ms / HOUR_MS);
}

/** The day an hour (hourAt) falls in. */
export function dayOfHour(hour: number): number {
  return Math.floor(hour / 24);
}

/** The buckets from `newest` down to `oldest`, newest first; none when the span is empty. */
export function bucketsNewestFirst(oldest: number, newest: number): number[] {
  const out: number[] = [];
  for (let b = newest; b >= oldest; b--) out.push(b);
  return out;
}

/** The oldest and newest created_at of all messages; undefined when there are none. Two seeks of messages_created_sms_id. */
export async function findCreatedSpan(db: Db): Promise<{ oldest: number; newest: number } | undefined> {
  // Two scalar subqueries, not min() and max() in one select: SQLite reads an index's end for a lone min or max only.
  // Named (src/ledger/engine/statement-names.ts): on a ledger partitioned by day it was planned over every day's table
  // at each call (39 ms with 97 of them); without values, its one plan serves every call.
  const { rows } = await named(
    sql<{ oldest: number | string | null; newest: number | string | null }>`select
    (select min(created_at) from messages) as oldest, (select max(created_at) from messages) as newest`,
  ).execute(db);
  const row = rows[0];
  if (row?.oldest === null || row?.oldest === undefined || row.newest === null) return undefined;
  return { oldest: Number(row.oldest), newest: Number(row.newest) };
}

export interface BucketBounds {
  /** created_at >= from */
  from?: number;
  /** created_at < to */
  to?: number;
  /** created_at <= atMost (a later page's cursor) */
  atMost?: number;
}

/**
 * The buckets a query over `span` within `bounds` must look in, newest first: the day of the oldest message (or of
 * `from`) up to the day of the newest (or of `to`, or of the cursor). Empty when nothing can match.
 */
export function searchBuckets(span: { oldest: number; newest: number }, bounds: BucketBounds): number[] {
  let oldest = bucketAt(span.oldest);
  let newest = bucketAt(span.newest);
  if (bounds.from !== undefined) oldest = Math.max(oldest, bucketAt(bounds.from));
  if (bounds.to !== undefined) newest = Math.min(newest, bucketAt(bounds.to - 1));
  if (bounds.atMost !== undefined) newest = Math.min(newest, bucketAt(bounds.atMost));
  return bucketsNewestFirst(oldest, newest);
}

/** The buckets a receipt looks in first: today's and yesterday's (receipts mostly come within minutes of the send). */
export function recentBuckets(now: number): number[] {
  const today = bucketAt(now);
  return [today, today - 1];
}
