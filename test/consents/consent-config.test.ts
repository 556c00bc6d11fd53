/** The config keys of consent-aware sending: defaults, per-language keyword lists, and refusals naming the key. */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/load.js';

const minimal = (sms: Record<string, unknown> = {}) => ({ auth: { api_keys: ['k'] }, providers: { sandbox: { type: 'sandbox' } }, sms });

describe('sms suppression and keyword config', () => {
  it('is on by default, with a 60 s cache and the usual English keywords', () => {
    const { sms } = parseConfig(minimal(), {});
    expect(sms.suppression).toBe('on');
    expect(sms.suppression_cache_ttl).toBe(60_000);
    expect(sms.opt_out_keywords).toEqual(['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT']);
    expect(sms.opt_in_keywords).toEqual(['START', 'UNSTOP', 'YES']);
  });

  it.each([
    ['off', 'off'],
    [false, 'off'],
    [true, 'on'],
  ])('reads suppression %j as %s', (value, expected) => {
    expect(parseConfig(minimal({ suppression: value }), {}).sms.suppression).toBe(expected);
  });

  it('combines per-language lists into one upper-case list', () => {
    const { sms } = parseConfig(minimal({ opt_out_keywords: { en: ['stop'], es: [' Baja '], de: ['STOPP', 'stop'] } }), {});
    expect(sms.opt_out_keywords).toEqual(['STOP', 'BAJA', 'STOPP']);
  });

  it.each([
    ['a word in both lists', { opt_in_keywords: ['START', 'stop'] }, /sms\.opt_in_keywords: STOP also listed in sms\.opt_out_keywords/],
    ['an empty keyword', { opt_out_keywords: ['STOP', ' '] }, /sms\.opt_out_keywords/],
    ['an empty list', { opt_in_keywords: [] }, /sms\.opt_in_keywords/],
    ['suppression as a word other than on or off', { suppression: 'maybe' }, /sms\.suppression/],
    ['a cache ttl that is no duration', { suppression_cache_ttl: 'a while' }, /sms\.suppression_cache_ttl/],
  ])('refuses %s, naming the key', (_label, sms, message) => {
    expect(() => parseConfig(minimal(sms), {})).toThrow(ConfigError);
    expect(() => parseConfig(minimal(sms), {})).toThrow(message);
  });
});
