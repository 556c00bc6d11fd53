/**
 * JSON.parse turns every number into a double: an integer beyond 2^53 (a 64-bit id) or a decimal with more than
 * ~15 significant digits comes back changed, and so would our echo of it. The CRM's `activity` must come back
 * exactly as it was sent (operator interface: "echoes it back exactly as received"), so where a body may hold
 * such a number, the activity's text, and its id's, are taken from the body itself.
 *
 * Such a number is a token of 16 or more digits and points, or one with an exponent. The test below looks for
 * those after a colon, comma or bracket (where JSON values start); it may also fire on text inside a string,
 * which only costs the exact parse. Nearly every body costs one regular-expression test and no second parse.
 */
import { randomUUID } from 'node:crypto';
import { applyEdits, findNodeAtLocation, format, parseTree, type Node } from 'jsonc-parser';
import { RawJson } from '../kit/raw-json.js';

const MAY_HOLD_INEXACT_NUMBER = /[:,[]\s*-?(?:\d[\d.]{15}|\d[\d.]*[eE])/;
/** The same test on one number's text: 16 or more digits and points, or an exponent. */
const INEXACT_NUMBER = /^-?(?:\d[\d.]{15}|\d[\d.]*[eE])/;

export interface ActivitySource {
  /** The activity object's JSON text, as received. */
  json: string;
  /** The text as received of each of the activity's own members that is a number (id, brand_id, user_id, …), by key. */
  numberTexts: Record<string, string>;
}

/**
 * For a body already accepted by JSON.parse: the source text of each message's activity (the root object's, or
 * each element's when the root is an array), or undefined when no number in the body can have been changed.
 */
export function activitySources(body: string): Array<ActivitySource | undefined> | undefined {
  if (!MAY_HOLD_INEXACT_NUMBER.test(body)) return undefined;
  const root = parseTree(body);
  if (!root) return undefined;
  const messages = root.type === 'array' ? (root.children ?? []) : [root];
  const text = (node: Node) => body.slice(node.offset, node.offset + node.length);
  return messages.map((message) => {
    const activity = message.type === 'object' ? findNodeAtLocation(message, ['activity']) : undefined;
    if (activity?.type !== 'object') return undefined;
    return { json: text(activity), numberTexts: numberTexts(activity, text) };
  });
}

/** The text of each member of an object node whose value is a number; a key given twice keeps its last, as JSON.parse. */
function numberTexts(object: Node, text: (node: Node) => string): Record<string, string> {
  const texts: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const member of object.children ?? []) {
    const [key, value] = member.children ?? [];
    if (key?.type === 'string' && value?.type === 'number') texts[key.value as string] = text(value);
  }
  return texts;
}

/**
 * An activity identifier (id, brand_id, user_id, activity_id, action_group_id) as the text that routing rules,
 * quiet-hours windows, budgets and the cost rollup compare: a string as it is, an integer in decimal. An integer a
 * double cannot hold (a 64-bit id) is written as the CRM sent it (`text`, from the body), since the double may be a
 * neighbouring id: 9007199254740993 parses to 9007199254740992.
 */
export function identifierText(value: string | number, text: string | undefined): string {
  if (typeof value === 'string' || Number.isSafeInteger(value)) return String(value);
  return text ?? String(value);
}

/**
 * The identifiers named in `keys` of an activity stored as JSON text (its row's activity_json, written as received),
 * by identifierText: a string or a number, else null (absent, or not a string or number; not an object: all null).
 */
export function storedIdentifiers<K extends string>(activityJson: string, keys: readonly K[]): Record<K, string | null> {
  const out = {} as Record<K, string | null>;
  let parsed: unknown;
  try {
    parsed = JSON.parse(activityJson);
  } catch {
    // Stored by the claim from a parsed body, so never unreadable; a reader of it is no place to fail.
  }
  const activity = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  let texts: Record<string, string> | undefined;
  for (const key of keys) {
    const value = Object.hasOwn(activity, key) ? activity[key] : undefined;
    // Only an id a double rounds costs the second read, of the text's tree.
    if (typeof value === 'number' && !Number.isSafeInteger(value) && texts === undefined) {
      const root = parseTree(activityJson);
      texts = root?.type === 'object' ? numberTexts(root, (node) => activityJson.slice(node.offset, node.offset + node.length)) : {};
    }
    out[key] = typeof value === 'string' || typeof value === 'number' ? identifierText(value, texts?.[key]) : null;
  }
  return out;
}

export { RawJson };

/** Indents JSON text for people to read without parsing it into numbers: every token stays as it was written. */
export function indentJson(text: string): string {
  return applyEdits(text, format(text, undefined, { tabSize: 2, insertSpaces: true }));
}

/** JSON.stringify, except that RawJson values are written as their original text. */
export function stringifyExact(value: unknown): string {
  const texts: string[] = [];
  // Each raw value is first written as a string holding a per-call random marker, which no string of the caller's
  // can hold by chance, then that string (quotes included) is replaced by the value's text. The marker is drawn at the
  // first raw value (randomUUID, from Node's cached entropy): a value without one costs JSON.stringify alone.
  let marker: string | undefined;
  const json = JSON.stringify(value, (_key, v: unknown) => (v instanceof RawJson ? `${(marker ??= `\u0000${randomUUID()}:`)}${texts.push(v.text) - 1}` : v));
  if (marker === undefined) return json;
  const opening = `"${JSON.stringify(marker).slice(1, -1)}`; // how each marker string starts once written
  const [head, ...rest] = json.split(opening);
  return head + rest.map((part) => part.replace(/^(\d+)"/, (_match, index: string) => texts[Number(index)]!)).join('');
}

/**
 * JSON.parse, except that each number a double may change is kept as RawJson of its text (read through the
 * parser's source text of each value). A number of 15 digits or fewer without an exponent reads back as the same
 * decimal value, so it stays a double: only its spelling can differ (`1.0` is 1), never its value. Nearly every body
 * costs one regular-expression test and no reviver.
 */
export function parseExact(text: string): unknown {
  if (!MAY_HOLD_INEXACT_NUMBER.test(text)) return JSON.parse(text);
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined && INEXACT_NUMBER.test(context.source) ? new RawJson(context.source) : value,
  );
}
