/**
 * What a receiver made of a send: the one outcome type of every outbox kind's receiver (the CRM's webhook, its
 * Integration API or broker, the operator's credits endpoint), and how an HTTP receiver's answer
 * (src/http/outbound.ts) becomes one, in the receiver's own words.
 */
import type { OutboundAnswer } from '../http/outbound.js';

/**
 * `permanent`: the receiver can never take this row as it is (a refused record, a destination not configured);
 * `refused`: the kind judged the answer final (dead now, whatever the attempts); `retryAfterMs`: how long the receiver
 * asked us to wait; `notRouted`: a broker took it but no queue or partition holds it (counted apart, retried).
 */
export type OutboxOutcome =
  | { ok: true; status: number | null }
  | {
      ok: false;
      /** The HTTP status, or null when nothing answered (or the receiver has no statuses). */
      status: number | null;
      error: string;
      permanent?: boolean | undefined;
      refused?: boolean | undefined;
      retryAfterMs?: number | undefined;
      notRouted?: boolean | undefined;
    };

/** How a receiver words a refusal and a request that got no answer, for the row's last_error. */
export interface AnswerWords {
  answered(status: number, body: string): string;
  unanswered(error: Error & { code?: string }): string;
}

/** Any 2xx is taken; anything else is a failure in the receiver's words, with its Retry-After when the kind reads it. */
export function outcomeOfAnswer(answer: OutboundAnswer, words: AnswerWords, retryAfterMs?: (value: string | undefined) => number | undefined): OutboxOutcome {
  if (!answer.answered) return { ok: false, status: null, error: words.unanswered(answer.error) };
  const { status } = answer;
  if (status >= 200 && status < 300) return { ok: true, status };
  const wait = retryAfterMs?.(answer.retryAfter);
  return { ok: false, status, error: words.answered(status, answer.body), ...(wait !== undefined ? { retryAfterMs: wait } : {}) };
}
