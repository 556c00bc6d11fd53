/** exact-json: which bodies need the exact parse, and what it keeps. */
import { describe, expect, it } from 'vitest';
import { activitySources, identifierText, indentJson, parseExact, RawJson, storedIdentifiers, stringifyExact } from '../../src/http/exact-json.js';

describe('activitySources', () => {
  it.each([
    ['small integers and short decimals', '{"activity":{"id":123,"score":2.5}}'],
    ['long digit runs inside strings', '{"activity":{"id":"9007199254740993"},"recipient":"+447700900123"}'],
    ['hex-looking strings with a digit then e', '{"activity":{"id":"a1","trigger_hash":"3e4f9e1b"}}'],
  ])('skips the exact parse for %s', (_label, body) => {
    expect(activitySources(body)).toBeUndefined();
  });

  it.each([
    ['an integer beyond 2^53', '{"activity":{"id":9007199254740993}}', { json: '{"id":9007199254740993}', numberTexts: { id: '9007199254740993' } }],
    ['a negative one', '{"activity": {"id": -12345678901234567}}', { json: '{"id": -12345678901234567}', numberTexts: { id: '-12345678901234567' } }],
    ['an exponent', '{"activity":{"id":"x","n":1e3}}', { json: '{"id":"x","n":1e3}', numberTexts: { n: '1e3' } }],
    [
      'a long decimal',
      '{"activity":{"id":7,"p":0.12345678901234567}}',
      { json: '{"id":7,"p":0.12345678901234567}', numberTexts: { id: '7', p: '0.12345678901234567' } },
    ],
    [
      'the other ids, not nested ones',
      '{"activity":{"id":"a","brand_id":9007199254740993,"user_id":18446744073709551615,"meta":{"brand_id":1}}}',
      {
        json: '{"id":"a","brand_id":9007199254740993,"user_id":18446744073709551615,"meta":{"brand_id":1}}',
        numberTexts: { brand_id: '9007199254740993', user_id: '18446744073709551615' },
      },
    ],
  ])('keeps the text of %s', (_label, body, expected) => {
    expect(activitySources(body)).toEqual([{ ...expected, numberTexts: expect.objectContaining(expected.numberTexts) }]);
    expect({ ...activitySources(body)![0]!.numberTexts }).toEqual(expected.numberTexts);
  });

  it('gives one source per batch element, undefined where there is no activity object', () => {
    const body = '[{"activity":{"id":12345678901234567890}},{"content":"x"},{"activity":"not an object"}]';
    const sources = activitySources(body);
    expect(sources).toEqual([{ json: '{"id":12345678901234567890}', numberTexts: expect.anything() }, undefined, undefined]);
    expect({ ...sources![0]!.numberTexts }).toEqual({ id: '12345678901234567890' });
  });
});

describe('identifierText', () => {
  it.each([
    ['a string as it is', 'casino-7', undefined, 'casino-7'],
    ['a safe integer in decimal', 42, '42', '42'],
    // The double JSON.parse makes of 9007199254740993 (written as a literal, it would be rounded the same way).
    ['an integer past 2^53 by its digits as sent', 2 ** 53, '9007199254740993', '9007199254740993'],
    ['a negative one', -(2 ** 53), '-9007199254740993', '-9007199254740993'],
    ['one whose text is not known, as the double writes it', 2 ** 53, undefined, '9007199254740992'],
  ])('%s', (_label, value, text, expected) => {
    expect(identifierText(value, text)).toBe(expected);
  });
});

describe('storedIdentifiers', () => {
  it.each([
    ['strings and small integers', '{"id":"a","brand_id":7,"user_id":"p-1"}', { brand_id: '7', user_id: 'p-1', activity_id: null }],
    [
      'integers past 2^53 by their digits, a nested key of the same name left alone',
      '{"meta":{"brand_id":1},"brand_id":9007199254740993,"activity_id":-18446744073709551615}',
      { brand_id: '9007199254740993', user_id: null, activity_id: '-18446744073709551615' },
    ],
    ['no identifier in an object or a list', '{"brand_id":{"x":1},"user_id":[1]}', { brand_id: null, user_id: null, activity_id: null }],
    ['text that is not an object', '[1,2]', { brand_id: null, user_id: null, activity_id: null }],
    ['text that is not JSON', '{"brand_id":', { brand_id: null, user_id: null, activity_id: null }],
  ])('%s', (_label, json, expected) => {
    expect(storedIdentifiers(json, ['brand_id', 'user_id', 'activity_id'])).toEqual(expected);
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
