/**
 * The query string of the dead-letter list (GET /admin/conversions/dead, /console/dead-letters) to a match, or an
 * error naming the parameter. Pure. `form`: empty values count as absent (an HTML form sends every field).
 */
import type { DeliveryStatus } from '../../providers/types.js';
import type { DeadLetterMatch } from '../ledger/conversions.js';
import { readQueryParameters } from '../http/query-parameters.js';

export const DEAD_LETTER_STATUSES: readonly DeliveryStatus[] = ['delivered', 'undelivered', 'failed', 'delivery_unknown'];
export const DEAD_LETTER_PAGE_SIZE = 100;

export interface DeadLetterQuery {
  ok: true;
  match: Omit<DeadLetterMatch, 'ids'> & { beforeId?: number };
  limit: number;
}

const NAMES = ['provider', 'status', 'cursor', 'limit'] as const;

export function parseDeadLetterQuery(
  params: URLSearchParams,
  options: { form?: boolean; ignore?: readonly string[] } = {},
): DeadLetterQuery | { ok: false; error: string } {
  const query: DeadLetterQuery = { ok: true, match: {}, limit: DEAD_LETTER_PAGE_SIZE };
  const read = readQueryParameters(params, NAMES, options);
  if (!read.ok) return read;
  for (const [name, value] of read.values) {
    if (name === 'provider') query.match.provider = value;
    else if (name === 'status') {
      const status = DEAD_LETTER_STATUSES.find((s) => s === value);
      if (!status) return { ok: false, error: `status: must be one of ${DEAD_LETTER_STATUSES.join(', ')}` };
      query.match.status = status;
    } else if (name === 'cursor') {
      if (!/^\d{1,15}$/.test(value)) return { ok: false, error: 'cursor: not a cursor this API gave out' };
      query.match.beforeId = Number(value);
    } else {
      if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > 1_000) return { ok: false, error: 'limit: must be an integer from 1 to 1000' };
      query.limit = Number(value);
    }
  }
  return query;
}
