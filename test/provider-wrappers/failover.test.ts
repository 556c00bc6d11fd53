/** Which answers let a route move on, and the order members are tried in (src/provider-wrappers/failover.ts). */
import { describe, expect, it } from 'vitest';
import type { SendResult } from '../../providers/types.js';
import { judgeMemberAnswer, orderMembers } from '../../src/provider-wrappers/failover.js';

describe('judgeMemberAnswer', () => {
  it.each<[string, SendResult, boolean, boolean, string]>([
    ['accepted: done, the member is alive', { ok: true, providerMessageIds: ['m1'] }, false, false, 'answered'],
    ['refused for good (bad number): done, the member is alive', { ok: false, kind: 'permanent', error: 'invalid To' }, false, false, 'answered'],
    ['connection refused: never sent, try the next', { ok: false, kind: 'transient', error: 'ECONNREFUSED', code: 'ECONNREFUSED' }, false, true, 'failed'],
    ['HTTP 429 before acceptance: never sent, try the next', { ok: false, kind: 'transient', error: 'HTTP 429', code: '20429' }, false, true, 'failed'],
    [
      'HTTP 5xx: may have been sent, stay (uncertain)',
      { ok: false, kind: 'transient', error: 'HTTP 500', code: 'http_500', ambiguous: true },
      false,
      false,
      'failed',
    ],
    ['timeout after the request went out: stay', { ok: false, kind: 'transient', error: 'no answer', code: 'timeout', ambiguous: true }, true, false, 'failed'],
    [
      'our own rate limit for the member is full: spill over, no health signal',
      { ok: false, kind: 'transient', error: 'rate limit', code: 'rate_limited' },
      false,
      true,
      'released',
    ],
    [
      'our own rate limit, but the send timeout has fired: stop',
      { ok: false, kind: 'transient', error: 'rate limit', code: 'rate_limited' },
      true,
      false,
      'released',
    ],
    ['never sent, but the send timeout has fired: stop', { ok: false, kind: 'transient', error: 'ECONNREFUSED', code: 'ECONNREFUSED' }, true, false, 'failed'],
    [
      'the gateway is shutting down: stop, no health signal',
      { ok: false, kind: 'transient', error: 'shutting down', code: 'shutting_down' },
      false,
      false,
      'released',
    ],
  ])('%s', (_label, answer, timedOut, tryNext, breaker) => {
    const verdict = judgeMemberAnswer(answer, timedOut);
    expect(verdict.tryNext).toBe(tryNext);
    expect(verdict.breaker.kind).toBe(breaker);
  });
});

describe('orderMembers', () => {
  const w = (o: Record<string, number>) => new Map(Object.entries(o));
  it.each<[string, 'failover' | 'weighted', Record<string, number>, number, string[]]>([
    ['failover keeps the configured order', 'failover', { a: 1, b: 9 }, 0.99, ['a', 'b', 'c']],
    ['weighted: a low draw lands on the first weight', 'weighted', { a: 1, b: 3, c: 0 }, 0.1, ['a', 'b', 'c']],
    ['weighted: a high draw lands on b, then the rest by weight', 'weighted', { a: 1, b: 3, c: 0 }, 0.9, ['b', 'a', 'c']],
    ['weighted: missing weights count as 1', 'weighted', {}, 0.5, ['b', 'a', 'c']],
    ['weighted: a weight-0 member is never drawn first', 'weighted', { a: 0, b: 0, c: 2 }, 0.0, ['c', 'a', 'b']],
  ])('%s', (_label, strategy, weights, random, expected) => {
    expect(orderMembers(['a', 'b', 'c'], strategy, w(weights), random)).toEqual(expected);
  });
});
