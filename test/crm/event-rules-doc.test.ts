/**
 * docs/events.md "Rules per kind" is the rules table of src/crm/event-catalogue.ts in words: this test renders the
 * table and fails when the page says anything else. `WRITE_EVENT_RULES=1 npx vitest run test/crm/event-rules-doc.test.ts`
 * rewrites the section after a rule changed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { eventCatalogue } from '../../src/crm/event-catalogue.js';
import type { Rule, Shape } from '../../src/crm/event-rules.js';

function ruleText(rule: Rule): string {
  switch (rule.type) {
    case 'string': {
      if (rule.enum) return `one of ${rule.enum.map((v) => `\`${v}\``).join(', ')}`;
      if (rule.pattern) return `string matching \`${rule.pattern}\``;
      if (rule.format === 'date-time') return 'date-time';
      if (rule.format === 'unknown') return 'any string (format unknown to the checker)';
      return rule.minLength ? `string of at least ${rule.minLength} character` : 'string';
    }
    case 'number':
      return rule.minimum === undefined ? 'number' : `number ≥ ${rule.minimum}`;
    case 'boolean':
      return 'boolean';
    case 'string-or-number':
      return rule.minimum === undefined ? 'string or number' : `string, or number ≥ ${rule.minimum}`;
    case 'object':
      return rule.nullable ? 'object or null' : 'object (not null)';
    case 'array':
      return rule.items ? `list of ${ruleText(rule.items)}` : 'list';
    case 'entry':
      return `{${shapeText(rule.shape)}}`;
    case 'any':
      return 'any value';
  }
}

function shapeText(shape: Shape): string {
  const keys = [...new Set([...shape.required, ...Object.keys(shape.fields)])];
  return keys
    .map(
      (k) =>
        `${shape.required.includes(k) ? '**' : ''}\`${k}\`${shape.required.includes(k) ? '**' : ''}: ${shape.fields[k] ? ruleText(shape.fields[k]!) : 'any value'}`,
    )
    .join('; ');
}

const START = '<!-- rules per kind: generated from src/crm/event-catalogue.ts, checked by test/crm/event-rules-doc.test.ts -->';
const END = '<!-- end of rules per kind -->';

function rendered(): string {
  const lines = eventCatalogue
    .filter((row) => row.rules)
    .map((row) => `- \`${row.kind}\` (\`${row.queueType ?? row.type}\`, ${row.method} ${row.path}): ${shapeText(row.rules!)}`);
  return [START, ...lines, END].join('\n');
}

it('docs/events.md lists every rule of every kind, as the relay applies them', () => {
  const path = 'docs/events.md';
  const page = readFileSync(path, 'utf8');
  const from = page.indexOf(START);
  const to = page.indexOf(END);
  expect(from, `${path} has no rules section`).toBeGreaterThanOrEqual(0);
  const current = page.slice(from, to + END.length);
  if (process.env.WRITE_EVENT_RULES === '1') writeFileSync(path, page.slice(0, from) + rendered() + page.slice(to + END.length));
  else expect(current).toBe(rendered());
});
