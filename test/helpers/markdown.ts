/**
 * What the docs checks read in README.md and docs/*.md: fenced code blocks (with the HTML comment that may mark one
 * as a fragment), headings as GitHub anchors them, and relative links.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './source-files.js';

/** README.md and every docs/*.md, as repository-relative paths. */
export function markdownFiles(): string[] {
  const docs = readdirSync(join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

export const readRepoFile = (file: string) => readFileSync(join(repoRoot, file), 'utf8');

export interface CodeBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  text: string;
  /** The HTML comment on the line before the fence, if any (without `<!--` and `-->`). */
  note: string | undefined;
}

export function codeBlocks(file: string, markdown = readRepoFile(file)): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(\S*)/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.trim().startsWith(open[2]!) && l.trim().replace(/`/g, '') === '');
    const close = end === -1 ? lines.length : end;
    const note = /^<!--(.*)-->\s*$/.exec(lines[i - 1] ?? '')?.[1]?.trim();
    blocks.push({ file, line: i + 1, lang: open[3]!, text: lines.slice(i + 1, close).join('\n'), note });
    i = close;
  }
  return blocks;
}

/** The Markdown with its fenced code blocks blanked (their text is not prose: no links, no headings). */
export function withoutCode(markdown: string): string {
  let inside: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const fence = /^\s*(`{3,})/.exec(line)?.[1];
      if (fence && (inside === undefined || (line.trim().startsWith(inside) && line.trim().replace(/`/g, '') === ''))) {
        inside = inside === undefined ? fence : undefined;
        return '';
      }
      return inside === undefined ? line : '';
    })
    .join('\n');
}

/**
 * GitHub's anchor of a heading: lower case, markup characters and punctuation dropped (letters, digits, spaces,
 * `-` and `_` kept), each space a `-`; a repeated heading gets `-1`, `-2`, … in order.
 */
export function githubSlug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const m of withoutCode(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = githubSlug(m[1]!);
    const n = seen.get(slug) ?? 0;
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
    seen.set(slug, n + 1);
  }
  return anchors;
}
