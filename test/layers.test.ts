/**
 * Every import points down (docs/architecture.md, "The order of the areas"): a file may import from its own area and
 * from the areas listed below it, never from one above. The order is read from the fenced block in that document,
 * so the document and this check cannot drift apart. A cycle between folders fails too, inside an area as across areas.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot as root, sourceFiles } from './helpers/source-files.js';

/** The areas, top first: the first word of each line of the `layers` block in docs/architecture.md. */
export function declaredOrder(markdown: string): string[] {
  const block = /```layers\n([\s\S]*?)```/.exec(markdown);
  if (!block) throw new Error('docs/architecture.md has no ```layers block');
  return block[1]!
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0]!)
    .filter((word) => word.length > 0);
}

/** The area a repository path belongs to: the longest declared prefix (a folder, or a single file). */
export function areaOf(path: string, areas: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const area of areas) {
    const matches = area.endsWith('.ts') ? path === area : path === area || path.startsWith(`${area}/`);
    if (matches && (!best || area.length > best.length)) best = area;
  }
  return best;
}

/** Relative module specifiers of a file: static imports and exports, type-only ones, and dynamic import(). */
export function relativeImports(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g)) found.push(m[1]!);
  for (const m of text.matchAll(/\bimport\s*\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)) found.push(m[1]!);
  for (const m of text.matchAll(/(?:^|\n)\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/g)) found.push(m[1]!);
  return found;
}

const toTs = (path: string) => path.replace(/\.js$/, '.ts');
const order = declaredOrder(readFileSync(join(root, 'docs', 'architecture.md'), 'utf8'));
const files = [...sourceFiles('src'), ...sourceFiles('providers')].filter((f) => !f.endsWith('.d.ts'));
const edges = files.flatMap((file) =>
  relativeImports(readFileSync(join(root, file), 'utf8')).map((spec) => ({ from: file, to: toTs(normalize(join(dirname(file), spec))) })),
);

describe('the order of the areas', () => {
  it('reads the declared order and places paths in it', () => {
    const areas = declaredOrder('x\n```layers\nsrc/app.ts   composition\nsrc/sms\n\nproviders  plugins\n```\n');
    expect(areas).toEqual(['src/app.ts', 'src/sms', 'providers']);
    expect(areaOf('src/sms/claim.ts', areas)).toBe('src/sms');
    expect(areaOf('src/smsx/a.ts', areas)).toBeUndefined();
    expect(areaOf('providers/smpp/bind.ts', areas)).toBe('providers');
    expect(
      relativeImports(
        "import a from './a.js';\nimport type { B } from '../b.js';\nexport { c } from './c.js';\nconst d = await import('./d.js');\nimport './e.js';",
      ),
    ).toEqual(['./a.js', '../b.js', './c.js', './d.js', './e.js']);
  });

  it('places every source file in a declared area', () => {
    expect(files.filter((f) => areaOf(f, order) === undefined)).toEqual([]);
  });

  it('has no import that points up', () => {
    const upward = edges.flatMap(({ from, to }) => {
      const a = order.indexOf(areaOf(from, order)!);
      const b = order.indexOf(areaOf(to, order) ?? '');
      return b >= 0 && b < a ? [`${from} imports ${to}: ${order[a]} is below ${order[b]}`] : [];
    });
    expect(upward).toEqual([]);
  });

  it('has no cycle between folders', () => {
    const graph = new Map<string, Set<string>>();
    for (const { from, to } of edges) {
      const [a, b] = [dirname(from), dirname(to)];
      // A folder naming its own subfolder's parts (providers/index.ts registering providers/smpp/) is not a cycle
      // when those parts use the folder's interface; only edges between folders that do not contain each other count.
      if (a !== b && !b.startsWith(`${a}/`)) graph.set(a, (graph.get(a) ?? new Set()).add(b));
    }
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (node: string, path: string[]) => {
      if (state.get(node) === 'done') return;
      if (state.get(node) === 'open') {
        cycles.push([...path.slice(path.indexOf(node)), node].join(' -> '));
        return;
      }
      state.set(node, 'open');
      for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
      state.set(node, 'done');
    };
    for (const node of graph.keys()) visit(node, []);
    expect(cycles).toEqual([]);
  });
});
