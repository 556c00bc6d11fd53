/**
 * Dead-lettered CRM events (the events outbox, src/ledger/events.ts) as a list: type, user, attempts, the CRM's
 * last answer and error, age, with replay of one event, the ticked events, or every dead event matching the filter.
 * One form; the button pressed says which (console/event-replay-form.ts).
 */
import { html } from 'hono/html';
import { EVENT_TYPES } from '../events/event-query.js';
import type { EventRow } from '../ledger/events.js';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import { age } from './dead-letters-page.js';
import { when } from './search-page.js';

export interface DeadEventsView {
  rows: EventRow[];
  nextCursor: string | null;
  params: URLSearchParams;
  csrf: string;
  now: number;
  replayed?: number;
  error?: string;
}

const lastAnswer = (e: EventRow) => (e.http_status === null ? (e.attempts === 0 ? '—' : 'no HTTP answer') : `HTTP ${e.http_status}`);

export function renderDeadEvents(view: DeadEventsView) {
  const type = view.params.get('type') ?? '';
  const userId = view.params.get('user_id') ?? '';
  const filtered = Boolean(type || userId);
  const next = new URLSearchParams(view.params);
  next.delete('replayed');
  if (view.nextCursor) next.set('cursor', view.nextCursor);
  return html`${view.replayed !== undefined ? html`<p class="notice" role="status">Replayed ${view.replayed} dead CRM event(s); the relay sends them now.</p>` : ''}
${view.error ? html`<p class="notice error" role="alert">${view.error}</p>` : ''}
<section id="dead-events">
<h2>Dead CRM events</h2>
<p class="muted">Events the CRM refused (a 4xx other than 408, 425 and 429 is dead at once, with its answer below) or did not take within relay.max_attempts; they no longer hold back their user's later events. Replaying one makes it due again with a fresh retry budget; it goes out before its user's later events that are still owed. <a href="/console/dead-letters">Dead conversions →</a></p>
<form method="get" action="/console/dead-events" class="search">
<label>Type<select name="type"><option value="">any</option>${EVENT_TYPES.map((t) => html`<option${t === type ? ' selected' : ''}>${t}</option>`)}</select></label>
<label>Player (user_id)<input name="user_id" value="${userId}" maxlength="256"></label>
<p><button type="submit">Filter</button></p>
</form>
<form method="post" action="/console/events/replay">
<input type="hidden" name="csrf" value="${view.csrf}">
<input type="hidden" name="type" value="${type}"><input type="hidden" name="user_id" value="${userId}">
<div class="scroll"><table data-table="dead-events">
<thead><tr><th>pick</th><th>type</th><th>user</th><th>last answer</th><th>reason</th><th>attempts</th><th>age</th><th></th><th>event</th></tr></thead>
<tbody>${view.rows.map(
    (e) => html`<tr data-event="${e.event_id}"><td><input type="checkbox" name="ids" value="${e.event_id}" aria-label="pick event ${e.event_id}"></td>
<td>${e.type}</td><td><a href="/console/dead-events?user_id=${encodeURIComponent(e.user_id)}">${e.user_id}</a></td><td>${lastAnswer(e)}</td>
<td class="text">${e.last_error === null ? '—' : maskPhoneNumbersIn(e.last_error)}</td><td class="num">${e.attempts}</td><td title="accepted ${when(Number(e.created_at))} UTC">${age(view.now - Number(e.created_at))}</td>
<td><button type="submit" name="only" value="${e.event_id}">Replay</button></td><td><code>${e.event_id}</code></td></tr>`,
  )}</tbody></table></div>
${view.rows.length === 0 ? html`<p class="notice" role="status">No dead CRM event${filtered ? ' matches' : ''}.</p>` : ''}
<p><button type="submit" name="action" value="selected"${view.rows.length === 0 ? ' disabled' : ''}>Replay ticked</button>
<button type="submit" name="action" value="matching"${view.rows.length === 0 ? ' disabled' : ''}>Replay all ${filtered ? 'matching' : 'dead events'}</button></p>
</form>
${view.nextCursor ? html`<p><a href="/console/dead-events?${next.toString()}" rel="next">Older →</a></p>` : ''}
</section>`;
}
