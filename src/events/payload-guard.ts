/**
 * Checks an event body before any schema sees it (docs/design.md §8: outside input): nesting no deeper
 * than `maxDepth`, and no key named __proto__, constructor or prototype anywhere (a passed-through object is copied
 * and serialised; such keys have no meaning to the CRM and only ever carry prototype tricks). Iterative, never
 * recursive, so a body 5,000 levels deep costs a loop, not the stack.
 */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

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
      if (!Array.isArray(node) && FORBIDDEN_KEYS.has(key)) return { ok: false, error: `${childPath}: key name not allowed` };
      if (child !== null && typeof child === 'object') stack.push({ node: child, depth: depth + 1, path: childPath });
    }
  }
  return { ok: true };
}
