/** What "the same body" is for a repeated bonus status: a table of bodies that are, and of bodies that are not. */
import { describe, expect, it } from 'vitest';
import { bodyFingerprint, canonicalJson } from '../../src/events/body-fingerprint.js';

const first = '{"user_id":"u-1","amount":10,"meta":{"a":[1,"x",true,null]},"status":"Created"}';

describe('bodyFingerprint', () => {
  it.each([
    ['the same text', first],
    ['spaces and new lines between tokens', '{ "user_id" : "u-1",\n  "amount": 10,\r\n "meta": { "a": [ 1, "x", true, null ] }, "status": "Created" }'],
    ['the keys in another order, at every level', '{"status":"Created","meta":{"a":[1,"x",true,null]},"amount":10,"user_id":"u-1"}'],
    ['a string written with escapes', '{"user_id":"\\u0075-1","amount":10,"meta":{"a":[1,"\\u0078",true,null]},"status":"Cre\\u0061ted"}'],
  ])('is the first body’s for %s', (_label, text) => {
    expect(bodyFingerprint(text)).toBe(bodyFingerprint(first));
  });

  it.each([
    ['another amount (10 → 20)', first.replace('"amount":10', '"amount":20')],
    ['the same amount written otherwise (10.0): not plainly the same, so told apart', first.replace('"amount":10', '"amount":10.0')],
    ['another player', first.replace('u-1', 'u-2')],
    ['a list in another order', first.replace('[1,"x",true,null]', '["x",1,true,null]')],
    ['a value that is a string instead of a number', first.replace('"amount":10', '"amount":"10"')],
    ['null instead of false', first.replace('true', 'false')],
    ['a key more', first.replace('}', ',"note":""}')],
    ['a string with a space more inside it', first.replace('"Created"', '"Created "')],
  ])('differs for %s', (_label, text) => {
    expect(bodyFingerprint(text)).not.toBe(bodyFingerprint(first));
  });

  it('tells apart two ids one apart above 2^53, which JSON.parse reads as one number', () => {
    const a = '{"payment_id":9007199254740993}';
    const b = '{"payment_id":9007199254740992}';
    expect(JSON.parse(a)).toEqual(JSON.parse(b));
    expect(bodyFingerprint(a)).not.toBe(bodyFingerprint(b));
  });

  it('writes the canonical text: keys sorted, no spacing, numbers as written, strings re-encoded', () => {
    expect(canonicalJson('{ "b": [ 1.50, -0, 1e400 ], "a": "\\u00e9\\n", "c": {} , "d": [] }')).toBe('{"a":"é\\n","b":[1.50,-0,1e400],"c":{},"d":[]}');
  });

  it('walks a body nested a thousand levels and one with 20,000 keys', () => {
    const deep = `${'['.repeat(1_000)}1${']'.repeat(1_000)}`;
    expect(canonicalJson(deep)).toBe(deep);
    const wide = `{${Array.from({ length: 20_000 }, (_v, i) => `"k${19_999 - i}":${i}`).join(',')}}`;
    const canonical = canonicalJson(wide);
    expect(canonical.startsWith('{"k0":19999,"k1":19998,"k10":19989,')).toBe(true);
    expect(canonical.length).toBe(wide.length);
  });
});
