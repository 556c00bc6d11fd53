/**
 * What a replay post from the console's dead-event list asks for: the event whose Replay button was pressed
 * (`only`), the ticked events (`action=selected`), or every dead event matching the list's filter
 * (`action=matching`: type and/or user_id). Pure, for table tests. The form itself is read by
 * console/dead-replay-form.ts, shared with the dead credits.
 */
import type { DeadEventMatch } from '../ledger/events.js';
import { EVENT_TYPES } from '../events/event-query.js';
import { readDeadReplayForm, userIdField } from './dead-replay-form.js';

/** Event ids are UUIDv7 (src/ledger/ids.ts); anything else names no event. */
const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function eventReplayFormMatch(form: FormData): { ok: true; match: DeadEventMatch } | { ok: false; error: string } {
  const read = readDeadReplayForm(form, {
    noun: 'event',
    idPattern: EVENT_ID,
    filter: (text) => {
      const type = text('type');
      if (type === null || (type && !EVENT_TYPES.includes(type))) return { ok: false, error: `type: must be one of ${EVENT_TYPES.join(', ')}` };
      const user = userIdField(text);
      if (!user.ok) return user;
      return { ok: true, filter: { ...(type ? { type } : {}), ...(user.userId ? { userId: user.userId } : {}) } };
    },
  });
  if (!read.ok) return read;
  return { ok: true, match: read.ids ? { eventIds: read.ids } : read.filter };
}
