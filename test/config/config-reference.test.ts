/**
 * docs/configuration.md's per-key reference is generated from the configuration schema (scripts/config-reference.ts):
 * these fail when the document is stale, when a key has no description, and when the layout rules go wrong.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allowedOf, BEGIN_MARKER, END_MARKER, renderConfigReference, typeOf, withReference } from '../../scripts/config-reference.js';
import { repoRoot } from '../helpers/source-files.js';

const documentPath = join(repoRoot, 'docs', 'configuration.md');

describe('the configuration reference', () => {
  const rendered = renderConfigReference();

  it('is the part of docs/configuration.md between its markers', () => {
    const document = readFileSync(documentPath, 'utf8');
    const current = document.slice(document.indexOf(BEGIN_MARKER), document.indexOf(END_MARKER) + END_MARKER.length);
    if (current !== rendered) expect.fail('docs/configuration.md is stale: run `npm run docs:config` and commit the result');
  });

  it('describes every key', () => {
    const rows = rendered.split('\n').filter((line) => line.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(150);
    expect(rows.filter((row) => row.endsWith('|  |'))).toEqual([]);
  });

  it('names every configuration section and provider type', () => {
    for (const heading of ['### `server`', '### `providers`', '### `log`', '### `type: smpp`', '### `type: route`', '`crm.integration.events.<event>.topic`']) {
      expect(rendered).toContain(heading);
    }
  });

  it('writes types and allowed values in words', () => {
    const cases: Array<[Parameters<typeof typeOf>[0], string, string]> = [
      [{ type: 'integer', minimum: 0, maximum: 65_535 }, 'integer', '0–65535'],
      [{ type: 'integer', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER }, 'integer', '> 0'],
      [{ type: 'string', enum: ['a', 'b'] }, 'string', '`a`, `b`'],
      [{ type: ['string', 'number'], 'x-type': 'duration' }, 'duration', ''],
      [{ type: 'string', format: 'uri' }, 'URL', ''],
      [{ type: 'array', items: { type: 'string' }, minItems: 1 }, 'list of string', 'at least 1'],
      [{ type: 'object', additionalProperties: { type: 'string' } }, 'map of string', ''],
      [
        {
          anyOf: [
            { type: 'string', const: 'auto' },
            { type: 'integer', minimum: 1, maximum: 64 },
          ],
        },
        '`auto` or integer',
        '`auto`; 1–64',
      ],
      [{ type: 'string', minLength: 16 }, 'string', 'at least 16 characters'],
      [{ type: 'string', pattern: '^a|b$' }, 'string', 'matches `^a|b$`'],
    ];
    for (const [node, type, allowed] of cases) expect([typeOf(node), allowedOf(node)]).toEqual([type, allowed]);
  });

  it('replaces only the part between the markers', () => {
    expect(withReference(`head\n${BEGIN_MARKER}\nold\n${END_MARKER}\ntail`, 'new')).toBe('head\nnew\ntail');
    expect(() => withReference('no markers', 'new')).toThrow(/markers/);
  });
});
