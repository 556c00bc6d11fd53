/**
 * The rules of the CRM maker's event schemas as data (docs/events.md "Rules per kind"), and how the CRM's checker
 * reads them. The CRM validates with gojsonschema 1.2 (docs/events.md "Rules per kind"), so each rule here means
 * what it means there:
 * - `date-time` passes what Go's time.Parse reads with one of the checker's five layouts: an RFC 3339 date-time
 *   (upper-case `T`, `Z` or a ±hh:mm offset, fractions of a second after `.` or `,`, an hour of one or two digits),
 *   a date alone, or a time alone with or without an offset; day, month, hour, minute and second are range-checked.
 * - a format the checker does not know (the schemas' `"ipv4,ipv6"`) passes any string, the empty one included;
 * - a number is read on its text, exactly (checker-numbers.ts): `-1e-400` is below 0, `1e400` is a number;
 * - `minimum` holds numbers only: on a key that may be a string or a number, a string is never compared;
 * - `minLength` counts characters (code points), never bytes;
 * - a key the schema lists without a type passes any JSON value once present.
 * The relay builds its checks from this table (toZod) and the tests build their examples from it, so a rule
 * written once is applied and tested the same way.
 */
import { z } from 'zod';
import { RawJson } from '../kit/raw-json.js';
import { isNumberValue, refuseInteger, refuseNumber } from './checker-numbers.js';

export type Rule =
  | { type: 'string'; minLength?: number; pattern?: string; format?: 'date-time' | 'unknown'; enum?: readonly string[] }
  | { type: 'number'; minimum?: number }
  | { type: 'boolean' }
  /** `["string", "number"]`; a minimum holds the numbers only. */
  | { type: 'string-or-number'; minimum?: number }
  | { type: 'object'; nullable?: boolean }
  | { type: 'array'; items?: Rule }
  /** An object with required keys and checked keys; other keys pass (no schema of the CRM forbids them). */
  | { type: 'entry'; shape: Shape }
  /** Listed by the schema without a type: any value. */
  | { type: 'any' };

export interface Shape {
  required: readonly string[];
  fields: Readonly<Record<string, Rule>>;
}

// ---- the words the table is written with ----
export const str: Rule = { type: 'string' };
export const nonEmpty: Rule = { type: 'string', minLength: 1 };
export const dateTime: Rule = { type: 'string', format: 'date-time' };
/** `"format": "ipv4,ipv6"`: unknown to the checker, so any string. */
export const unknownFormat: Rule = { type: 'string', format: 'unknown' };
export const digits: Rule = { type: 'string', minLength: 1, pattern: '^[0-9]+$' };
export const num: Rule = { type: 'number' };
export const atLeastZero: Rule = { type: 'number', minimum: 0 };
export const bool: Rule = { type: 'boolean' };
export const stringOrNumber: Rule = { type: 'string-or-number' };
export const object: Rule = { type: 'object' };
export const objectOrNull: Rule = { type: 'object', nullable: true };
export const oneOf = (values: readonly string[]): Rule => ({ type: 'string', enum: values });
export const listOf = (items?: Rule): Rule => ({ type: 'array', ...(items ? { items } : {}) });
export const entryOf = (required: readonly string[], fields: Record<string, Rule>): Rule => ({ type: 'entry', shape: { required, fields } });

// ---- Go's time.Parse with the checker's layouts (15:04:05, 15:04:05Z07:00, 2006-01-02, RFC3339, RFC3339Nano) ----
const FRACTION = '(?:[.,]\\d+)?';
const ZONE = '(Z|[+-]\\d{2}:\\d{2})';
const GO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const GO_TIME = new RegExp(`^(\\d{1,2}):(\\d{2}):(\\d{2})${FRACTION}$`);
const GO_TIME_ZONE = new RegExp(`^(\\d{1,2}):(\\d{2}):(\\d{2})${FRACTION}${ZONE}$`);
const GO_DATE_TIME = new RegExp(`^(\\d{4})-(\\d{2})-(\\d{2})T(\\d{1,2}):(\\d{2}):(\\d{2})${FRACTION}${ZONE}$`);

const isLeap = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const daysIn = (m: number, y: number) => (m === 2 ? (isLeap(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31);
const dateOk = (y: string, m: string, d: string) => {
  const month = Number(m);
  const day = Number(d);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysIn(month, Number(y));
};
const timeOk = (h: string, m: string, s: string) => Number(h) < 24 && Number(m) < 60 && Number(s) < 60;
// Go allows offsets up to 24 hours and 60 minutes ("some people do write offsets of 24 hours").
const zoneOk = (zone: string | undefined) => zone === undefined || zone === 'Z' || (Number(zone.slice(1, 3)) <= 24 && Number(zone.slice(4, 6)) <= 60);

/** Whether gojsonschema 1.2 takes `value` as a `date-time`. Pure. */
export function isCheckerDateTime(value: string): boolean {
  let m = GO_DATE_TIME.exec(value);
  if (m) return dateOk(m[1]!, m[2]!, m[3]!) && timeOk(m[4]!, m[5]!, m[6]!) && zoneOk(m[7]);
  m = GO_DATE.exec(value);
  if (m) return dateOk(m[1]!, m[2]!, m[3]!);
  m = GO_TIME.exec(value) ?? GO_TIME_ZONE.exec(value);
  return m !== null && timeOk(m[1]!, m[2]!, m[3]!) && zoneOk(m[4]);
}

// ---- the table as zod checks ----
/** At least `n` code points: a string of 2n UTF-16 units has them whatever it holds, so only short ones are counted. */
const hasCharacters = (s: string, n: number) => s.length >= 2 * n || [...s].length >= n;

function stringCheck(rule: Extract<Rule, { type: 'string' }>): z.ZodType {
  if (rule.enum) return z.enum(rule.enum as [string, ...string[]], { error: `must be one of ${rule.enum.join(', ')}` });
  let check: z.ZodType<string> = z.string({ error: 'must be a string' });
  const { minLength, pattern, format } = rule;
  if (minLength !== undefined)
    check = check.refine((s) => hasCharacters(s, minLength), { error: minLength === 1 ? 'must not be empty' : `must be at least ${minLength} characters` });
  if (pattern !== undefined) {
    const re = new RegExp(pattern, 'u');
    check = check.refine((s) => re.test(s), { error: `must match ${pattern}` });
  }
  if (format === 'date-time')
    check = check.refine(isCheckerDateTime, { error: 'must be a date-time such as 2026-11-24T10:00:00Z or 2026-11-24T10:00:00+01:00' });
  return check;
}

/**
 * A number rule read on the number's text, as the checker reads it (checker-numbers.ts): a body's number is a
 * double, or a RawJson where a double would change it (src/http/exact-json.ts). The JSON Schema of the OpenAPI
 * document is given by hand, since zod has none for a custom check.
 */
const exactNumber = (minimum?: number) =>
  z
    .custom<number | RawJson>((v) => refuseNumber(v, minimum) === undefined, { error: (issue) => refuseNumber(issue.input, minimum) })
    .meta({ type: 'number', ...(minimum === undefined ? {} : { minimum }) });

/** `{"type": "integer"}` as the checker reads it: `1.0` and `1e400` are integers, `1.5` and `1e-400` are not. */
export const integer = z.custom<number | RawJson>((v) => refuseInteger(v) === undefined, { error: 'must be an integer' }).meta({ type: 'integer' });

/**
 * zod takes any JavaScript object for an object with keys, a RawJson number included; the CRM sees a number there.
 * So a RawJson is handed to the object check as the number it is, and refused as one.
 */
export function looseObject(shape: Record<string, z.ZodType>, error: string) {
  return z.preprocess((v) => (v instanceof RawJson ? Number(v.text) : v), z.looseObject(shape, { error }));
}

/** Builds the zod check of one rule. */
export function toZod(rule: Rule): z.ZodType {
  switch (rule.type) {
    case 'string':
      return stringCheck(rule);
    case 'number':
      return exactNumber(rule.minimum);
    case 'boolean':
      return z.boolean({ error: 'must be true or false' });
    case 'string-or-number': {
      const { minimum } = rule;
      return z.union([z.string(), exactNumber(minimum)], {
        error: (issue) => (isNumberValue(issue.input) ? refuseNumber(issue.input, minimum) : 'must be a string or a number'),
      });
    }
    case 'object': {
      const o = z.record(z.string(), z.unknown(), { error: rule.nullable ? 'must be an object or null' : 'must be an object' });
      return rule.nullable ? z.union([o, z.null()], { error: 'must be an object or null' }) : o;
    }
    case 'array':
      return z.array(rule.items ? toZod(rule.items) : z.unknown(), { error: 'must be an array' });
    case 'entry':
      return shapeToZod(rule.shape);
    case 'any':
      return z.unknown();
  }
}

/** A present key of any type: a required key whose type the schema does not fix. */
const present = z.custom<unknown>((v) => v !== undefined, { error: 'is required' });

/** An object with `shape`'s keys checked, the required ones present, and every other key passed through. */
export function shapeToZod(shape: Shape, extra: Record<string, z.ZodType> = {}): z.ZodType {
  const zodShape: Record<string, z.ZodType> = {};
  for (const [key, rule] of Object.entries(shape.fields)) {
    const check = rule.type === 'any' ? present : toZod(rule);
    zodShape[key] = shape.required.includes(key) ? check : rule.type === 'any' ? z.unknown() : check.optional();
  }
  for (const key of shape.required) zodShape[key] ??= present;
  for (const [key, check] of Object.entries(extra)) zodShape[key] = check.optional();
  return looseObject(zodShape, 'must be an object');
}
