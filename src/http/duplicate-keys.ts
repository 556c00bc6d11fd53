/**
 * Finds an object key given twice in a JSON text, in one pass without recursion (json-walk.ts).
 *
 * JSON.parse keeps the last copy of a repeated key, while a tree parser such as exact-json.ts's keeps the first
 * (jsonc-parser's findNodeAtLocation), so a body with `"id"` twice was validated with one value and echoed with
 * the other (docs/public-doors.md). Refusing such a body is the only way both readers see the same thing.
 * Keys are compared as JSON.parse would decode them: `"a"` and `"\u0061"` are the same key.
 * The text need not be valid JSON (JSON.parse judges that afterwards).
 */
import { walkJson } from './json-walk.js';

export interface DuplicateKey {
  /** Keys and array indexes from the root to the object holding the key twice. */
  path: Array<string | number>;
  key: string;
}

/** A key's text as JSON.parse would read it; as written when it is not a valid string literal. */
export function decodeKey(text: string, open: number, end: number): string {
  const raw = text.slice(open + 1, end - 1);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(text.slice(open, end)) as string;
  } catch {
    return raw;
  }
}

/** Up to `limit` repeated keys, in text order (a key given three times counts twice). Linear in the text. */
export function findDuplicateKeys(text: string, limit = Infinity): DuplicateKey[] {
  const found: DuplicateKey[] = [];
  // The keys seen in each open container; null for an array.
  const seen: Array<Set<string> | null> = [];
  walkJson(text, {
    key(text, open, end, path) {
      const key = decodeKey(text, open, end);
      const keys = seen[seen.length - 1]!;
      if (keys.has(key)) {
        found.push({ path: path.slice(0, -1), key });
        if (found.length >= limit) return null;
      }
      keys.add(key);
      return key;
    },
    enter: (isObject) => seen.push(isObject ? new Set() : null),
    exit: () => seen.pop(),
  });
  return found;
}
