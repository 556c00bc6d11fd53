/**
 * A table test per event kind, built from its rules (src/crm/event-rules.ts): for every rule of every key, nested
 * ones included, an example just outside the rule is refused naming the key, and examples on its boundary are
 * taken. The examples are written here from what each kind of rule means to the CRM's checker (gojsonschema 1.2,
 * docs/events.md "Rules per kind"), not from the zod code the relay builds, so a wrong translation fails here.
 * The maker's facts themselves are held by example in test/contract/crm-event-rules.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { eventCatalogue, eventSchema } from '../../src/crm/event-catalogue.js';
import { isCheckerDateTime, type Rule, type Shape } from '../../src/crm/event-rules.js';
import { describeFirstIssue } from '../../src/http/zod-issue.js';

type Case = { label: string; value: unknown };

/** Values the checker takes for `rule`, the first of them on its boundary where it has one. */
function taken(rule: Rule): Case[] {
  switch (rule.type) {
    case 'string':
      if (rule.enum) return rule.enum.map((v) => ({ label: `"${v}"`, value: v }));
      if (rule.pattern) return [{ label: 'one digit', value: '0' }];
      if (rule.format === 'date-time')
        return [
          { label: 'an RFC 3339 date-time', value: '2026-11-24T10:00:00Z' },
          { label: 'a one-digit hour, a comma fraction, an offset of 24 hours', value: '2024-02-29T1:00:00,123456789123+24:00' },
          { label: 'a date alone', value: '2026-11-24' },
          { label: 'a time alone', value: '23:59:59' },
          { label: 'a time with an offset', value: '00:00:00-01:00' },
        ];
      if (rule.format === 'unknown')
        return [
          { label: 'the empty string', value: '' },
          { label: 'text that is no address', value: 'behind a proxy' },
        ];
      if (rule.minLength) return [{ label: `${rule.minLength} character(s), one of them not ASCII`, value: 'é'.padEnd(rule.minLength, 'x') }];
      return [{ label: 'the empty string', value: '' }];
    case 'number':
      return rule.minimum !== undefined
        ? [
            { label: `exactly ${rule.minimum}`, value: rule.minimum },
            { label: 'a fraction above', value: rule.minimum + 0.01 },
          ]
        : [
            { label: 'a negative fraction', value: -1.5 },
            { label: 'zero', value: 0 },
          ];
    case 'boolean':
      return [
        { label: 'true', value: true },
        { label: 'false', value: false },
      ];
    case 'string-or-number':
      return [
        { label: 'a string', value: 'v-1' },
        { label: 'a string of a negative number', value: '-1' },
        { label: 'a number on the boundary', value: rule.minimum ?? -1 },
      ];
    case 'object':
      return rule.nullable
        ? [
            { label: 'an empty object', value: {} },
            { label: 'null', value: null },
          ]
        : [{ label: 'an empty object', value: {} }];
    case 'array':
      return rule.items
        ? [{ label: 'an empty list', value: [] }, ...taken(rule.items).map((c) => ({ label: `a list of ${c.label}`, value: [c.value] }))]
        : [{ label: 'an empty list', value: [] }];
    case 'entry':
      return [{ label: 'its required keys', value: minimal(rule.shape) }];
    case 'any':
      return [
        { label: 'null', value: null },
        { label: 'a string', value: 'x' },
      ];
  }
}

/** Values just outside `rule`. */
function refused(rule: Rule): Case[] {
  switch (rule.type) {
    case 'string': {
      const cases: Case[] = [
        { label: 'a number', value: 1 },
        { label: 'null', value: null },
      ];
      if (rule.enum)
        cases.push({
          label: 'a value in another letter case',
          value: rule.enum[0]!.toUpperCase() === rule.enum[0] ? rule.enum[0]!.toLowerCase() : rule.enum[0]!.toUpperCase(),
        });
      if (rule.enum) cases.push({ label: 'a value outside the list', value: `${rule.enum[0]}x` });
      if (rule.minLength) cases.push({ label: `${rule.minLength - 1} characters`, value: 'x'.repeat(rule.minLength - 1) });
      if (rule.pattern) cases.push({ label: 'digits and a letter', value: '12a' }, { label: 'digits and a new line', value: '12\n' });
      if (rule.format === 'date-time')
        cases.push(
          { label: 'a date-time without offset', value: '2026-11-24T10:00:00' },
          { label: 'a lower-case t', value: '2026-11-24t10:00:00Z' },
          { label: 'an offset without colon', value: '2026-11-24T10:00:00+0100' },
          { label: 'the 29th of February of a common year', value: '2025-02-29T10:00:00Z' },
          { label: 'hour 24', value: '2026-11-24T24:00:00Z' },
          { label: 'second 60', value: '2026-11-24T10:00:60Z' },
          { label: 'an offset of 25 hours', value: '2026-11-24T10:00:00+25:00' },
          { label: 'a space for T', value: '2026-11-24 10:00:00Z' },
        );
      return cases;
    }
    case 'number': {
      const cases: Case[] = [
        { label: 'a number as text', value: '1' },
        { label: 'null', value: null },
      ];
      if (rule.minimum !== undefined) cases.push({ label: 'just below the minimum', value: rule.minimum - 0.01 });
      return cases;
    }
    case 'boolean':
      return [
        { label: 'text', value: 'true' },
        { label: 'a number', value: 1 },
      ];
    case 'string-or-number': {
      const cases: Case[] = [
        { label: 'a boolean', value: true },
        { label: 'null', value: null },
      ];
      if (rule.minimum !== undefined) cases.push({ label: 'a number just below the minimum', value: rule.minimum - 0.01 });
      return cases;
    }
    case 'object':
      return rule.nullable
        ? [
            { label: 'a list', value: [] },
            { label: 'text', value: 'x' },
          ]
        : [
            { label: 'a list', value: [] },
            { label: 'null', value: null },
          ];
    case 'array':
      return [
        { label: 'an object', value: {} },
        ...(rule.items ? refused(rule.items).map((c) => ({ label: `a list holding ${c.label}`, value: [c.value] })) : []),
      ];
    case 'entry':
      return [{ label: 'text', value: 'x' }];
    case 'any':
      return [];
  }
}

/** The required keys of a shape, each with its first taken value. */
function minimal(shape: Shape): Record<string, unknown> {
  return Object.fromEntries(shape.required.map((key) => [key, shape.fields[key] ? taken(shape.fields[key]!)[0]!.value : 'any']));
}

interface Row {
  label: string;
  body: Record<string, unknown>;
  /** The path the refusal must name. */
  field?: string;
}

/** Every example of a shape, nested shapes (entries in lists) included, as whole bodies built around `wrap`. */
function examples(shape: Shape, wrap: (inner: Record<string, unknown>) => Record<string, unknown>, prefix: string): { taken: Row[]; refused: Row[] } {
  const base = minimal(shape);
  const out = { taken: [] as Row[], refused: [] as Row[] };
  out.taken.push({ label: `${prefix || 'body'} with its required keys only`, body: wrap(base) });
  for (const key of shape.required) {
    const { [key]: _gone, ...rest } = base;
    out.refused.push({ label: `${prefix}${key} missing`, body: wrap(rest), field: `${prefix}${key}` });
  }
  for (const [key, rule] of Object.entries(shape.fields)) {
    const path = `${prefix}${key}`;
    for (const c of taken(rule)) out.taken.push({ label: `${path}: ${c.label}`, body: wrap({ ...base, [key]: c.value }) });
    for (const c of refused(rule)) {
      const nested = rule.type === 'array' && rule.items && Array.isArray(c.value);
      out.refused.push({ label: `${path}: ${c.label}`, body: wrap({ ...base, [key]: c.value }), field: nested ? `${path}.0` : path });
    }
    // An entry in a list: its own rules, in a list of one.
    if (rule.type === 'array' && rule.items?.type === 'entry') {
      const inner = examples(rule.items.shape, (entry) => wrap({ ...base, [key]: [entry] }), `${path}.0.`);
      out.taken.push(...inner.taken);
      out.refused.push(...inner.refused);
    }
  }
  return out;
}

const withRules = eventCatalogue.filter((row) => row.rules);

describe('the checker’s date-time', () => {
  it.each([
    ['2026-11-24T10:00:00Z', true],
    ['2026-11-24T10:00:00.5+01:00', true],
    ['2026-11-24T9:00:00Z', true],
    ['2026-11-24', true],
    ['10:00:00', true],
    ['10:00:00Z', true],
    ['2000-02-29T00:00:00Z', true],
    ['1900-02-29T00:00:00Z', false],
    ['2026-11-24T10:00Z', false],
    ['2026-11-24T10:00:00.Z', false],
    ['2026-1-24T10:00:00Z', false],
    ['', false],
    ['2026-11-24T10:00:00z', false],
    ['10:00', false],
  ])('%s: %s', (value, ok) => {
    expect(isCheckerDateTime(value)).toBe(ok);
  });
});

describe.each(withRules.map((row) => [row.kind, row] as const))('%s: every rule, both ways', (kind, row) => {
  const schema = eventSchema(kind);
  const { taken: takenRows, refused: refusedRows } = examples(row.rules!, (b) => b, '');

  it.each(takenRows.map((r) => [r.label, r] as const))('takes %s', (_label, r) => {
    const parsed = schema.safeParse(r.body);
    expect(parsed.success, parsed.success ? '' : describeFirstIssue(parsed.error, r.body)).toBe(true);
  });

  it.each(refusedRows.map((r) => [r.label, r] as const))('refuses %s, naming the field', (_label, r) => {
    const parsed = schema.safeParse(r.body);
    expect(parsed.success).toBe(false);
    if (!parsed.success) expect(describeFirstIssue(parsed.error, r.body)).toMatch(new RegExp(`^${r.field!.replaceAll('.', '\\.')}(\\.|:)`));
  });

  it('passes keys outside its rules through, whatever they hold', () => {
    const body = { ...examples(row.rules!, (b) => b, '').taken[0]!.body, added_by_the_crm_later: [null, { a: -1 }] };
    const parsed = schema.safeParse(body);
    expect(parsed.success).toBe(true);
  });
});
