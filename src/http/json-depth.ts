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
function endOfContainer(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = endOfString(text, i) - 1;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) return i + 1;
  }
  return text.length;
}

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
  const isObject: boolean[] = [];
  const keys: Array<string | number> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = endOfString(text, i);
      if (expectKey) {
        keys[keys.length - 1] = text.slice(i + 1, Math.min(end - 1, i + 81));
        expectKey = false;
      }
      i = end - 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (isObject.length >= maxDepth) {
        const end = endOfContainer(text, i);
        found.push({ start: i, end, path: keys.slice() });
        i = end - 1;
        continue;
      }
      isObject.push(c === OPEN_OBJECT);
      keys.push(c === OPEN_OBJECT ? '' : 0);
      expectKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      isObject.pop();
      keys.pop();
      expectKey = false;
    } else if (c === COMMA && isObject.length > 0) {
      const top = isObject.length - 1;
      if (isObject[top]) expectKey = true;
      else keys[top] = (keys[top] as number) + 1;
    }
  }
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
