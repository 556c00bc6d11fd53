/** The time claims of a session token that jose leaves to its caller (src/operator/api/session-check.ts). */
import { describe, expect, it } from 'vitest';
import { refuseTimeClaims } from '../../../src/operator/api/session-check.js';

const NOW = 1_795_000_000;
const SKEW = 30;

describe('refuseTimeClaims (now 1795000000, clock skew 30 s)', () => {
  it.each([
    ['a token with no time claims but exp', { exp: NOW + 60 }, undefined],
    ['a token issued now', { exp: NOW + 60, iat: NOW }, undefined],
    ['a token issued within the clock skew ahead', { exp: NOW + 60, iat: NOW + SKEW }, undefined],
    ['a token issued a second past the skew', { exp: NOW + 60, iat: NOW + SKEW + 1 }, /^iat is later than now/],
    ['a token issued a year ahead', { exp: NOW + 400 * 86_400, iat: NOW + 365 * 86_400 }, /^iat is later than now/],
    ['exp 1e400, Infinity after JSON.parse', { exp: JSON.parse('1e400') }, /^exp is not a time/],
    ['exp past the year 9999', { exp: 1e15 }, /^exp is not a time/],
    ['nbf -1e400', { exp: NOW + 60, nbf: JSON.parse('-1e400') }, /^nbf is not a time/],
    ['iat before 1970', { exp: NOW + 60, iat: -1 }, /^iat is not a time/],
    ['iat as text', { exp: NOW + 60, iat: String(NOW) }, /^iat is not a time/],
    ['exp on the last second of 9999', { exp: 253_402_300_799 }, undefined],
  ] as const)('%s', (_label, payload, refused) => {
    const verdict = refuseTimeClaims(payload, NOW, SKEW);
    if (refused === undefined) expect(verdict).toBeUndefined();
    else expect(verdict).toMatch(refused);
  });
});
