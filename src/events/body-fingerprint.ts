/**
 * What "the same body" means when a bonus status is relayed twice (docs/relay.md, "One bonus event per status
 * change"): the JSON text as received, without what JSON gives no meaning to (whitespace between tokens, the order
 * of an object's keys), and with everything else kept: each string by its decoded value (`"\u0041"` is `"A"`), each
 * number by its text as written, never by a double (JSON.parse reads 9007199254740993 as 9007199254740992,
 * src/http/exact-json.ts), so two bodies one digit apart are never the same. `10` and `10.0` differ too: a repeat
 * that is not plainly the same is answered as a different one, which the platform sees (a 409), rather than dropped.
 * The canonical text is hashed, so a stored row keeps 64 characters, not a second copy of the body.
 *
 * The text was accepted by JSON.parse and by the depth and repeated-key checks (src/http/json-body.ts) before this
 * runs, so each object's keys are distinct; the walk keeps its own stack, so its cost is linear in the text (plus
 * sorting each object's keys) whatever the nesting.
 */
import { createHash } from 'node:crypto';
import { type Node, parseTree } from 'jsonc-parser';

/** The body's canonical JSON text: keys sorted by code unit, no whitespace, strings re-encoded, numbers as written. */
export function canonicalJson(text: string): string {
  const root = parseTree(text, [], { disallowComments: true, allowTrailingComma: false });
  // Only a text JSON.parse refused has no tree, and no such text reaches here; it is then its own canonical form.
  if (!root) return text;
  const out: string[] = [];
  // Nodes still to write, and punctuation between them, the next one last.
  const todo: Array<Node | string> = [root];
  while (todo.length > 0) {
    const item = todo.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    if (item.type === 'object') {
      const entries = (item.children ?? []).map((property) => [String(property.children![0]!.value), property.children![1]!] as const);
      entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      todo.push('}');
      for (let i = entries.length - 1; i >= 0; i--) {
        todo.push(entries[i]![1], `${JSON.stringify(entries[i]![0])}:`);
        if (i > 0) todo.push(',');
      }
      todo.push('{');
    } else if (item.type === 'array') {
      const values = item.children ?? [];
      todo.push(']');
      for (let i = values.length - 1; i >= 0; i--) {
        todo.push(values[i]!);
        if (i > 0) todo.push(',');
      }
      todo.push('[');
    } else if (item.type === 'string') out.push(JSON.stringify(item.value));
    else if (item.type === 'number') out.push(text.slice(item.offset, item.offset + item.length));
    else out.push(String(item.value)); // true, false, null
  }
  return out.join('');
}

/** SHA-256 (hex) of the canonical text: equal for the same body, whatever its spacing and key order. */
export function bodyFingerprint(text: string): string {
  return createHash('sha256').update(canonicalJson(text)).digest('hex');
}
