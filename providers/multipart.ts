/**
 * One CRM status for a message the provider reports part by part (Vonage SMS API: one receipt per part,
 * docs/providers.md §3.3). Pure, so the delivery module can call it with the per-part statuses it keeps in
 * `message_parts` (src/ledger/schema.ts).
 */
import type { MappedStatus } from './types.js';

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
