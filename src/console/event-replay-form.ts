/**
 * What a replay post from the console's dead-event list asks for: the event whose Replay button was pressed
 * (`only`), the ticked events (`action=selected`), or every dead event matching the list's filter
 * (`action=matching`: type and/or user_id). Pure, for table tests.
 */
import type { DeadEventMatch } from '../ledger/events.js';
import { EVENT_TYPES } from '../events/event-query.js';

/** Event ids are UUIDv7 (src/ledger/ids.ts); anything else names no event. */
const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_IDS = 10_000;

export function eventReplayFormMatch(form: FormData): { ok: true; match: DeadEventMatch } | { ok: false; error: string } {
  const text = (name: string) => {
    const values = form.getAll(name);
    return values.length === 1 && typeof values[0] === 'string' ? values[0] : values.length === 0 ? undefined : null;
  };
  const only = text('only');
  if (only === null || (only !== undefined && !EVENT_ID.test(only))) return { ok: false, error: 'only: must be one event id' };
  if (only !== undefined) return { ok: true, match: { eventIds: [only] } };
  const action = text('action');
  if (action === 'selected') {
    const ids = form.getAll('ids');
    if (ids.length === 0) return { ok: false, error: 'ids: tick at least one dead event' };
    if (ids.length > MAX_IDS) return { ok: false, error: `ids: at most ${MAX_IDS} at once` };
    if (!ids.every((id): id is string => typeof id === 'string' && EVENT_ID.test(id))) return { ok: false, error: 'ids: must be event ids' };
    return { ok: true, match: { eventIds: ids } };
  }
  if (action !== 'matching') return { ok: false, error: 'action: must be selected or matching' };
  const type = text('type');
  const userId = text('user_id');
  if (type === null || (type && !EVENT_TYPES.includes(type))) return { ok: false, error: `type: must be one of ${EVENT_TYPES.join(', ')}` };
  if (userId === null || (userId !== undefined && userId.length > 256)) return { ok: false, error: 'user_id: must be one user id of at most 256 characters' };
  return { ok: true, match: { ...(type ? { type } : {}), ...(userId ? { userId } : {}) } };
}
