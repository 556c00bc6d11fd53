/**
 * The recent delivery figures of `strategy: cheapest_delivering` (docs/routing.md "Cheapest member that delivers"):
 * per provider and country, the messages created in the window that the provider took, how many of them have a known
 * outcome, and how many were delivered on time by a receipt. One statement per refresh for all the providers, read
 * through messages_provider_created (provider, created_at): a range per provider, the size of the window's traffic.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface RecentDeliveryRow {
  provider: string;
  /** The recipient's country; '' when no country holds the number. */
  country: string;
  sent: number;
  judged: number;
  onTime: number;
}

export interface RecentDeliveryQuery {
  providers: readonly string[];
  /** Epoch ms: messages created at or after it. */
  since: number;
  /** A delivered receipt this long after the submission at most counts as on time. */
  deadlineMs: number;
  now: number;
}

/**
 * A message is judged once it has a final status (delivered, undelivered, failed, delivery_unknown), or when it is
 * still without one past the deadline (late). One younger than the deadline with no status yet is not judged: it may
 * still be on time.
 */
export async function listRecentDelivery(db: Kysely<Database>, q: RecentDeliveryQuery): Promise<RecentDeliveryRow[]> {
  if (q.providers.length === 0) return [];
  const lateBefore = q.now - q.deadlineMs;
  const rows = await db
    .selectFrom('messages')
    .select([
      'provider',
      sql<string>`coalesce(country, '')`.as('country'),
      sql<number | string>`count(*)`.as('sent'),
      sql<number | string>`sum(case when delivery_status is not null or submitted_at <= ${lateBefore} then 1 else 0 end)`.as('judged'),
      sql<
        number | string
      >`sum(case when delivery_status = 'delivered' and delivery_source = 'receipt' and completed_at - submitted_at <= ${q.deadlineMs} then 1 else 0 end)`.as(
        'on_time',
      ),
    ])
    .where('provider', 'in', [...q.providers])
    .where('created_at', '>=', q.since)
    .where('submitted_at', 'is not', null)
    .groupBy(['provider', sql`coalesce(country, '')`])
    .execute();
  return rows.map((r) => ({ provider: r.provider, country: r.country, sent: Number(r.sent), judged: Number(r.judged ?? 0), onTime: Number(r.on_time ?? 0) }));
}
