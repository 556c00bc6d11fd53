/**
 * Checks an event body before any schema sees it (docs/design.md §8: outside input): nesting no deeper
 * than `maxDepth`, and no key named __proto__, constructor or prototype anywhere (such keys have no meaning to the
 * CRM and only ever carry prototype tricks against what reads the parsed body). Iterative, never
 * recursive, so a body 5,000 levels deep costs a loop, not the stack.
 */
import { findPrototypeKey } from '../http/prototype-keys.js';
import { RawJson } from '../kit/raw-json.js';

export type GuardResult = { ok: true } | { ok: false; error: string };

export function guardPayload(value: unknown, maxDepth: number): GuardResult {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { ok: false, error: 'body: must be a JSON object' };
  const stack: Array<{ node: object; depth: number; path: string }> = [{ node: value, depth: 1, path: '' }];
  while (stack.length > 0) {
    const { node, depth, path } = stack.pop()!;
    if (depth > maxDepth) return { ok: false, error: `${path || 'body'}: nested deeper than ${maxDepth} levels (relay.max_depth)` };
    const entries: Array<[string, unknown]> = Array.isArray(node) ? node.map((v, i) => [String(i), v]) : Object.entries(node);
    for (const [key, child] of entries) {
      const childPath = path ? `${path}.${key}` : key;
      // A RawJson is a number kept as its text (src/http/exact-json.ts), not a level of nesting.
      if (child !== null && typeof child === 'object' && !(child instanceof RawJson)) stack.push({ node: child, depth: depth + 1, path: childPath });
    }
  }
  const prototypeKey = findPrototypeKey(value);
  return prototypeKey === undefined ? { ok: true } : { ok: false, error: `${prototypeKey}: key name not allowed` };
}
