/**
 * Edits of a JSON object's top-level members in its text, so that every other byte stays as received: the relay
 * sends an event's body as the platform wrote it (docs/relay.md "Sent as received"), and only the bonus event loses
 * `credit_id` and gains `crm_references`. Re-serialising the parsed body instead would round every 64-bit id.
 * One pass over the text (json-walk.ts: strings skipped whole, no recursion, no tree), for a text JSON.parse took.
 */
import { decodeKey } from './duplicate-keys.js';
import { stringifyExact } from './exact-json.js';
import { walkJson } from './json-walk.js';

interface Member {
  key: string;
  /** The key's opening quote. */
  start: number;
  /** Just after the member's value. */
  end: number;
}

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Just after the last character before `before` that is not JSON whitespace. */
function endOfTextBefore(text: string, before: number): number {
  let at = before;
  while (at > 0 && isSpace(text.charCodeAt(at - 1))) at--;
  return at;
}

/** The root object's members in text order, and the index just after its `{`. */
function topLevelMembers(text: string): { members: Member[]; bodyStart: number } {
  const starts: Array<{ key: string; start: number }> = [];
  walkJson(text, {
    key(text, open, end, path) {
      const key = decodeKey(text, open, end);
      if (path.length === 1) starts.push({ key, start: open });
      return key;
    },
  });
  // A member ends where the comma before the next key (or the root's closing brace) starts, spaces aside.
  const members = starts.map(({ key, start }, i) => {
    const next = starts[i + 1];
    const boundary = next ? endOfTextBefore(text, next.start) - 1 : endOfTextBefore(text, text.length) - 1;
    return { key, start, end: endOfTextBefore(text, boundary) };
  });
  return { members, bodyStart: text.indexOf('{') + 1 };
}

/**
 * The object text without its top-level member `remove` (with its comma and the spaces between), and with
 * `addIfAbsent` appended as its last member unless the object holds that key already; the added value is written by
 * stringifyExact, so a RawJson in it keeps its text. Every other byte as it was.
 */
export function editTopLevelMembers(text: string, edits: { remove: string; addIfAbsent?: { key: string; value: unknown } }): string {
  const { members, bodyStart } = topLevelMembers(text);
  const cuts: Array<{ from: number; to: number; content: string }> = [];
  const removed = members.findIndex((m) => m.key === edits.remove);
  if (removed >= 0) {
    const member = members[removed]!;
    const before = members[removed - 1];
    const after = members[removed + 1];
    // Take the comma on the side that has one: before the member, or (first member) after it.
    if (before) cuts.push({ from: before.end, to: member.end, content: '' });
    else cuts.push({ from: member.start, to: after ? after.start : member.end, content: '' });
  }
  const add = edits.addIfAbsent;
  if (add && !members.some((m) => m.key === add.key)) {
    const kept = members.filter((_m, i) => i !== removed);
    const last = kept[kept.length - 1];
    const member = `${JSON.stringify(add.key)}: ${stringifyExact(add.value)}`;
    // Inserted before any cut starting at the same place (sort below is stable).
    cuts.unshift(last ? { from: last.end, to: last.end, content: `,${member}` } : { from: bodyStart, to: bodyStart, content: member });
  }
  cuts.sort((a, b) => a.from - b.from);
  let out = '';
  let at = 0;
  for (const cut of cuts) {
    out += text.slice(at, cut.from) + cut.content;
    at = cut.to;
  }
  return out + text.slice(at);
}
