/** exact-json: which bodies need the exact parse, and what it keeps. */
import { describe, expect, it } from 'vitest';
import { activitySources, indentJson, parseExact, RawJson, stringifyExact } from '../../src/http/exact-json.js';

describe('activitySources', () => {
  it.each([
    ['small integers and short decimals', '{"activity":{"id":123,"score":2.5}}'],
    ['long digit runs inside strings', '{"activity":{"id":"9007199254740993"},"recipient":"+447700900123"}'],
    ['hex-looking strings with a digit then e', '{"activity":{"id":"a1","trigger_hash":"3e4f9e1b"}}'],
  ])('skips the exact parse for %s', (_label, body) => {
    expect(activitySources(body)).toBeUndefined();
  });

  it.each([
    ['an integer beyond 2^53', '{"activity":{"id":9007199254740993}}', { json: '{"id":9007199254740993}', idText: '9007199254740993' }],
    ['a negative one', '{"activity": {"id": -12345678901234567}}', { json: '{"id": -12345678901234567}', idText: '-12345678901234567' }],
    ['an exponent', '{"activity":{"id":"x","n":1e3}}', { json: '{"id":"x","n":1e3}', idText: undefined }],
    ['a long decimal', '{"activity":{"id":7,"p":0.12345678901234567}}', { json: '{"id":7,"p":0.12345678901234567}', idText: '7' }],
  ])('keeps the text of %s', (_label, body, expected) => {
    expect(activitySources(body)).toEqual([expected]);
  });

  it('gives one source per batch element, undefined where there is no activity object', () => {
    const body = '[{"activity":{"id":12345678901234567890}},{"content":"x"},{"activity":"not an object"}]';
    expect(activitySources(body)).toEqual([{ json: '{"id":12345678901234567890}', idText: '12345678901234567890' }, undefined, undefined]);
  });
});

describe('indentJson', () => {
  it('indents without touching a token', () => {
    expect(indentJson('{"id":9007199254740993,"p":[1.10,2e3],"s":"a b"}')).toBe(
      '{\n  "id": 9007199254740993,\n  "p": [\n    1.10,\n    2e3\n  ],\n  "s": "a b"\n}',
    );
  });
});

describe('stringifyExact', () => {
  it('writes kept numbers as their text and everything else as JSON.stringify does', () => {
    const value = { ids: [new RawJson('9007199254740993'), 5, 'x'], note: 'a "quoted" \u0000 value', nested: { id: new RawJson('1.0') } };
    expect(stringifyExact(value)).toBe('{"ids":[9007199254740993,5,"x"],"note":"a \\"quoted\\" \\u0000 value","nested":{"id":1.0}}');
  });

  it('cannot be fooled by a string that looks like its marker', () => {
    const value = { id: new RawJson('42'), error: '\u00000' };
    expect(JSON.parse(stringifyExact(value))).toEqual({ id: 42, error: '\u00000' });
  });
});

describe('parseExact', () => {
  it.each([
    ['an integer beyond 2^53', '{"id":9007199254740993}', { id: new RawJson('9007199254740993') }],
    ['a negative one in a list', '{"ids":[1, -98765432109876543210]}', { ids: [1, new RawJson('-98765432109876543210')] }],
    ['1e400 (Infinity as a double)', '{"a":1e400}', { a: new RawJson('1e400') }],
    ['-1e-400 (-0 as a double)', '{"a":-1e-400}', { a: new RawJson('-1e-400') }],
    ['a long fraction', '{"a":0.12345678901234567}', { a: new RawJson('0.12345678901234567') }],
    ['a short number beside them stays a double', '{"a":1e3,"b":2.5,"c":"9007199254740993"}', { a: new RawJson('1e3'), b: 2.5, c: '9007199254740993' }],
  ])('keeps %s as its text', (_label, text, expected) => {
    expect(parseExact(text)).toEqual(expected);
  });

  it('is JSON.parse for a body with no such number (no reviver runs)', () => {
    const text = '{"a":1.0,"b":-0,"c":123456789012345,"d":"1e400"}';
    expect(parseExact(text)).toEqual(JSON.parse(text));
  });
});
