/**
 * When an event the CRM did not take is tried again: after an exponential delay with jitter
 * (src/kit/backoff.ts, the conversions' policy), never sooner than the CRM's Retry-After, or dead-lettered once
 * relay.max_attempts is spent. Without max_attempts a retryable failure is retried for as long as it lasts.
 */
import { nextAttemptDelay, type BackoffPolicy } from '../kit/backoff.js';

export interface RetryPolicy extends BackoffPolicy {
  maxAttempts: number | undefined;
}

/** A Retry-After longer than this is read as this: a misconfigured proxy must not park a player's stream for days. */
export const RETRY_AFTER_CAP_MS = 3_600_000;

export function planRetry(
  attemptsBefore: number,
  at: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
  retryAfterMs?: number,
): { dead: boolean; nextAttemptAt: number } {
  const attempt = attemptsBefore + 1;
  const delay = Math.max(nextAttemptDelay(attempt, policy, random), Math.min(retryAfterMs ?? 0, RETRY_AFTER_CAP_MS));
  return { dead: policy.maxAttempts !== undefined && attempt >= policy.maxAttempts, nextAttemptAt: at + delay };
}
