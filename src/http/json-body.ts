/**
 * Reads a JSON request body with the answers docs/design.md §4 asks for: 415 wrong type, 400 unparsable, too deep
 * or holding a key twice (duplicate-keys.ts: two readers of one body must never see two different values).
 */
import type { Context } from 'hono';
import { findDuplicateKeys } from './duplicate-keys.js';
import { parseExact } from './exact-json.js';
import { describePath, findTooDeep, withoutTooDeep } from './json-depth.js';
import { findPrototypeKey } from './prototype-keys.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** server.max_json_depth, set for every request by the app (app.ts). */
    maxJsonDepth: number;
  }
}

/** The default of server.max_json_depth, for an app built without it. */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/**
 * `text` is the body as received, for the rare reader that needs more than the parsed value (exact-json.ts).
 * `refusedEntries` (list bodies only): entries nested deeper than the limit or holding a key twice, by index, with
 * the error naming the field; their over-deep values are `null` in `value` and `text`, so nothing after this walks
 * them, and the caller treats each such entry as invalid.
 */
export type JsonBody = { ok: true; value: unknown; text: string; refusedEntries?: Map<number, string> } | { ok: false; status: 400 | 415; error: string };

export interface ReadJsonOptions {
  /** The body is a list of independent entries (a batch): an over-deep entry is reported, not the whole body. */
  list?: boolean;
  /** A tighter limit of the route's own, and the config key that sets it (relay.max_depth). */
  depthLimit?: { maxDepth: number; key: string };
  /** Numbers a double would change are kept as RawJson of their text (exact-json.ts, parseExact): the relay's. */
  exactNumbers?: boolean;
  /** Refuse keys named __proto__, constructor or prototype (prototype-keys.ts): for a body sent on as written. */
  refusePrototypeKeys?: boolean;
}

export async function readJsonBody(c: Context, options: ReadJsonOptions = {}): Promise<JsonBody> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    return { ok: false, status: 415, error: `Content-Type must be application/json (got ${type ? JSON.stringify(type) : 'none'})` };
  }
  // The Request's own reader: c.req.text() would keep the text on the context for the whole request, and a batch
  // route lets go of it once its entries are prepared (src/sms/prepare.ts, prepareBatch).
  let text = await c.req.raw.text();
  const serverDepth = c.get('maxJsonDepth') ?? DEFAULT_MAX_JSON_DEPTH;
  const own = options.depthLimit && options.depthLimit.maxDepth < serverDepth ? options.depthLimit : undefined;
  const maxDepth = own?.maxDepth ?? serverDepth;
  const key = own?.key ?? 'server.max_json_depth';
  const list = options.list === true && /^\s*\[/.test(text);
  // Entries of a list are counted from their own level, as the same message sent alone would be.
  const found = findTooDeep(text, list ? maxDepth + 1 : maxDepth);
  let refused: Map<number, string> | undefined;
  if (found.length > 0) {
    if (!list) return { ok: false, status: 400, error: tooDeepError(found[0]!.path, maxDepth, key) };
    refused = new Map();
    for (const f of found) {
      const [index, ...rest] = f.path;
      if (typeof index === 'number' && !refused.has(index)) refused.set(index, tooDeepError(rest, maxDepth, key));
    }
    text = withoutTooDeep(text, found);
  }
  // Within the depth limit now, so this pass's stack is bounded too. In a list, a repeated key refuses its entry
  // only (the batch answers each message); the search goes on after it, one pass over the text in all.
  for (const duplicate of findDuplicateKeys(text, list ? Infinity : 1)) {
    const [index, ...rest] = duplicate.path;
    if (!list || typeof index !== 'number') return { ok: false, status: 400, error: duplicateKeyError(duplicate.path, duplicate.key) };
    refused ??= new Map();
    if (!refused.has(index)) refused.set(index, duplicateKeyError(rest, duplicate.key));
  }
  let value: unknown;
  try {
    value = options.exactNumbers ? parseExact(text) : (JSON.parse(text) as unknown);
  } catch (error) {
    return { ok: false, status: 400, error: `body is not valid JSON: ${(error as Error).message}` };
  }
  const prototypeKey = options.refusePrototypeKeys ? findPrototypeKey(value) : undefined;
  if (prototypeKey !== undefined) return { ok: false, status: 400, error: `${prototypeKey}: key name not allowed` };
  return { ok: true, value, text, ...(refused ? { refusedEntries: refused } : {}) };
}

/**
 * The depth and repeated-key checks alone, for a JSON text whose reader does not come through readJsonBody (the
 * provider callbacks, the admin replay forms): the error naming the field, or undefined when the text may be parsed.
 */
export function refuseJsonText(text: string, maxDepth: number, key = 'server.max_json_depth'): string | undefined {
  const deep = findTooDeep(text, maxDepth)[0];
  if (deep) return tooDeepError(deep.path, maxDepth, key);
  const duplicate = findDuplicateKeys(text, 1)[0];
  return duplicate ? duplicateKeyError(duplicate.path, duplicate.key) : undefined;
}

function duplicateKeyError(path: ReadonlyArray<string | number>, key: string): string {
  const shown = key.length > 40 ? `${JSON.stringify(key.slice(0, 40))}…` : JSON.stringify(key);
  return `${path.length > 0 ? `${describePath(path)}: ` : ''}key ${shown} is given more than once (a body must hold each key once)`;
}

function tooDeepError(path: ReadonlyArray<string | number>, maxDepth: number, key: string): string {
  return `${describePath(path)}: nested deeper than ${maxDepth} levels (${key})`;
}
