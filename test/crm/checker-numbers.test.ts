/**
 * Numbers as the CRM's checker reads them (gojsonschema 1.2: json.Number, read by Go's big.Rat SetString; see
 * src/crm/checker-numbers.ts): exact comparisons on the text, its integers, and the texts SetString refuses. Each row
 * says what that checker answers for the literal, so a reading by doubles fails here.
 */
import { describe, expect, it } from 'vitest';
import { compareCheckerNumbers, isCheckerInteger, readCheckerNumber, refuseInteger, refuseNumber } from '../../src/crm/checker-numbers.js';
import { RawJson } from '../../src/kit/raw-json.js';

const read = (text: string) => {
  const n = readCheckerNumber(text);
  if (!n?.readable) throw new Error(`${text} is not readable`);
  return n;
};

describe('the checker’s `minimum: 0`, on the text', () => {
  it.each([
    ['-1e-400 is below 0 (a double reads it as -0)', '-1e-400', 'must be 0 or more'],
    ['-0.0000000000000000000000001 is below 0', '-0.0000000000000000000000001', 'must be 0 or more'],
    ['-0 is 0', '-0', undefined],
    ['-0.0e-400 is 0', '-0.0e-400', undefined],
    ['0e99 is 0', '0e99', undefined],
    ['1e400 is a number above 0 (a double reads it as Infinity)', '1e400', undefined],
    ['1e-400 is above 0', '1e-400', undefined],
    ['9007199254740993 is above 0', '9007199254740993', undefined],
    ['-98765432109876543210 is below 0', '-98765432109876543210', 'must be 0 or more'],
  ])('%s', (_label, text, error) => {
    expect(refuseNumber(new RawJson(text), 0)).toBe(error);
  });

  it.each([
    ['an exponent beyond ±1,000,000 after the point', '-1e-1000001'],
    ['one that passes 1,000,000 once the digits after the point are counted', '1.5e-1000000'],
    ['an exponent beyond 64 bits, on a mantissa of zeros too', '0e99999999999999999999'],
  ])('refuses a number SetString cannot read where a minimum compares it: %s', (_label, text) => {
    expect(refuseNumber(new RawJson(text), 0)).toMatch(/^cannot be compared with 0 by the CRM's checker/);
  });

  it.each([
    ['1e400', '1e400'],
    ['an exponent beyond what SetString reads', '1e99999999999999999999'],
    ['-1e-400', '-1e-400'],
  ])('takes %s where the schema says only `number`', (_label, text) => {
    expect(refuseNumber(new RawJson(text))).toBeUndefined();
  });

  it.each([
    ['a string', '5'],
    ['null', null],
    ['a boolean', true],
    ['an object', {}],
    ['a RawJson that holds no number', new RawJson('{"a":1}')],
  ])('refuses %s as not a number', (_label, value) => {
    expect(refuseNumber(value, 0)).toBe('must be a number');
  });

  it.each([
    [-1.5, 'must be 0 or more'],
    [0, undefined],
    [-0, undefined],
    [1e-300, undefined],
    [Number.POSITIVE_INFINITY, 'must be a number'],
    [Number.NaN, 'must be a number'],
  ])('compares a double as a double (its order is its shortest text’s): %s', (value, error) => {
    expect(refuseNumber(value, 0)).toBe(error);
  });
});

describe('the checker’s `integer`', () => {
  it.each([
    ['1.0', true],
    ['1.000000000000000000000000000000', true],
    ['1e400', true],
    ['1.5e1', true],
    ['9007199254740993', true],
    ['98765432109876543210', true],
    ['-0', true],
    ['0e-400', true],
    ['1.5', false],
    ['1e-400', false],
    ['1.0000000000000001', false],
    ['9007199254740993.5', false],
    ['1e1000000', true],
    ['1e1000001', false],
    ['10e-1000001', false],
    ['1e99999999999999999999', false],
  ])('%s: %s', (text, integer) => {
    expect(isCheckerInteger(readCheckerNumber(text)!)).toBe(integer);
    expect(refuseInteger(new RawJson(text))).toBe(integer ? undefined : 'must be an integer');
  });
});

describe('readCheckerNumber', () => {
  it.each([
    ['an exponent of exactly 1,000,000', '1e1000000', true],
    ['one of 1,000,001 with a digit after the point', '1.5e1000001', true],
    ['-1,000,000', '1e-1000000', true],
    ['1,000,001', '1e1000001', false],
    ['the largest 64-bit exponent on zero', '0e9223372036854775807', true],
    ['one past it', '0e9223372036854775808', false],
    ['the smallest on zero', '0e-9223372036854775808', true],
    ['leading zeros in the exponent', '1e-0000000000000000000000001', true],
  ])('reads %s as SetString does', (_label, text, readable) => {
    expect(readCheckerNumber(text)?.readable).toBe(readable);
  });

  it.each(['', '+1', '01', '1.', '.5', '1e', 'Infinity', 'NaN', '0x10', '1_000'])('%j is no JSON number', (text) => {
    expect(readCheckerNumber(text)).toBeUndefined();
  });

  // No timing is asserted: a quadratic reading of this (a backtracking /0+$/ took 11 s on 60,000 zeros here, so
  // about a minute on these) runs past the test timeout (vitest.config.ts), and a linear one takes about a millisecond.
  it('reads a number with a run of 150,000 zeros inside it in linear time', () => {
    expect(read(`1${'0'.repeat(150_000)}1e-150001`)).toMatchObject({ sign: 1, point: 1, digits: `1${'0'.repeat(150_000)}1` });
    expect(refuseNumber(new RawJson(`-0.${'0'.repeat(150_000)}1`), 0)).toBe('must be 0 or more');
  });

  it('reads a 60,000-digit number without building it', () => {
    const text = `-${'9'.repeat(30_000)}.${'0'.repeat(29_999)}1e-900000`;
    expect(read(text)).toMatchObject({ sign: -1, point: 30_000 - 900_000 });
  });
});

describe('compareCheckerNumbers', () => {
  it.each([
    ['9007199254740993', '9007199254740992', 1],
    ['98765432109876543210', '98765432109876540000', 1],
    ['1.0', '1', 0],
    ['100', '1e2', 0],
    ['0.1', '1e-1', 0],
    ['-0', '0', 0],
    ['1e400', '1e399', 1],
    ['-1e-400', '0', -1],
    ['-1e400', '-1e399', -1],
    ['0.12345678901234567', '0.12345678901234568', -1],
    ['12', '1.2e1', 0],
    ['123', '1234e-1', -1],
  ])('%s against %s: %i', (a, b, expected) => {
    expect(compareCheckerNumbers(read(a), read(b))).toBe(expected);
    expect(compareCheckerNumbers(read(b), read(a))).toBe(-expected || 0);
  });
});
