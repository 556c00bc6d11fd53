/**
 * Finds an object key given twice in a JSON text, in one pass without recursion (like json-depth.ts).
 *
 * JSON.parse keeps the last copy of a repeated key, while a tree parser such as exact-json.ts's keeps the first
 * (jsonc-parser's findNodeAtLocation), so a body with `"id"` twice was validated with one value and echoed with
 * the other (docs/public-doors.md). Refusing such a body is the only way both readers see the same thing.
 * Keys are compared as JSON.parse would decode them: `"a"` and `"\u0061"` are the same key.
 * The text need not be valid JSON (JSON.parse judges that afterwards).
 */
import { endOfString } from './json-depth.js';

export interface DuplicateKey {
  /** Keys and array indexes from the root to the object holding the key twice. */
  path: Array<string | number>;
  key: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** A key's text as JSON.parse would read it; as written when it is not a valid string literal. */
function decodeKey(text: string, open: number, end: number): string {
  const raw = text.slice(open + 1, end - 1);
  if (raw.indexOf(String.fromCharCode(BACKSLASH)) < 0) return raw;
  try {
    return JSON.parse(text.slice(open, end)) as string;
  } catch {
    return raw;
  }
}

/** Up to `limit` repeated keys, in text order (a key given three times counts twice). Linear in the text. */
export function findDuplicateKeys(text: string, limit = Infinity): DuplicateKey[] {
  const found: DuplicateKey[] = [];
  const keys: Array<Set<string> | null> = [];
  const path: Array<string | number> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = endOfString(text, i);
      if (expectKey) {
        const key = decodeKey(text, i, end);
        const seen = keys[keys.length - 1]!;
        if (seen.has(key)) {
          found.push({ path: path.slice(0, -1), key });
          if (found.length >= limit) return found;
        }
        seen.add(key);
        path[path.length - 1] = key;
        expectKey = false;
      }
      i = end - 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      keys.push(c === OPEN_OBJECT ? new Set() : null);
      path.push(c === OPEN_OBJECT ? '' : 0);
      expectKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      keys.pop();
      path.pop();
      expectKey = false;
    } else if (c === COMMA && keys.length > 0) {
      const top = keys.length - 1;
      if (keys[top]) expectKey = true;
      else path[top] = (path[top] as number) + 1;
    }
  }
  return found;
}
