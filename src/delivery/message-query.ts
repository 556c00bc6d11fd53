/**
 * The query string of a message search (GET /admin/messages, GET /console) to a MessageFilter, or an error naming
 * the parameter. Pure: every outside byte is checked here before it reaches the ledger. Parameter names are
 * looked up in a Map, so `__proto__` is just an unknown name.
 */
import { SEARCH_STATUSES, type MessageFilter } from '../ledger/message-search.js';
import { normaliseRecipient } from '../kit/phone-number.js';
import { readQueryParameters } from '../http/query-parameters.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

export type MessageQuery = { ok: true; filter: MessageFilter } | { ok: false; error: string };

type Setter = (filter: MessageFilter, value: string, defaultRegion: string | undefined) => string | undefined;

/** `2026-11-24`, `2026-11-24T03:00`, `…:05.123Z`, `…+01:00` (no zone means UTC), or epoch milliseconds. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

export function parseTime(text: string): number | undefined {
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (!ISO_TIME.test(text)) return undefined;
  const zoned = /T.*(Z|[+-]\d{2}:\d{2})$/.test(text) ? text : text.includes('T') ? `${text}Z` : `${text}T00:00Z`;
  const ms = Date.parse(zoned);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The cursor is the last row's created_at and sms_id, base64url'd so it reads as one opaque token. */
export function encodeCursor(row: { created_at: number; sms_id: string }): string {
  return Buffer.from(`${row.created_at}.${row.sms_id}`).toString('base64url');
}

export function decodeCursor(text: string): MessageFilter['after'] | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const match = /^(\d{1,15})\.([\x21-\x7e]{1,100})$/.exec(Buffer.from(text, 'base64url').toString('latin1'));
  return match ? { createdAt: Number(match[1]), smsId: match[2]! } : undefined;
}

const SETTERS: ReadonlyMap<string, Setter> = new Map<string, Setter>([
  [
    'recipient',
    (f, v, region) => {
      const number = normaliseRecipient(v, region);
      if (!number.ok) return number.error;
      f.recipient = number.e164;
    },
  ],
  ['user_id', (f, v) => void (f.userId = v)],
  ['activity_id', (f, v) => void (f.activityKey = v)],
  ['sms_id', (f, v) => void (f.smsId = v)],
  ['provider', (f, v) => void (f.provider = v)],
  ['status', (f, v) => (SEARCH_STATUSES.has(v) ? void (f.status = v) : `status: must be one of ${[...SEARCH_STATUSES.keys()].join(', ')}`)],
  [
    'from',
    (f, v) => ((f.from = parseTime(v)) === undefined ? 'from: must be an ISO 8601 time (UTC unless it has an offset) or epoch milliseconds' : undefined),
  ],
  ['to', (f, v) => ((f.to = parseTime(v)) === undefined ? 'to: must be an ISO 8601 time (UTC unless it has an offset) or epoch milliseconds' : undefined)],
  [
    'limit',
    (f, v) => {
      if (!/^\d{1,3}$/.test(v) || Number(v) < 1 || Number(v) > MAX_PAGE_SIZE) return `limit: must be an integer from 1 to ${MAX_PAGE_SIZE}`;
      f.limit = Number(v);
    },
  ],
  ['cursor', (f, v) => ((f.after = decodeCursor(v)) === undefined ? 'cursor: not a cursor this API gave out' : undefined)],
]);

export const MESSAGE_QUERY_PARAMETERS: readonly string[] = [...SETTERS.keys()];

/**
 * `form`: empty values count as absent (an HTML form sends every field); for the API an empty value is an error.
 * `ignore` names parameters another part of the page owns (the console's own).
 */
export function parseMessageQuery(
  params: URLSearchParams,
  defaultRegion: string | undefined,
  options: { form?: boolean; ignore?: readonly string[] } = {},
): MessageQuery {
  const filter: MessageFilter = { limit: DEFAULT_PAGE_SIZE };
  const read = readQueryParameters(params, MESSAGE_QUERY_PARAMETERS, options);
  if (!read.ok) return read;
  for (const [name, value] of read.values) {
    const error = SETTERS.get(name)!(filter, value, defaultRegion);
    if (error) return { ok: false, error };
  }
  if (filter.from !== undefined && filter.to !== undefined && filter.from >= filter.to) return { ok: false, error: 'to: must be later than from' };
  return { ok: true, filter };
}
