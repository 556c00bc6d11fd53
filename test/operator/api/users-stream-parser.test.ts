import { describe, expect, it } from 'vitest';
import { crmReferencesObject, oneActionKey, readCrmReferences } from '../../../src/crm/references.js';
import { UsersStreamParser } from '../../../src/operator/api/users-stream-parser.js';

function parseInChunks(text: string, cuts: number[]) {
  const parser = new UsersStreamParser();
  const ids: string[] = [];
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    ids.push(...parser.push(text.slice(from, cut)));
    from = cut;
  }
  return { ids, end: parser.finish() };
}

describe('UsersStreamParser', () => {
  const answer =
    ' {"skip":{"a":[1,"]",{"b":null}],"c":"}"}, "users" : ["a1", "q\\"uote", "back\\\\slash", "\\u00e9t\\u00e9", "ümlaut"], "n": -1.5e3, "timestamp":"2020-01-01T10:00:00Z"} ';
  const expected = ['a1', 'q"uote', 'back\\slash', 'été', 'ümlaut'];

  it('reads the same ids and timestamp wherever the chunks are cut', () => {
    for (let cut = 0; cut <= answer.length; cut++) {
      const { ids, end } = parseInChunks(answer, [cut]);
      expect(ids, `cut at ${cut}`).toEqual(expected);
      expect(end).toEqual({ timestamp: '2020-01-01T10:00:00Z' });
    }
    const oneByOne = parseInChunks(
      answer,
      Array.from({ length: answer.length }, (_, i) => i),
    );
    expect(oneByOne.ids).toEqual(expected);
  });

  it('reports an error field, and accepts an empty list', () => {
    expect(parseInChunks('{"users":["a"],"error":"timeout"}', []).end).toEqual({ error: 'timeout' });
    expect(parseInChunks('{"users":[],"timestamp":"t"}', []).ids).toEqual([]);
  });

  it.each([
    ['a number among the ids', '{"users":["a",2]}', /users\[1\]: must be a string/],
    ['users that is not an array', '{"users":"a"}', /users: must be an array/],
    ['no users at all', '{"timestamp":"t"}', /users: is required/],
    ['an answer cut short', '{"users":["a"', /ends before/],
    ['a string cut short', '{"users":["a', /inside a string/],
    ['not an object', '["a"]', /must be a JSON object/],
    ['data after the end', '{"users":[]} {}', /after the closing/],
    ['a missing comma', '{"users":["a" "b"]}', /expected , or \]/],
  ])('throws naming the place for %s', (_label, text, message) => {
    expect(() => parseInChunks(text, [])).toThrow(message);
  });
});

describe('CRM references', () => {
  const headers: Record<string, string> = {
    'x-crm-id': 'g-1',
    'x-crm-actionid': '12',
    'x-crm-actiongroupid': 'not-a-number',
    'x-crm-activityid': '7',
    'x-crm-triggerhash': 'abc',
  };
  const refs = readCrmReferences((name) => headers[name]);

  it('types integer ids as numbers and keeps other values as strings, leaving absent ones out', () => {
    expect(crmReferencesObject(refs)).toEqual({ id: 'g-1', action_id: 12, action_group_id: 'not-a-number', activity_id: 7, trigger_hash: 'abc' });
  });

  it.each([
    ['all three headers', refs, 'u', '["7","12","u","abc"]'],
    ['no trigger hash', { ...refs, trigger_hash: null }, 'u', null],
    ['no activity id', { ...refs, activity_id: null }, 'u', null],
  ])('builds the one-action key from %s', (_label, r, user, key) => {
    expect(oneActionKey(r, user)).toBe(key);
  });
});
