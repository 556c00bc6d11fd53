/** A zod refusal as the one sentence an error body carries (docs/design.md §3): the field, what is wrong, the value. */
import type { z } from 'zod';
import { stringifyExact } from './exact-json.js';

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let node = input;
  for (const key of path) {
    // Own keys only: a path through `__proto__` or `constructor` names the request's field, never Object's.
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** One sentence naming the field and the value: `activity.id: must be … (got 1.5)`. */
export function describeFirstIssue(error: z.ZodError, input: unknown): string {
  const issue = error.issues[0]!;
  const field = issue.path.map(String).join('.') || 'body';
  const value = valueAt(input, issue.path);
  if (value === undefined) return `${field}: is required`;
  // stringifyExact: a number kept as its text (RawJson) is shown as written, `1e400` and not null.
  const shown = stringifyExact(value) ?? String(value);
  return `${field}: ${issue.message} (got ${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown})`;
}
