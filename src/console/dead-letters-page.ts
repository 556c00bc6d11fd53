/**
 * Dead-lettered conversions as a list: reason, attempts, the webhook's last answer and age, with replay of one row,
 * the ticked rows, or every dead letter matching the filter. One form; the button pressed says which.
 */
import { html } from 'hono/html';
import { DEAD_LETTER_STATUSES } from '../delivery/dead-letter-query.js';
import type { DeadLetter } from '../ledger/conversions.js';
import { when } from './search-page.js';

/** "3 d 4 h", "12 min": how long a dead letter has waited. */
export function age(ms: number): string {
  const minutes = Math.max(0, Math.floor(ms / 60_000));
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

export interface DeadLettersView {
  rows: DeadLetter[];
  nextCursor: string | null;
  params: URLSearchParams;
  providers: readonly string[];
  csrf: string;
  now: number;
  replayed?: number;
  error?: string;
}

export function renderDeadLetters(view: DeadLettersView) {
  const provider = view.params.get('provider') ?? '';
  const status = view.params.get('status') ?? '';
  const next = new URLSearchParams(view.params);
  next.delete('replayed');
  if (view.nextCursor) next.set('cursor', view.nextCursor);
  return html`${view.replayed !== undefined ? html`<p class="notice" role="status">Replayed ${view.replayed} dead conversion(s); the worker posts them now.</p>` : ''}
${view.error ? html`<p class="notice error" role="alert">${view.error}</p>` : ''}
<section id="dead-letters">
<h2>Dead conversions</h2>
<p class="muted">Conversions the CRM's webhook did not take within delivery.max_attempts. Replaying one makes it due again with a fresh retry budget. <a href="/console/dead-events">Dead CRM events →</a></p>
<form method="get" action="/console/dead-letters" class="search">
<label>Provider<select name="provider"><option value="">any</option>${view.providers.map((p) => html`<option${p === provider ? ' selected' : ''}>${p}</option>`)}</select></label>
<label>Status<select name="status"><option value="">any</option>${DEAD_LETTER_STATUSES.map((s) => html`<option${s === status ? ' selected' : ''}>${s}</option>`)}</select></label>
<p><button type="submit">Filter</button></p>
</form>
<form method="post" action="/console/replay">
<input type="hidden" name="csrf" value="${view.csrf}">
<input type="hidden" name="provider" value="${provider}"><input type="hidden" name="status" value="${status}">
<div class="scroll"><table data-table="dead-letters">
<thead><tr><th>pick</th><th>conversion</th><th>message</th><th>provider</th><th>status</th><th>attempts</th><th>last answer</th><th>reason</th><th>age</th><th></th></tr></thead>
<tbody>${view.rows.map(
    (d) => html`<tr data-conversion="${d.id}"><td><input type="checkbox" name="ids" value="${d.id}" aria-label="pick conversion ${d.id}"></td><td>${d.id}</td>
<td><a href="/console/messages/${encodeURIComponent(d.sms_id)}">${d.activity_key}</a></td><td>${d.provider}</td><td>${d.delivery_status}</td><td class="num">${d.attempts}</td>
<td>${d.last_http_status === null ? (d.last_attempt_at === null ? '—' : 'no HTTP answer') : `HTTP ${d.last_http_status}`}${d.last_attempt_at === null ? '' : html`<br><span class="muted">${when(d.last_attempt_at)}</span>`}</td>
<td class="text">${d.last_error ?? '—'}</td><td title="${when(d.created_at)} UTC">${age(view.now - d.created_at)}</td>
<td><button type="submit" name="only" value="${d.id}">Replay</button></td></tr>`,
  )}</tbody></table></div>
${view.rows.length === 0 ? html`<p class="notice" role="status">No dead conversion${provider || status ? ' matches' : ''}.</p>` : ''}
<p><button type="submit" name="action" value="selected"${view.rows.length === 0 ? ' disabled' : ''}>Replay ticked</button>
<button type="submit" name="action" value="matching"${view.rows.length === 0 ? ' disabled' : ''}>Replay all ${provider || status ? 'matching' : 'dead conversions'}</button></p>
</form>
${view.nextCursor ? html`<p><a href="/console/dead-letters?${next.toString()}" rel="next">Older →</a></p>` : ''}
</section>`;
}
