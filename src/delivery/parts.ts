/**
 * Multipart roll-up for providers that send one receipt per SMS part (Vonage SMS API, docs/providers.md §3.3, §4.2):
 * the CRM gets one status for the whole message (docs/design.md §4), computed by aggregatePartStatuses from the latest
 * receipt of each part. Runs inside the receipt transaction, after the event's own receipt row was stored.
 */
import type { Transaction } from 'kysely';
import type { MappedStatus, ReceiptEvent } from '../../providers/types.js';
import { findPartIds, findPartReceipts, findSegmentCount } from '../ledger/receipt-targets.js';
import type { Database } from '../ledger/schema.js';

/**
 * The status the message as a whole moves to on this event: the event's own unless it is a per-part event of a
 * message with several parts. Only per-part events cost queries, so other providers' receipts stay one lookup.
 * A parked per-part receipt keeps its flag in `receipts.per_part` and is rolled up the same way when matched.
 */
export async function rollUpPartStatus(trx: Transaction<Database>, smsId: string, event: ReceiptEvent): Promise<MappedStatus> {
  if (!event.perPart) return event.status;
  const parts = await findPartIds(trx, smsId);
  // Before the send's answer is recorded (an early receipt) the part ids are unknown: our own segment count stands in.
  const partCount = parts.length >= 2 ? parts.length : await findSegmentCount(trx, smsId);
  if (partCount < 2) return event.status;

  const known = parts.length >= 2 ? new Set(parts) : undefined;
  const receipts = await findPartReceipts(trx, smsId);
  // Per part, the first final status wins and intermediates never overwrite it (status only moves forward).
  const byPart = new Map<string, MappedStatus>();
  for (const r of receipts) {
    const id = r.provider_message_id;
    if (known && !known.has(id)) continue;
    const seen = byPart.get(id);
    if (seen === undefined || seen === 'intermediate') byPart.set(id, r.mapped_status as MappedStatus);
  }
  return aggregatePartStatuses([...byPart.values()], partCount);
}

/**
 * Roll-up rule of docs/providers.md §4.2, in precedence order:
 *   1. `failed` as soon as any part failed, and `undelivered` as soon as any part is undelivered: an early
 *      negative can be reported before the other parts finish, because no later part can make the message whole.
 *   2. Otherwise wait (`intermediate`) while some part has no final status yet (missing, or only intermediate
 *      receipts so far). A `delivery_unknown` part is not reported early: a later part could still fail, and
 *      status only moves forward once reported (docs/design.md §4).
 *   3. With every part final: `delivery_unknown` if any part is unknown, `delivered` only when all are delivered.
 *
 * `statuses` holds the latest status of each part that has one; `partCount` is how many parts the submit
 * response listed (the message counts as having at least as many parts as it has statuses).
 */
export function aggregatePartStatuses(statuses: readonly MappedStatus[], partCount: number): MappedStatus {
  if (statuses.includes('failed')) return 'failed';
  if (statuses.includes('undelivered')) return 'undelivered';
  const parts = Math.max(partCount, statuses.length, 1);
  const finals = statuses.filter((s) => s !== 'intermediate');
  if (finals.length < parts) return 'intermediate';
  if (finals.includes('delivery_unknown')) return 'delivery_unknown';
  return 'delivered';
}
