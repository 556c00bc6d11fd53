/** The key comparison behind X-Api-Key, Basic, OAuth client credentials and the admin key. */
import { describe, expect, it } from 'vitest';
import { createKeyMatcher } from '../../src/auth/api-key.js';

describe('createKeyMatcher', () => {
  const matches = createKeyMatcher(['current-key-0123456789', 'old', 'clé-ünïcode']);

  it.each([
    ['the current key', 'current-key-0123456789', true],
    ['the older, shorter key during rotation', 'old', true],
    ['a key with multi-byte characters', 'clé-ünïcode', true],
    ['a prefix of a key', 'current-key', false],
    ['a key with a character more', 'old!', false],
    ['a shorter key padded with NUL bytes', 'old\u0000', false],
    ['a key longer than every key', 'current-key-0123456789-and-more', false],
    ['an empty value', '', false],
    ['no value', undefined, false],
    ['another case', 'OLD', false],
  ])('%s → %s', (_label, candidate, expected) => {
    expect(matches(candidate)).toBe(expected);
  });

  it('matches nothing when no key is configured', () => {
    expect(createKeyMatcher([])('anything')).toBe(false);
  });
});
