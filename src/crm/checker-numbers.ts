/**
 * A JSON number as the CRM's checker reads it (docs/events.md "Rules per kind": gojsonschema 1.2). That checker
 * decodes a body with Go's json.Decoder.UseNumber, so a number stays the text it was written as (json.Number), and
 * reads that text with Go's big.Rat SetString for every number rule: the type `integer`, `minimum` and the like
 * compare exact rationals, never doubles. So `-1e-400` is below 0, `1e400` is a number (and an integer), `1.0` is an
 * integer, and 9007199254740993 differs from 9007199254740992.
 *
 * SetString refuses some texts the JSON grammar allows: an exponent that does not fit a 64-bit integer, or a decimal
 * exponent less the digits after the point beyond ±1,000,000 (Go's math/big guards its memory so since Go 1.17.7, and
 * the maker's module requires Go 1.22: docs/relay.md "Numbers"); a mantissa of
 * zeros is 0 whatever its exponent, once the exponent fits. Such a number still has the type `number` there, but
 * is never an `integer`, and the checker's `minimum` cannot compare it (it meets no value), so the relay refuses it
 * wherever a rule compares.
 *
 * Everything here is linear in the text: no power of ten is ever built, so `1e999999` costs what `1` costs.
 */
import { RawJson } from '../kit/raw-json.js';

/** The checker's reading: `unreadable` when SetString refuses the text. */
export type CheckerNumber =
  | { readable: false }
  | {
      readable: true;
      sign: -1 | 0 | 1;
      /** The significant digits, without leading or trailing zeros ('' for 0). */
      digits: string;
      /** The value is 0.digits × 10^point. */
      point: number;
    };

const JSON_NUMBER = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?)(\d+))?$/;
const INT64_MAX = 2n ** 63n - 1n;
/** Go's math/big Rat.SetString fails on a power of ten beyond this ("avoid excessively large exponents", its source says). */
const EXPONENT_LIMIT = 1_000_000n;

/** Reads a JSON number's text as the checker does; undefined when the text is no JSON number. Pure, linear. */
export function readCheckerNumber(text: string): CheckerNumber | undefined {
  const m = JSON_NUMBER.exec(text);
  if (!m) return undefined;
  const [, minus, whole, fraction = '', expSign = '', expDigits] = m;
  let exponent = 0n;
  if (expDigits !== undefined) {
    const trimmed = expDigits.replace(/^0+/, '');
    // strconv.ParseInt of the exponent: more than 19 digits never fits 64 bits.
    if (trimmed.length > 19) return { readable: false };
    exponent = BigInt(trimmed || '0') * (expSign === '-' ? -1n : 1n);
    if (exponent > INT64_MAX || exponent < -INT64_MAX - 1n) return { readable: false };
  }
  const mantissa = `${whole}${fraction}`;
  const first = mantissa.search(/[1-9]/);
  if (first < 0) return { readable: true, sign: 0, digits: '', point: 0 };
  const scale = exponent - BigInt(fraction.length);
  if (scale > EXPONENT_LIMIT || scale < -EXPONENT_LIMIT) return { readable: false };
  const significant = mantissa.slice(first);
  // A loop, not /0+$/: that expression retries every zero of a run that does not end the text (quadratic).
  let end = significant.length;
  while (significant.charCodeAt(end - 1) === 0x30) end--;
  return {
    readable: true,
    sign: minus ? -1 : 1,
    digits: significant.slice(0, end),
    point: significant.length + Number(scale),
  };
}

export type Readable = Extract<CheckerNumber, { readable: true }>;

/** -1, 0 or 1 as a is below, equal to or above b, by exact value. */
export function compareCheckerNumbers(a: Readable, b: Readable): -1 | 0 | 1 {
  if (a.sign !== b.sign) return a.sign < b.sign ? -1 : 1;
  if (a.sign === 0) return 0;
  let magnitude: -1 | 0 | 1;
  if (a.point !== b.point) magnitude = a.point < b.point ? -1 : 1;
  // Same point: digit strings without trailing zeros compare as text (a prefix is the smaller).
  else magnitude = a.digits === b.digits ? 0 : a.digits < b.digits ? -1 : 1;
  return (a.sign * magnitude) as -1 | 0 | 1;
}

/** gojsonschema's checkJSONInteger: SetString succeeds and the value has no fraction. */
export function isCheckerInteger(n: CheckerNumber): boolean {
  return n.readable && (n.sign === 0 || n.point >= n.digits.length);
}

/** Whether a value of a parsed body is a JSON number: a double, or a number kept as its text (src/kit/raw-json.ts). */
export function isNumberValue(value: unknown): value is number | RawJson {
  return typeof value === 'number' || (value instanceof RawJson && JSON_NUMBER.test(value.text));
}

/**
 * Why the checker refuses `value` for `{"type": "number", "minimum": minimum}`, or undefined when it takes it. Pure.
 * A double is compared as a double: doubles are ordered as the shortest texts JavaScript writes for them, and a body's
 * number is a double only when it has 15 digits or fewer and no exponent (src/http/exact-json.ts, parseExact), so
 * its double has its exact sign, order and integer-ness. A number kept as its text is read exactly.
 */
export function refuseNumber(value: unknown, minimum?: number): string | undefined {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return 'must be a number';
    return minimum !== undefined && value < minimum ? `must be ${minimum} or more` : undefined;
  }
  const n = value instanceof RawJson ? readCheckerNumber(value.text) : undefined;
  if (n === undefined) return 'must be a number';
  if (minimum === undefined) return undefined;
  if (!n.readable) return `cannot be compared with ${minimum} by the CRM's checker (an exponent, less the digits after the point, beyond ±1000000)`;
  return compareCheckerNumbers(n, readCheckerNumber(String(minimum)) as Readable) < 0 ? `must be ${minimum} or more` : undefined;
}

/** Why the checker refuses `value` for `{"type": "integer"}`, or undefined. Pure. */
export function refuseInteger(value: unknown): string | undefined {
  const integer =
    typeof value === 'number' ? Number.isInteger(value) : value instanceof RawJson && isCheckerInteger(readCheckerNumber(value.text) ?? { readable: false });
  return integer ? undefined : 'must be an integer';
}
