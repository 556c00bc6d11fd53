/**
 * Keys named __proto__, constructor or prototype have no meaning to the CRM or to the operator's platform; in a
 * body that is stored and sent on as written, they only ever carry prototype tricks against whatever reads it next
 * with a naive merge. The walk keeps its own stack, so a deep value costs a loop, never the call stack.
 */
import { RawJson } from '../kit/raw-json.js';

const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The path (`meta.__proto__`) of the first prototype key in a parsed JSON value, or undefined when it holds none. */
export function findPrototypeKey(value: unknown): string | undefined {
  const stack: Array<{ node: unknown; path: string }> = [{ node: value, path: '' }];
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    // A RawJson is a number kept as its text (src/http/exact-json.ts), not a container.
    if (node === null || typeof node !== 'object' || node instanceof RawJson) continue;
    const isList = Array.isArray(node);
    const entries: Array<[string, unknown]> = isList ? node.map((v, i) => [String(i), v]) : Object.entries(node);
    for (const [key, child] of entries) {
      const childPath = path ? `${path}.${key}` : key;
      if (!isList && PROTOTYPE_KEYS.has(key)) return childPath;
      stack.push({ node: child, path: childPath });
    }
  }
  return undefined;
}
