/**
 * What to do with a send request whose activity.id is already in the ledger (docs/design.md §4, idempotency):
 * a sent id answers its sms_id and sends nothing; a permanently failed id answers the same failure; only an id
 * whose last attempt was transient is sent again, and one whose last attempt may have reached the provider only once
 * no receipt has shown up for a while. One whose sender died mid-call is first resolved as the sweep resolves it
 * (src/delivery/lookups.ts): its provider is asked whether it has it, and the answer decides (docs/crash-windows.md).
 */
import type { MessageRow } from '../ledger/messages.js';

export interface RepeatTimings {
  /** A send `dispatching` longer than this lost its process. */
  dispatchLeaseMs: number;
  /** An `uncertain` send is sent again only this long after it failed (sms.ambiguous_retry_after). */
  ambiguousRetryAfterMs: number;
}

export type RepeatDecision =
  | { action: 'answer-sent'; smsId: string }
  | { action: 'answer-failed'; smsId: string; error: string }
  | { action: 'resend'; smsId: string }
  /**
   * Its sender was lost mid-call (past sms.dispatch_lease, or already made `uncertain` by the sweep and not yet looked
   * up): the provider may have it. Expire its lease and ask its provider before anything sends it again.
   */
  | { action: 'resolve-lost-send'; smsId: string }
  /** Not now: `in-flight` another request is sending it; `awaiting-receipt` the last send may have reached the provider. */
  | { action: 'busy'; smsId: string; reason: 'in-flight' | 'awaiting-receipt' };

export function decideRepeat(
  row: Pick<MessageRow, 'sms_id' | 'state' | 'error' | 'dispatched_at' | 'updated_at'> & Partial<Pick<MessageRow, 'lookup_result'>>,
  now: number,
  timings: RepeatTimings,
): RepeatDecision {
  switch (row.state) {
    case 'submitted':
    // Accepted inside its quiet hours and answered 200 then: the held sends outbox sends it once its window opens,
    // so a repeat answers the same sms_id and holds nothing again.
    case 'held':
      return { action: 'answer-sent', smsId: row.sms_id };
    case 'rejected':
      return { action: 'answer-failed', smsId: row.sms_id, error: row.error ?? 'rejected by the provider' };
    case 'retryable':
      return { action: 'resend', smsId: row.sms_id };
    case 'uncertain':
      // Its sender was lost and its provider is still to be asked whether it has it (src/delivery/lookups.ts): the
      // answer decides, so that a provider that can tell never gets it twice. The retry asks rather than waiting for
      // the next sweep.
      if (row.lookup_result === 'pending') return { action: 'resolve-lost-send', smsId: row.sms_id };
      // A receipt arriving meanwhile turns it `submitted`; without one, sending again beats losing the message.
      return now - row.updated_at >= timings.ambiguousRetryAfterMs
        ? { action: 'resend', smsId: row.sms_id }
        : { action: 'busy', smsId: row.sms_id, reason: 'awaiting-receipt' };
    case 'dispatching':
      // Another request (here or on another instance) is sending it right now, unless it has been at it so long
      // that its process must have died: then its call may have reached the provider, and sending at once is what
      // sent messages twice after a kill (docs/crash-windows.md).
      return now - row.dispatched_at > timings.dispatchLeaseMs
        ? { action: 'resolve-lost-send', smsId: row.sms_id }
        : { action: 'busy', smsId: row.sms_id, reason: 'in-flight' };
  }
}
