/**
 * The per-message receipt cap (delivery.max_receipts_per_message): a message gets a few receipts (accepted, then
 * delivered; one per part when it was split), so anything far past that is someone replaying a leaked receipt URL
 * with new ids, and each would be a row kept for the whole retention. Receipts over the cap are dropped and counted.
 */

/**
 * Which receipts of a batch go over their message's cap, in arrival order: `stored` has the count each message
 * already has; `limit` is the cap times the message's segments (providers that report per part send a receipt or
 * more for each), or the cap alone for a receipt whose message is not known yet. A
 * receipt with no sms_id (found later by its provider id, or never) is not capped here: parked receipts are set aside
 * and deleted by the sweep.
 */
export function receiptsOverCap(receipts: ReadonlyArray<{ smsId: string | null; limit: number }>, stored: ReadonlyMap<string, number>): Set<number> {
  const taken = new Map(stored);
  const over = new Set<number>();
  receipts.forEach(({ smsId, limit }, i) => {
    if (smsId === null) return;
    const n = taken.get(smsId) ?? 0;
    if (n >= limit) over.add(i);
    else taken.set(smsId, n + 1);
  });
  return over;
}
