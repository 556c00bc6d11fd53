/**
 * What a replay post from the console's dead-letter list asks for: the row whose Replay button was pressed
 * (`only`), the ticked rows (`action=selected`), or every dead letter matching the list's filter
 * (`action=matching`, or no action: the dashboard's "replay all"). Pure, for table tests.
 */
import type { DeadLetterMatch } from '../ledger/conversions.js';
import { DEAD_LETTER_STATUSES } from '../delivery/dead-letter-query.js';

const CONVERSION_ID = /^\d{1,15}$/;
const MAX_IDS = 10_000;

export function replayFormMatch(form: FormData): { ok: true; match: DeadLetterMatch } | { ok: false; error: string } {
  const text = (name: string) => {
    const values = form.getAll(name);
    return values.length === 1 && typeof values[0] === 'string' ? values[0].trim() : values.length === 0 ? undefined : null;
  };
  const only = text('only');
  if (only === null || (only !== undefined && !CONVERSION_ID.test(only))) return { ok: false, error: 'only: must be one conversion id' };
  if (only !== undefined) return { ok: true, match: { ids: [Number(only)] } };
  const action = text('action');
  if (action === 'selected') {
    const ids = form.getAll('ids');
    if (ids.length === 0) return { ok: false, error: 'ids: tick at least one dead conversion' };
    if (ids.length > MAX_IDS) return { ok: false, error: `ids: at most ${MAX_IDS} at once` };
    if (!ids.every((id) => typeof id === 'string' && CONVERSION_ID.test(id))) return { ok: false, error: 'ids: must be conversion ids' };
    return { ok: true, match: { ids: ids.map(Number) } };
  }
  if (action !== undefined && action !== 'matching') return { ok: false, error: 'action: must be selected or matching' };
  const provider = text('provider');
  const status = text('status');
  if (provider === null || (provider !== undefined && provider.length > 256)) return { ok: false, error: 'provider: must be one provider name' };
  if (status === null) return { ok: false, error: 'status: must be one status' };
  const knownStatus = status ? DEAD_LETTER_STATUSES.find((s) => s === status) : undefined;
  if (status && !knownStatus) return { ok: false, error: `status: must be one of ${DEAD_LETTER_STATUSES.join(', ')}` };
  return { ok: true, match: { ...(provider ? { provider } : {}), ...(knownStatus ? { status: knownStatus } : {}) } };
}
