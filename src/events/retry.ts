/**
 * What happens to an event the CRM did not take: tried again after an exponential delay with jitter
 * (src/kit/backoff.ts, the conversions' policy), or dead-lettered once relay.max_attempts is spent. Without
 * max_attempts it is never dead: the CRM's rule is to retry until it answers 200 (docs/crm-interface.md §7).
 */
import { nextAttemptDelay, type BackoffPolicy } from '../kit/backoff.js';

export interface RetryPolicy extends BackoffPolicy {
  maxAttempts: number | undefined;
}

export function planRetry(attemptsBefore: number, at: number, policy: RetryPolicy, random: () => number = Math.random): { dead: boolean; nextAttemptAt: number } {
  const attempt = attemptsBefore + 1;
  return { dead: policy.maxAttempts !== undefined && attempt >= policy.maxAttempts, nextAttemptAt: at + nextAttemptDelay(attempt, policy, random) };
}
