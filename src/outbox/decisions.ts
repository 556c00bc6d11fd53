/**
 * What a failed send means for an outbox row, as pure functions (table tests in test/outbox/outbox-decisions.test.ts):
 * dead at once (the receiver refused the row for good), dead after the kind's max_attempts, or due again after an
 * exponential delay with "equal jitter" (half fixed, half random, so a recovering receiver is not hit by every
 * instance at the same moment), never sooner than a Retry-After the receiver gave.
 */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

export interface RetryPolicy extends BackoffPolicy {
  /** Attempts before a row is dead-lettered; undefined: retried for as long as the failure lasts. */
  maxAttempts: number | undefined;
}

/** A Retry-After longer than this is read as this: a misconfigured proxy must not park a player's stream for days. */
export const RETRY_AFTER_CAP_MS = 3_600_000;

export function nextAttemptDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential / 2 + (exponential / 2) * random());
}

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

/** Why a row was dead-lettered: `refused` by the receiver (at once), or out of `attempts`. */
export type DeadReason = 'refused' | 'attempts';

export interface FailurePlan {
  dead: boolean;
  reason?: DeadReason;
  nextAttemptAt: number;
}

/**
 * One failed row's fate. `refused`: the kind judged the answer final (src/events/transport.ts decideFailure for CRM
 * events), so the row is dead now and its next_attempt_at is the failure's time. Otherwise planRetry decides.
 */
export function planFailure(
  attemptsBefore: number,
  at: number,
  failure: { refused?: boolean | undefined; retryAfterMs?: number | undefined },
  policy: RetryPolicy,
  random: () => number = Math.random,
): FailurePlan {
  if (failure.refused) return { dead: true, reason: 'refused', nextAttemptAt: at };
  const plan = planRetry(attemptsBefore, at, policy, random, failure.retryAfterMs);
  return plan.dead ? { ...plan, reason: 'attempts' } : plan;
}
