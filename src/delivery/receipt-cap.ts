/**
 * The per-message receipt cap (delivery.max_receipts_per_message): a message gets a few receipts (accepted, then
 * delivered; one per part when it was split), so anything far past that is someone replaying a leaked receipt URL
 * with new ids, and each would be a row kept for the whole retention. Receipts over the cap are dropped and counted.
 */

/**
 * Which receipts of a batch go over the cap, in arrival order: `stored` has the count each message already has. A
 * receipt with no sms_id (found later by its provider id, or never) is not capped here: parked receipts are set aside
 * and deleted by the sweep.
 */
export function receiptsOverCap(receipts: ReadonlyArray<{ smsId: string | null }>, stored: ReadonlyMap<string, number>, max: number): Set<number> {
  const taken = new Map(stored);
  const over = new Set<number>();
  receipts.forEach(({ smsId }, i) => {
    if (smsId === null) return;
    const n = taken.get(smsId) ?? 0;
    if (n >= max) over.add(i);
    else taken.set(smsId, n + 1);
  });
  return over;
}
