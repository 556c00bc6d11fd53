/**
 * When to try a failed conversion post again: exponential from retry_initial_ms, capped at retry_max_ms, with
 * "equal jitter" (half fixed, half random) so a recovering CRM is not hit by every instance at the same moment.
 */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

export function nextAttemptDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential / 2 + (exponential / 2) * random());
}
