/**
 * The query string of the dead-letter list (GET /admin/conversions/dead, /console/dead-letters) to a match, or an
 * error naming the parameter. Pure. `form`: empty values count as absent (an HTML form sends every field).
 */
import type { DeliveryStatus } from '../../providers/types.js';
import type { DeadLetterMatch } from '../ledger/conversions.js';
import { cursorParameter, oneOf, parseListQuery, type ListParameter } from '../outbox/list-query.js';

export const DEAD_LETTER_STATUSES: readonly DeliveryStatus[] = ['delivered', 'undelivered', 'failed', 'delivery_unknown'];
export const DEAD_LETTER_PAGE_SIZE = 100;

export interface DeadLetterQuery {
  ok: true;
  match: Omit<DeadLetterMatch, 'ids'> & { beforeId?: number };
  limit: number;
}

const PARAMETERS: Record<string, ListParameter<DeadLetterQuery>> = {
  provider: (value, query) => {
    query.match.provider = value;
    return undefined;
  },
  status: oneOf('status', DEAD_LETTER_STATUSES, (query, status) => {
    query.match.status = status;
  }),
  cursor: cursorParameter((query, before) => {
    query.match.beforeId = before;
  }, 'cursor: not a cursor this API gave out'),
  limit: (value, query) => {
    if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > 1_000) return 'limit: must be an integer from 1 to 1000';
    query.limit = Number(value);
    return undefined;
  },
};

export function parseDeadLetterQuery(
  params: URLSearchParams,
  options: { form?: boolean; ignore?: readonly string[] } = {},
): DeadLetterQuery | { ok: false; error: string } {
  const read = parseListQuery<DeadLetterQuery>(params, PARAMETERS, { ok: true, match: {}, limit: DEAD_LETTER_PAGE_SIZE }, options);
  return read.ok ? read.filter : read;
}
