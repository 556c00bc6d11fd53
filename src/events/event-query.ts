/**
 * The query string of the event lists (GET /admin/events, the console's /console/dead-events) to a filter, or an
 * error naming the parameter. Pure. `form`: empty values count as absent (an HTML form sends every field).
 */
import type { EventStatus } from '../ledger/events.js';
import { cursorParameter, oneOf, parseListQuery, type ListParameter } from '../outbox/list-query.js';
import { eventCatalogue } from '../crm/event-catalogue.js';

export const EVENT_TYPES: readonly string[] = eventCatalogue.map((e) => e.type);
export const EVENT_STATUSES: readonly EventStatus[] = ['pending', 'sent', 'dead'];

export interface EventQuery {
  ok: true;
  filter: { userId?: string; status?: EventStatus; type?: string; before?: number };
}

const PARAMETERS: Record<string, ListParameter<EventQuery['filter']>> = {
  user_id: (value, filter) => {
    filter.userId = value;
    return undefined;
  },
  status: oneOf('status', EVENT_STATUSES, (filter, status) => {
    filter.status = status;
  }),
  type: oneOf('type', EVENT_TYPES, (filter, type) => {
    filter.type = type;
  }),
  cursor: cursorParameter((filter, before) => {
    filter.before = before;
  }),
};

export function parseEventQuery(
  params: URLSearchParams,
  options: { form?: boolean; ignore?: readonly string[] } = {},
): EventQuery | { ok: false; error: string } {
  // user_ids are the operator's strings: kept as given (a space may be part of one); the rest are trimmed.
  return parseListQuery(params, PARAMETERS, {}, { ...options, untrimmed: ['user_id'] });
}
