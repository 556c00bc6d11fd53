/**
 * Comments cite documents in this repository (docs/architecture.md, "Where new code goes"): a citation of a document
 * that is not shipped, or of a section our docs do not have, fails here naming file and line.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot as root, sourceFiles } from './helpers/source-files.js';

/** Names of documents that live outside this repository. */
const OUTSIDE = /\bDESIGN §|\bSTYLE ?[:"]|\bHELPERS\/|(?<!docs\/)providers\.md|user-pain|operator-interface|crm-public-docs|\bissue \d+/;

/** The section numbers (1, 1.1, 0.3) and letters (A, B, C) a doc defines, in headings or bold list labels. */
export function sectionsOf(markdown: string): Set<string> {
  const found = new Set<string>();
  for (const m of markdown.matchAll(/^#+ ([0-9A-Z](?:\.[0-9]+)*)\.? /gm)) found.add(m[1]!);
  for (const m of markdown.matchAll(/\*\*([0-9]+(?:\.[0-9]+)+)\*\*/g)) found.add(m[1]!);
  return found;
}

const all = ['src', 'providers', 'test', 'bench'].flatMap((dir) => sourceFiles(dir));

describe('citations', () => {
  it('finds sections in headings and labels', () => {
    expect([...sectionsOf('## 1. Flows\n### 2.4 Sig\n### C. Headers\n- **0.3** text\n')].sort()).toEqual(['0.3', '1', '2.4', 'C']);
  });

  it('names only documents that are in the repository', () => {
    const outside = all.flatMap((file) =>
      file === join('test', 'citations.test.ts')
        ? []
        : readFileSync(join(root, file), 'utf8')
            .split('\n')
            .flatMap((line, i) => (OUTSIDE.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(outside).toEqual([]);
  });

  it('cites only documents that exist', () => {
    const missing = all.flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          [...line.matchAll(/\b((?:docs|bench)\/[a-z0-9-]+\.md|bench\/README\.md)/gi)]
            .filter((m) => !existsSync(join(root, m[1]!)))
            .map((m) => `${file}:${i + 1}: ${m[1]}`),
        ),
    );
    expect(missing).toEqual([]);
  });

  it('cites only sections the docs have', () => {
    const docs = new Map(['providers', 'design', 'crm-interface'].map((name) => [name, sectionsOf(readFileSync(join(root, 'docs', `${name}.md`), 'utf8'))]));
    const missing = all.flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          [...line.matchAll(/docs\/(providers|design|crm-interface)\.md §([0-9A-Z](?:\.[0-9]+)*)/g)]
            .filter((m) => !docs.get(m[1]!)!.has(m[2]!))
            .map((m) => `${file}:${i + 1}: docs/${m[1]}.md §${m[2]}`),
        ),
    );
    expect(missing).toEqual([]);
  });
});
