/**
 * Dead-lettered CRM events (the events outbox, src/ledger/events.ts) as a list: type, user, attempts, the CRM's
 * last answer and error, age, with replay of one event, the ticked events, or every dead event matching the filter.
 * One form; the button pressed says which (eventReplayFormMatch). The frame is src/outbox/dead-list.ts.
 */
import { html } from 'hono/html';
import { EVENT_TYPES } from '../events/event-query.js';
import type { DeadEventMatch, EventRow } from '../ledger/events.js';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import { age, renderDeadList, type DeadListView } from '../outbox/dead-list.js';
import { readDeadReplayForm, userIdField } from '../outbox/replay-form.js';
import { when } from './search-page.js';

export interface DeadEventsView extends DeadListView {
  rows: EventRow[];
  now: number;
}

const lastAnswer = (e: EventRow) => (e.http_status === null ? (e.attempts === 0 ? '—' : 'no HTTP answer') : `HTTP ${e.http_status}`);

export function renderDeadEvents(view: DeadEventsView) {
  const type = view.params.get('type') ?? '';
  const userId = view.params.get('user_id') ?? '';
  return renderDeadList(view, {
    section: 'dead-events',
    heading: 'Dead CRM events',
    intro: html`<p class="muted">Events the CRM refused (a 4xx other than 408, 425 and 429 is dead at once, with its answer below) or did not take within relay.max_attempts; they no longer hold back their user's later events. Replaying one makes it due again with a fresh retry budget; it goes out before its user's later events that are still owed. <a href="/console/dead-letters">Dead conversions →</a></p>`,
    listPath: '/console/dead-events',
    replayPath: '/console/events/replay',
    filterFields: html`<label>Type<select name="type"><option value="">any</option>${EVENT_TYPES.map((t) => html`<option${t === type ? ' selected' : ''}>${t}</option>`)}</select></label>
<label>Player (user_id)<input name="user_id" value="${userId}" maxlength="256"></label>`,
    hiddenFilter: html`<input type="hidden" name="type" value="${type}"><input type="hidden" name="user_id" value="${userId}">`,
    filtered: Boolean(type || userId),
    headers: ['type', 'user', 'last answer', 'reason', 'attempts', 'age'],
    afterHeaders: ['event'],
    rows: view.rows.map((e) => ({
      id: e.event_id,
      attribute: 'data-event',
      cells: html`<td>${e.type}</td><td><a href="/console/dead-events?user_id=${encodeURIComponent(e.user_id)}">${e.user_id}</a></td><td>${lastAnswer(e)}</td>
<td class="text">${e.last_error === null ? '—' : maskPhoneNumbersIn(e.last_error)}</td><td class="num">${e.attempts}</td><td title="accepted ${when(Number(e.created_at))} UTC">${age(view.now - Number(e.created_at))}</td>`,
      after: html`<td><code>${e.event_id}</code></td>`,
    })),
    replayedNoun: 'dead CRM event(s)',
    replayedThen: 'the relay sends them now.',
    none: 'No dead CRM event',
    all: 'dead events',
  });
}

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
