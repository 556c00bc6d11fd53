/**
 * What to do with a send request whose activity.id is already in the ledger (DESIGN §4, idempotency):
 * a sent id answers its sms_id and sends nothing; a permanently failed id answers the same failure; only an id
 * whose last attempt was transient (or whose sender died mid-call) is sent again.
 */
import type { MessageRow } from '../ledger/messages.js';

export type RepeatDecision =
  | { action: 'answer-sent'; smsId: string }
  | { action: 'answer-failed'; smsId: string; error: string }
  | { action: 'resend'; smsId: string }
  | { action: 'busy'; smsId: string };

export function decideRepeat(row: Pick<MessageRow, 'sms_id' | 'state' | 'error' | 'dispatched_at'>, now: number, dispatchLeaseMs: number): RepeatDecision {
  switch (row.state) {
    case 'submitted':
      return { action: 'answer-sent', smsId: row.sms_id };
    case 'rejected':
      return { action: 'answer-failed', smsId: row.sms_id, error: row.error ?? 'rejected by the provider' };
    case 'retryable':
      return { action: 'resend', smsId: row.sms_id };
    case 'dispatching':
      // Another request (here or on another instance) is sending it right now, unless it has been at it so long
      // that its process must have died.
      return now - row.dispatched_at > dispatchLeaseMs ? { action: 'resend', smsId: row.sms_id } : { action: 'busy', smsId: row.sms_id };
  }
}
