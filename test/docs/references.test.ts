/**
 * What README.md and docs/*.md point to exists: every relative link and `file.md#anchor` resolves to a
 * file and, where it names one, to a heading (anchors as GitHub makes them); every section named in quotes after a
 * document (`docs/operations.md "Memory"`) is a heading of that document; every configuration key named in
 * backticks (`sms.default_region`) is a key of the schema (src/config/schema.ts, walked as zod writes it out for
 * the reference in docs/configuration.md). test/citations.test.ts holds the code's comments to the same documents.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { REMOVED_KEYS } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';
import { anchorsOf, githubSlug, markdownFiles, readRepoFile, withoutCode } from '../helpers/markdown.js';
import { repoRoot } from '../helpers/source-files.js';

const files = markdownFiles();

/** Each line of a document's prose (code blocks blanked), with its number. */
function proseLines(file: string): Array<{ line: number; text: string }> {
  return withoutCode(readRepoFile(file))
    .split('\n')
    .map((text, i) => ({ line: i + 1, text }));
}

/** A path written in `file`: relative to the file's folder, else (`docs/…`, `bench/…`, `README`) to the root. */
function resolvePath(file: string, written: string): string | undefined {
  const path = written === 'README' ? 'README.md' : written;
  for (const candidate of [normalize(join(dirname(file), path)), normalize(path)]) {
    if (!candidate.startsWith('..') && existsSync(join(repoRoot, candidate))) return candidate;
  }
  return undefined;
}

const headingsCache = new Map<string, string[]>();
/** The heading texts of a Markdown file, markup removed. */
function headingsOf(file: string): string[] {
  if (!headingsCache.has(file)) {
    const headings = [...withoutCode(readRepoFile(file)).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map((m) => m[1]!.replace(/`/g, ''));
    headingsCache.set(file, headings);
  }
  return headingsCache.get(file)!;
}

describe('githubSlug', () => {
  it.each([
    ['Connecting the CRM', 'connecting-the-crm'],
    ['`sql` (default): the data lives in the gateway’s database', 'sql-default-the-data-lives-in-the-gateways-database'],
    ['Memory, third round (measured): the old generation’s growth', 'memory-third-round-measured-the-old-generations-growth'],
    ['2026-11-26: CPU per event', '2026-11-26-cpu-per-event'],
  ])('%s → #%s', (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug);
  });

  it('numbers a repeated heading', () => {
    expect([...anchorsOf('# A\n## B\n## B\n```sh\n# not a heading\n```\n')]).toEqual(['a', 'b', 'b-1']);
  });
});

describe('links and section references in README.md and docs/', () => {
  it('finds the documents', () => {
    expect(files).toContain('README.md');
    expect(files).toContain('docs/connecting-the-crm.md');
  });

  it('links only to files that exist, and to headings they have', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const { line, text } of proseLines(file)) {
        // [text](target) and bare `file.md#anchor`; absolute URLs and mail are not ours to check.
        const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
        targets.push(...[...text.matchAll(/(?<![\w/(.-])((?:[\w-]+\/)*[\w-]+\.md#[\w-]+)/g)].map((m) => m[1]!));
        for (const target of targets) {
          if (/^[a-z][a-z+.-]*:/i.test(target)) continue;
          checked++;
          const [path = '', anchor] = target.split('#');
          const resolved = path === '' ? file : resolvePath(file, decodeURIComponent(path));
          if (!resolved) {
            broken.push(`${file}:${line}: ${target} (no such file)`);
            continue;
          }
          if (anchor === undefined) continue;
          if (statSync(join(repoRoot, resolved)).isDirectory() || !resolved.endsWith('.md'))
            broken.push(`${file}:${line}: ${target} (an anchor in a non-Markdown target)`);
          else if (!anchorsOf(readRepoFile(resolved)).has(anchor)) broken.push(`${file}:${line}: ${target} (${resolved} has no heading #${anchor})`);
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it('names in quotes only sections the named document has', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const { line, text } of proseLines(file)) {
        // `docs/operations.md "Memory"`, `[events.md](events.md) "Rules per kind"`, `README.md, "Connecting the CRM"`.
        for (const m of text.matchAll(/((?:[\w.-]+\/)*[\w.-]+\.md|\bREADME)\)?,? "([^"]+)"/g)) {
          checked++;
          const resolved = resolvePath(file, m[1]!);
          const section = m[2]!.replace(/`/g, '');
          if (!resolved) broken.push(`${file}:${line}: ${m[1]} (no such file)`);
          else if (!headingsOf(resolved).some((h) => h.startsWith(section))) broken.push(`${file}:${line}: ${resolved} has no section "${section}"`);
        }
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(broken).toEqual([]);
  });
});

/** The subset of JSON Schema that zod writes for the configuration (as scripts/config-reference.ts reads it). */
interface Node {
  properties?: Record<string, Node>;
  additionalProperties?: Node | boolean;
  anyOf?: Node[];
  oneOf?: Node[];
}

const schemaRoot = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Node;

/** Whether the dotted key is in the schema; `<name>`, `<event>` (any placeholder) stand for a map's or a list of keys' any key. */
function schemaHas(node: Node, segments: string[]): boolean {
  if (segments.length === 0) return true;
  const alternatives = [node, ...(node.anyOf ?? []), ...(node.oneOf ?? [])];
  const [segment, ...rest] = segments as [string, ...string[]];
  return alternatives.some((n) => {
    if (n !== node && schemaHas(n, segments)) return true;
    const children: Node[] = [];
    if (/^<[a-z_]+>$/.test(segment)) children.push(...Object.values(n.properties ?? {}));
    else if (n.properties && Object.hasOwn(n.properties, segment)) children.push(n.properties[segment]!);
    if (typeof n.additionalProperties === 'object') children.push(n.additionalProperties);
    return children.some((child) => schemaHas(child, rest));
  });
}

/** Sections whose backticked dotted names are something else than configuration keys, by document. */
const NOT_KEYS = new Map([
  // "Names in `code` are span names", with the gateway's own attributes `sms.*`, `crm.*` and `ledger.step`.
  ['docs/tracing.md', 'What is traced'],
]);

describe('configuration keys named in README.md and docs/', () => {
  const sections = Object.keys(schemaRoot.properties!);

  it('walks the schema', () => {
    expect(schemaHas(schemaRoot, ['sms', 'default_region'])).toBe(true);
    expect(schemaHas(schemaRoot, ['providers', '<name>', 'webhook_secret'])).toBe(true);
    expect(schemaHas(schemaRoot, ['providers', 'sandbox', 'receipt_secret'])).toBe(true);
    expect(schemaHas(schemaRoot, ['crm', 'integration', 'events', 'device_link', 'type'])).toBe(true);
    expect(schemaHas(schemaRoot, ['sms', 'default_regoin'])).toBe(false);
    expect(schemaHas(schemaRoot, ['providers', '<name>', 'no_such_key'])).toBe(false);
  });

  it('are keys of the schema, or keys it names as removed', () => {
    const unknown: string[] = [];
    let checked = 0;
    for (const file of files) {
      let section = '';
      for (const { line, text } of proseLines(file)) {
        section = /^#{1,6}\s+(.+)$/.exec(text)?.[1] ?? section;
        if (NOT_KEYS.get(file) === section) continue;
        for (const m of text.matchAll(/`([a-z_]+(?:\.(?:[a-z0-9_]+|<[a-z_]+>))+)(?:: [^`]*)?`/g)) {
          const segments = m[1]!.split('.');
          // A backticked dotted word whose first part is no section of config.yaml is a metric or a module; a file
          // name (`sms.yml`) ends in its extension.
          if (!sections.includes(segments[0]!) || /\.(ya?ml|json|md|ts|js)$/.test(m[1]!)) continue;
          checked++;
          if (!schemaHas(schemaRoot, segments) && !Object.hasOwn(REMOVED_KEYS, m[1]!)) unknown.push(`${file}:${line}: ${m[1]}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(unknown).toEqual([]);
  });
});
