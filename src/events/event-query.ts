/**
 * The query string of the event lists (GET /admin/events, the console's /console/dead-events) to a filter, or an
 * error naming the parameter. Pure. `form`: empty values count as absent (an HTML form sends every field).
 */
import type { EventStatus } from '../ledger/events.js';
import { eventCatalogue } from './catalogue.js';

export const EVENT_TYPES: readonly string[] = eventCatalogue.map((e) => e.type);
export const EVENT_STATUSES: readonly EventStatus[] = ['pending', 'sent', 'dead'];
const MAX_LENGTH = 256;
const NAMES = ['user_id', 'status', 'type', 'cursor'] as const;

export interface EventQuery {
  ok: true;
  filter: { userId?: string; status?: EventStatus; type?: string; before?: number };
}

export function parseEventQuery(params: URLSearchParams, options: { form?: boolean; ignore?: readonly string[] } = {}): EventQuery | { ok: false; error: string } {
  const ignore = options.ignore ?? [];
  const query: EventQuery = { ok: true, filter: {} };
  const seen = new Set<string>();
  for (const [name, raw] of params) {
    if (ignore.includes(name)) continue;
    if (!(NAMES as readonly string[]).includes(name)) {
      const shown = name.length > 40 ? `${JSON.stringify(name.slice(0, 40))}…` : JSON.stringify(name);
      return { ok: false, error: `${shown}: unknown query parameter; known: ${NAMES.join(', ')}` };
    }
    if (seen.has(name)) return { ok: false, error: `${name}: given more than once` };
    seen.add(name);
    // user_ids are the operator's strings: kept as given (a space may be part of one); the rest are trimmed.
    const value = name === 'user_id' ? raw : raw.trim();
    if (value === '' && options.form) continue;
    if (value === '') return { ok: false, error: `${name}: must not be empty` };
    if (value.length > MAX_LENGTH) return { ok: false, error: `${name}: longer than ${MAX_LENGTH} characters` };
    if (name === 'user_id') query.filter.userId = value;
    else if (name === 'status') {
      const status = EVENT_STATUSES.find((s) => s === value);
      if (!status) return { ok: false, error: `status: must be one of ${EVENT_STATUSES.join(', ')}` };
      query.filter.status = status;
    } else if (name === 'type') {
      if (!EVENT_TYPES.includes(value)) return { ok: false, error: `type: must be one of ${EVENT_TYPES.join(', ')}` };
      query.filter.type = value;
    } else {
      if (!/^\d{1,15}$/.test(value)) return { ok: false, error: 'cursor: must be the next_cursor of a previous page' };
      query.filter.before = Number(value);
    }
  }
  return query;
}
