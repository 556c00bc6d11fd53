/**
 * Finds the parts of a JSON text nested deeper than a limit, by one pass over the characters with an explicit
 * stack, before anything walks the parsed value: a body nesting 5,000 levels would otherwise overflow the call
 * stack of whatever recurses over it (JSON.stringify of a stored activity, a JSON tree parser). V8's JSON.parse
 * itself does not recurse, but nearly everything after it does.
 * The text need not be valid JSON (JSON.parse judges that); brackets inside strings are skipped.
 */

export interface TooDeep {
  /** The over-deep value's text: [start, end) in the scanned text. */
  start: number;
  end: number;
  /** Keys and array indexes from the root to the over-deep value. */
  path: Array<string | number>;
}

import { endOfContainer, walkJson } from './json-walk.js';

/**
 * Whether `text` holds at least `maxDepth + 1` opening brackets: a value can only nest as deep as it has brackets
 * (brackets inside strings only make this say yes more often). A single SMS message has two or three, so the
 * character-by-character pass of findTooDeep is skipped for nearly every body; indexOf runs natively.
 */
export function mayNestDeeperThan(text: string, maxDepth: number): boolean {
  let opens = 0;
  for (let at = text.indexOf('{'); at >= 0; at = text.indexOf('{', at + 1)) if (++opens > maxDepth) return true;
  for (let at = text.indexOf('['); at >= 0; at = text.indexOf('[', at + 1)) if (++opens > maxDepth) return true;
  return false;
}

/**
 * Every outermost object or array that opens deeper than `maxDepth` levels (the root value is level 1), in text
 * order. Nothing inside a found value is looked at again, so the pass stays linear in the text.
 */
export function findTooDeep(text: string, maxDepth: number): TooDeep[] {
  const found: TooDeep[] = [];
  if (!mayNestDeeperThan(text, maxDepth)) return found;
  walkJson(text, {
    // A path names at most 80 characters of each key: enough to find it, bounded for a key of megabytes.
    key: (text, open, end) => text.slice(open + 1, Math.min(end - 1, open + 81)),
    open(text, at, depth, path) {
      if (depth < maxDepth) return -1;
      const end = endOfContainer(text, at);
      found.push({ start: at, end, path: path.slice() });
      return end;
    },
  });
  return found;
}

/** `activity.meta[0].a`, shortened in the middle past ~80 characters (a 64-level path is long). */
export function describePath(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out ? `.${key}` : key;
  if (!out) return 'body';
  return out.length > 80 ? `${out.slice(0, 40)}…${out.slice(-37)}` : out;
}

/** The text with each found value replaced by `null`: what remains is at most `maxDepth` deep and as valid as before. */
export function withoutTooDeep(text: string, found: readonly TooDeep[]): string {
  let out = '';
  let from = 0;
  for (const f of found) {
    out += `${text.slice(from, f.start)}null`;
    from = f.end;
  }
  return out + text.slice(from);
}
