/** Top-level member edits in a JSON text: the edited member changes, every other byte stays as written. */
import { describe, expect, it } from 'vitest';
import { RawJson } from '../../src/http/exact-json.js';
import { editTopLevelMembers } from '../../src/http/json-member-edits.js';

const text = '{ "a" : 9007199254740993,\n  "b": [1e400, -1e-400, 1.0],"c":{"d":98765432109876543210, "b": 1} }\n';
const refs = { key: 'r', value: { n: new RawJson('9007199254740993'), s: 'x' } };

describe('editTopLevelMembers', () => {
  it.each([
    ['removes a member in the middle, with the comma before it', { remove: 'b' }, '{ "a" : 9007199254740993,"c":{"d":98765432109876543210, "b": 1} }\n'],
    [
      'removes the first, with its comma and the spaces up to the next key',
      { remove: 'a' },
      '{ "b": [1e400, -1e-400, 1.0],"c":{"d":98765432109876543210, "b": 1} }\n',
    ],
    ['removes the last', { remove: 'c' }, '{ "a" : 9007199254740993,\n  "b": [1e400, -1e-400, 1.0] }\n'],
    ['leaves nested keys of the same name alone', { remove: 'd' }, text],
    [
      'appends a member after the last, its numbers written exactly',
      { remove: 'zz', addIfAbsent: refs },
      '{ "a" : 9007199254740993,\n  "b": [1e400, -1e-400, 1.0],"c":{"d":98765432109876543210, "b": 1},"r": {"n":9007199254740993,"s":"x"} }\n',
    ],
    [
      'removes the last and appends in its place',
      { remove: 'c', addIfAbsent: refs },
      '{ "a" : 9007199254740993,\n  "b": [1e400, -1e-400, 1.0],"r": {"n":9007199254740993,"s":"x"} }\n',
    ],
    ['adds nothing when the key is there', { remove: 'zz', addIfAbsent: { key: 'a', value: 1 } }, text],
  ])('%s', (_label, edits, expected) => {
    expect(editTopLevelMembers(text, edits)).toBe(expected);
  });

  it.each([
    ['the only member, removed', '{"credit_id":"3"}', { remove: 'credit_id' }, '{}'],
    ['the only member, replaced by the added one', '{"credit_id":"3"}', { remove: 'credit_id', addIfAbsent: refs }, '{"r": {"n":9007199254740993,"s":"x"}}'],
    ['an empty object', ' {} ', { remove: 'x', addIfAbsent: { key: 'k', value: 1 } }, ' {"k": 1} '],
    ['a key written with escapes, read as JSON.parse reads it', '{"a":1,"credit\\u005fid":2}', { remove: 'credit_id' }, '{"a":1}'],
    ['braces and commas inside strings', '{"s":"},{\\",","credit_id":1,"t":"a,b"}', { remove: 'credit_id' }, '{"s":"},{\\",","t":"a,b"}'],
  ])('%s', (_label, input, edits, expected) => {
    expect(editTopLevelMembers(input, edits)).toBe(expected);
    expect(JSON.parse(editTopLevelMembers(input, edits))).toBeTypeOf('object');
  });
});
