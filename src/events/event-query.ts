/**
 * The query string of the event lists (GET /admin/events, the console's /console/dead-events) to a filter, or an
 * error naming the parameter. Pure. `form`: empty values count as absent (an HTML form sends every field).
 */
import type { EventStatus } from '../ledger/events.js';
import { readQueryParameters } from '../http/query-parameters.js';
import { eventCatalogue } from '../crm/event-catalogue.js';

export const EVENT_TYPES: readonly string[] = eventCatalogue.map((e) => e.type);
export const EVENT_STATUSES: readonly EventStatus[] = ['pending', 'sent', 'dead'];
const NAMES = ['user_id', 'status', 'type', 'cursor'] as const;

export interface EventQuery {
  ok: true;
  filter: { userId?: string; status?: EventStatus; type?: string; before?: number };
}

export function parseEventQuery(
  params: URLSearchParams,
  options: { form?: boolean; ignore?: readonly string[] } = {},
): EventQuery | { ok: false; error: string } {
  const query: EventQuery = { ok: true, filter: {} };
  // user_ids are the operator's strings: kept as given (a space may be part of one); the rest are trimmed.
  const read = readQueryParameters(params, NAMES, { ...options, untrimmed: ['user_id'] });
  if (!read.ok) return read;
  for (const [name, value] of read.values) {
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
