/**
 * One pass over the structure of a JSON text, without recursion and without parsing it: strings are skipped whole,
 * and the path (keys and array indexes) to where the pass stands is kept on an explicit stack. The depth limit
 * (json-depth.ts) and the repeated-key check (duplicate-keys.ts) are both this walk with their own hooks, so a body
 * nesting 5,000 levels costs them a loop, never a deep call stack. The text need not be valid JSON (JSON.parse
 * judges that afterwards); the walk is linear in the text.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** The index just after the string starting at `open` (a quote), or the text's length if it never closes. */
export function endOfString(text: string, open: number): number {
  let at = open + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    at = quote + 1;
  }
}

/** The index just after the bracket closing the container opened at `open`, or the text's length. */
export function endOfContainer(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = endOfString(text, i) - 1;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) return i + 1;
  }
  return text.length;
}

export interface JsonWalk {
  /**
   * A key of the innermost object, its string literal at text[open, end); `path` still ends with the previous key.
   * Answers the name the path records for it, or null to end the walk.
   */
  key(text: string, open: number, end: number, path: ReadonlyArray<string | number>): string | null;
  /** An object or array opens at `at` with `depth` containers around it: the index to go on from to skip it, or -1 to enter. */
  open?(text: string, at: number, depth: number, path: ReadonlyArray<string | number>): number;
  /** An object (true) or array (false) was entered. */
  enter?(isObject: boolean): void;
  /** The innermost container closed. */
  exit?(): void;
}

export function walkJson(text: string, walk: JsonWalk): void {
  // An open object's entry is its current key (a string), an array's its current index: the path tells them apart.
  const path: Array<string | number> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = endOfString(text, i);
      if (expectKey) {
        const name = walk.key(text, i, end, path);
        if (name === null) return;
        path[path.length - 1] = name;
        expectKey = false;
      }
      i = end - 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const skipTo = walk.open ? walk.open(text, i, path.length, path) : -1;
      if (skipTo >= 0) {
        i = skipTo - 1;
        continue;
      }
      const object = c === OPEN_OBJECT;
      path.push(object ? '' : 0);
      expectKey = object;
      walk.enter?.(object);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      path.pop();
      expectKey = false;
      walk.exit?.();
    } else if (c === COMMA && path.length > 0) {
      const top = path.length - 1;
      const at = path[top]!;
      if (typeof at === 'string') expectKey = true;
      else path[top] = at + 1;
    }
  }
}
