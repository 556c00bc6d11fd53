/**
 * The send path's one outcome vocabulary (SendOutcome, src/ledger/schema.ts): what a provider plugin's answer
 * means for the message, stored as the ledger's send state, counted under the same name by the metrics, and
 * carried by every dispatch result. The CRM's words (successful / failed / fatal and the HTTP status codes) are
 * mapped from it in one place only: src/sms/routes.ts.
 */
import type { SendResult } from '../../providers/types.js';
import type { SendOutcome } from '../ledger/schema.js';

export type { SendOutcome };

/** One message's answer from the dispatcher: its outcome, its sms_id once it has a row, and why when not submitted. */
export type DispatchResult =
  | { outcome: 'submitted'; smsId: string }
  /** `code`: a stable name for the refusal the CRM can read beside `error` (recipient_ambiguous, recipient_country_mismatch). */
  | { outcome: Exclude<SendOutcome, 'submitted'>; smsId?: string; error: string; code?: string };

/** `permanent` is for good; a transient failure is free to send again unless the provider may have taken it. */
export function outcomeOf(answer: SendResult): SendOutcome {
  if (answer.ok) return 'submitted';
  if (answer.kind === 'permanent') return 'rejected';
  return answer.ambiguous ? 'uncertain' : 'retryable';
}
