/** The pure decisions behind the trust boundary: the failed-authentication budget and the 405 method table. */
import { describe, expect, it } from 'vitest';
import { createFailureLimiter } from '../../src/auth/failure-limit.js';
import { createAllowedMethods } from '../../src/http/method-not-allowed.js';

describe('createFailureLimiter (budget 3 per 60 s)', () => {
  it.each<[string, Array<[string, number]>, string, number, number]>([
    ['an address with no failures may try', [], 'a', 0, 0],
    [
      'two failures leave it free',
      [
        ['a', 0],
        ['a', 1_000],
      ],
      'a',
      2_000,
      0,
    ],
    [
      'the third failure blocks it until its window ends',
      [
        ['a', 0],
        ['a', 1_000],
        ['a', 2_000],
      ],
      'a',
      2_000,
      58_000,
    ],
    [
      'another address is not affected',
      [
        ['a', 0],
        ['a', 1_000],
        ['a', 2_000],
      ],
      'b',
      2_000,
      0,
    ],
    [
      'a window that ended frees it',
      [
        ['a', 0],
        ['a', 1_000],
        ['a', 2_000],
      ],
      'a',
      60_000,
      0,
    ],
    [
      'failures after a window ended start a new one',
      [
        ['a', 0],
        ['a', 70_000],
        ['a', 71_000],
        ['a', 72_000],
      ],
      'a',
      72_000,
      58_000,
    ],
  ])('%s', (_label, failures, address, at, blockedMs) => {
    const limiter = createFailureLimiter(3, 60_000);
    for (const [who, when] of failures) limiter.recordFailure(who, when);
    expect(limiter.blockedFor(address, at)).toBe(blockedMs);
  });

  it('a budget of 0 never blocks', () => {
    const limiter = createFailureLimiter(0, 60_000);
    for (let i = 0; i < 100; i++) limiter.recordFailure('a', i);
    expect(limiter.blockedFor('a', 100)).toBe(0);
  });

  it('forgets the oldest address past its size, so a flood of addresses stays bounded', () => {
    const limiter = createFailureLimiter(1, 60_000, 2);
    for (const who of ['a', 'b', 'c']) limiter.recordFailure(who, 0);
    expect(['a', 'b', 'c'].map((who) => limiter.blockedFor(who, 1))).toEqual([0, 60_000 - 1, 60_000 - 1]);
  });
});

describe('createAllowedMethods', () => {
  const allowed = createAllowedMethods([
    { method: 'ALL', path: '*' },
    { method: 'POST', path: '/channels/sms/single' },
    { method: 'GET', path: '/dlr/:provider' },
    { method: 'POST', path: '/dlr/:provider' },
    { method: 'GET', path: '/admin/messages/:sms_id' },
    { method: 'PUT', path: '/admin/users/:id{[0-9]+}' },
  ]);
  it.each<[string, string[]]>([
    ['/channels/sms/single', ['POST']],
    ['/dlr/sandbox', ['GET', 'HEAD', 'POST']],
    ['/dlr/__proto__', ['GET', 'HEAD', 'POST']],
    ['/admin/messages/abc', ['GET', 'HEAD']],
    ['/admin/users/42', ['PUT']],
    ['/admin/users/abc', []],
    ['/admin/messages/abc/extra', []],
    ['/channels/sms/single/', []],
    ['/nowhere', []],
  ])('%s answers %j', (path, methods) => {
    expect(allowed(path)).toEqual(methods);
  });
});
