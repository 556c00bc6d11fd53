/**
 * The sweep (docs/design.md §4), run by `serve` every delivery.sweep_interval and by `flush`:
 * - parked receipts older than `delivery.parked_receipt_ttl` are set aside (receipts for messages this gateway never
 *   sent, e.g. another system on the same provider account); the rest are matched again, all of them;
 * - sends left `dispatching` past sms.dispatch_lease become `uncertain` and, in `serve`, their providers are asked
 *   whether they have them; messages silent since `delivery.status_query_after` are asked for their status
 *   (src/delivery/lookups.ts);
 * - messages submitted longer than `delivery.unknown_after` ago without a terminal receipt become delivery_unknown
 *   and are reported. The UPDATE re-checks its condition, so two sweeps (serve and flush, or two instances)
 *   cannot both report one message.
 */
import type { Kysely } from 'kysely';
import { insertConversions } from '../ledger/conversions.js';
import { deleteMinuteStatsBefore, incrementDeliveryStats, MINUTE_STATS_RETENTION_MS } from '../ledger/delivery-stats.js';
import { expireDispatchLeases, markUnreportedAsUnknown } from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import { deleteSetAsideReceipts, expireParkedReceipts } from '../ledger/receipts.js';
import { matchAllParkedReceipts, type ReceiptObservers } from './apply-receipts.js';
import { querySilentMessages, resolveLostSends, type LookupOptions, type LookupSummary } from './lookups.js';
import { inTransaction } from '../ledger/engine/db.js';

export async function markTimedOutAsUnknown(db: Kysely<Database>, now: number, unknownAfterMs: number, observers: ReceiptObservers = {}): Promise<number> {
  const cutoff = now - unknownAfterMs;
  let total = 0;
  for (;;) {
    const marked = await inTransaction(db, async (trx) => {
      const result = { rows: await markUnreportedAsUnknown(trx, cutoff, now) };
      await insertConversions(
        trx,
        result.rows.map((r) => ({ smsId: r.sms_id, status: 'delivery_unknown' as const })),
        now,
      );
      await incrementDeliveryStats(
        trx,
        result.rows.map((r) => ({ at: now, provider: r.provider, outcome: 'delivery_unknown' as const })),
      );
      for (const r of result.rows) {
        observers.metrics?.deliveryTimedOut(r.provider);
        observers.logger?.debug(
          { sms_id: r.sms_id, activity_id: r.activity_key, provider: r.provider, reported: 'delivery_unknown' },
          'no terminal receipt in time',
        );
      }
      return result.rows.length;
    });
    total += marked;
    if (marked < 1000) return total;
  }
}

export interface SweepResult {
  unknown: number;
  rematched: number;
  expired: number;
  /** Set-aside receipts deleted after delivery.parked_receipt_retention. */
  deleted: number;
  /** Sends left `dispatching` past sms.dispatch_lease, made `uncertain` (or `submitted` when a receipt came). */
  leasesExpired: number;
  /** What providers said when asked (src/delivery/lookups.ts); zero where no providers were given (`flush`). */
  lookups: LookupSummary;
}

export async function runSweep(
  db: Kysely<Database>,
  now: number,
  delivery: { unknown_after: number; parked_receipt_ttl: number; parked_receipt_retention: number; status_query_after: number },
  observers: ReceiptObservers = {},
  /** sms.dispatch_lease: sends `dispatching` longer than this lost their process (or their provider's answer). */
  dispatchLeaseMs?: number,
  /** The providers to ask about lost sends and silent messages (`serve` only: `flush` builds no providers). */
  lookups?: Omit<LookupOptions, 'dispatchLeaseMs' | 'statusQueryAfterMs'>,
): Promise<SweepResult> {
  let leasesExpired = 0;
  let confirmed = 0;
  if (dispatchLeaseMs !== undefined) {
    for (let n = -1; n !== 0; leasesExpired += n) {
      const rows = await inTransaction(db, async (trx) => {
        const expired = await expireDispatchLeases(trx, now - dispatchLeaseMs, now);
        // A receipt proved these were taken: counted as the record that never came would have counted them.
        await incrementDeliveryStats(
          trx,
          expired.flatMap((r) => (r.state === 'submitted' ? [{ at: now, provider: r.provider, outcome: 'submitted' as const }] : [])),
        );
        return expired;
      });
      n = rows.length;
      confirmed += rows.filter((r) => r.state === 'submitted').length;
    }
    if (leasesExpired > 0) {
      observers.logger?.warn(
        { count: leasesExpired, submitted: confirmed, dispatch_lease_ms: dispatchLeaseMs },
        'sends left dispatching past their lease are now uncertain, or submitted where a receipt came',
      );
    }
  }
  let asked: LookupSummary = { found: 0, absent: 0, unknown: 0, statusQueried: 0, statusFinal: 0 };
  if (lookups && dispatchLeaseMs !== undefined) {
    const options = { ...lookups, dispatchLeaseMs, statusQueryAfterMs: delivery.status_query_after };
    asked = { ...(await resolveLostSends(db, now, options, observers)), ...(await querySilentMessages(db, now, options, observers)) };
  }
  const expiredByProvider = await expireParkedReceipts(db, now - delivery.parked_receipt_ttl);
  let expired = 0;
  for (const [provider, count] of expiredByProvider) {
    expired += count;
    observers.metrics?.receiptsExpired(provider, count);
  }
  if (expired > 0)
    observers.logger?.info({ expired, parked_receipt_ttl_ms: delivery.parked_receipt_ttl }, 'parked receipts matched no message in time and were set aside');
  let deleted = 0;
  for (let n = -1; n !== 0; deleted += n) {
    n = await inTransaction(db, (trx) => deleteSetAsideReceipts(trx, now - delivery.parked_receipt_ttl - delivery.parked_receipt_retention));
  }
  if (deleted > 0)
    observers.logger?.info(
      { deleted, parked_receipt_retention_ms: delivery.parked_receipt_retention },
      'receipts set aside longer than the retention were deleted',
    );
  const rematched = await matchAllParkedReceipts(db, now, observers);
  const unknown = await markTimedOutAsUnknown(db, now, delivery.unknown_after, observers);
  await deleteMinuteStatsBefore(db, now - MINUTE_STATS_RETENTION_MS);
  return { unknown, rematched, expired, deleted, leasesExpired, lookups: asked };
}
