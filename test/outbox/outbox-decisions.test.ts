/** What a failed send means for an outbox row (src/outbox/decisions.ts): dead now, dead after max_attempts, or when next. */
import { describe, expect, it } from 'vitest';
import { planFailure } from '../../src/outbox/decisions.js';

describe('planFailure', () => {
  const policy = { initialMs: 1_000, maxMs: 300_000, maxAttempts: 3 };
  it.each([
    ['a refused row is dead at once, on its first attempt', 0, { refused: true }, { dead: true, reason: 'refused', nextAttemptAt: 10_000 }],
    [
      'a refused row is dead at once, whatever a Retry-After says',
      0,
      { refused: true, retryAfterMs: 60_000 },
      { dead: true, reason: 'refused', nextAttemptAt: 10_000 },
    ],
    ['a first failure backs off between half and all of retry_initial_ms (random 0: half)', 0, {}, { dead: false, nextAttemptAt: 10_500 }],
    ['a second failure waits twice as long', 1, {}, { dead: false, nextAttemptAt: 11_000 }],
    ['a Retry-After longer than the back-off is waited for', 0, { retryAfterMs: 60_000 }, { dead: false, nextAttemptAt: 70_000 }],
    ['the failure that spends max_attempts dead-letters, still with a next time', 2, {}, { dead: true, reason: 'attempts', nextAttemptAt: 12_000 }],
    ['a row past max_attempts (a replay lowered it) dead-letters too', 7, { refused: false }, { dead: true, reason: 'attempts', nextAttemptAt: 74_000 }],
  ] as const)('%s', (_label, attemptsBefore, failure, expected) => {
    expect(planFailure(attemptsBefore, 10_000, failure, policy, () => 0)).toEqual(expected);
  });

  it('without max_attempts a retryable failure is never dead, however many times it failed', () => {
    expect(planFailure(99, 0, {}, { ...policy, maxAttempts: undefined }, () => 1)).toEqual({ dead: false, nextAttemptAt: 300_000 });
  });
});
