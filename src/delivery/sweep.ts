/**
 * The unknown-timeout sweep (DESIGN §4): messages submitted longer than `delivery.unknown_after` ago without a
 * terminal receipt become delivery_unknown and are reported. The UPDATE re-checks its condition, so two sweeps
 * (serve and flush, or two instances) cannot both report one message.
 */
import { sql, type Kysely } from 'kysely';
import { insertConversions } from '../ledger/conversions.js';
import { deleteMinuteStatsBefore, incrementDeliveryStats, MINUTE_STATS_RETENTION_MS } from '../ledger/delivery-stats.js';
import type { Database } from '../ledger/schema.js';
import { matchParkedReceipts, type IngestObservers } from './ingest.js';

export async function markTimedOutAsUnknown(db: Kysely<Database>, now: number, unknownAfterMs: number, observers: IngestObservers = {}): Promise<number> {
  const cutoff = now - unknownAfterMs;
  let total = 0;
  for (;;) {
    const marked = await db.transaction().execute(async (trx) => {
      const result = await sql<{ sms_id: string; activity_key: string; provider: string }>`
        update messages
        set delivery_status = 'delivery_unknown', delivery_source = 'timeout', completed_at = ${now}, updated_at = ${now}
        where sms_id in (select sms_id from messages where delivery_status is null and submitted_at <= ${cutoff} limit 1000)
          and delivery_status is null
        returning sms_id, activity_key, provider`.execute(trx);
      await insertConversions(trx, result.rows.map((r) => ({ smsId: r.sms_id, status: 'delivery_unknown' as const })), now);
      await incrementDeliveryStats(trx, result.rows.map((r) => ({ at: now, provider: r.provider, outcome: 'delivery_unknown' as const })));
      for (const r of result.rows) {
        observers.metrics?.deliveryTimedOut(r.provider);
        observers.logger?.debug({ sms_id: r.sms_id, activity_id: r.activity_key, provider: r.provider, reported: 'delivery_unknown' }, 'no terminal receipt in time');
      }
      return result.rows.length;
    });
    total += marked;
    if (marked < 1000) return total;
  }
}

export async function runSweep(
  db: Kysely<Database>,
  now: number,
  unknownAfterMs: number,
  observers: IngestObservers = {},
): Promise<{ unknown: number; rematched: number }> {
  const rematched = await db.transaction().execute((trx) => matchParkedReceipts(trx, now, undefined, observers));
  const unknown = await markTimedOutAsUnknown(db, now, unknownAfterMs, observers);
  await deleteMinuteStatsBefore(db, now - MINUTE_STATS_RETENTION_MS);
  return { unknown, rematched };
}
