/** The console's message search: the form (every filter of GET /admin/messages) and a page of results. */
import { html } from 'hono/html';
import { SEARCH_STATUSES, type MessageFilter, type MessageSummary } from '../ledger/message-search.js';
import { maskPhoneNumber, maskPhoneNumbersIn } from '../observability/logger.js';
import { when } from '../outbox/dead-list-frame.js';

/** For datetime-local inputs, which take no zone: the console's times are UTC. */
const inputTime = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16));

/** A recipient as the console shows it: masked unless it is the number searched for. */
export function shownRecipient(recipient: string, searched: string | undefined): string {
  return recipient === searched ? recipient : maskPhoneNumber(recipient);
}

/** What a row's status column says: the word the status filter takes for it. */
export function statusWord(row: Pick<MessageSummary, 'state' | 'delivery_status'>): string {
  const stored = row.delivery_status ?? row.state;
  for (const [word, value] of SEARCH_STATUSES) if (value === stored) return word;
  return stored;
}

export interface SearchView {
  /** The form's values as given (the text typed, not the normalised number). */
  params: URLSearchParams;
  providers: readonly string[];
  filter?: MessageFilter;
  results?: { rows: MessageSummary[]; nextCursor: string | null };
  error?: string;
}

export function renderSearchForm(view: SearchView) {
  const value = (name: string) => view.params.get(name) ?? '';
  const f = view.filter;
  const status = value('status');
  const provider = value('provider');
  return html`<form method="get" action="/console" class="search">
<label>Phone number<input type="search" name="recipient" value="${value('recipient')}" placeholder="+447700900123 or national" inputmode="tel"></label>
<label>Player (user_id)<input type="search" name="user_id" value="${value('user_id')}"></label>
<label>activity.id<input type="search" name="activity_id" value="${value('activity_id')}"></label>
<label>sms_id<input type="search" name="sms_id" value="${value('sms_id')}"></label>
<label>Provider<select name="provider"><option value="">any</option>${view.providers.map((p) => html`<option${p === provider ? ' selected' : ''}>${p}</option>`)}</select></label>
<label>Status<select name="status"><option value="">any</option>${[...SEARCH_STATUSES.keys()].map((s) => html`<option${s === status ? ' selected' : ''}>${s}</option>`)}</select></label>
<label>From (UTC)<input type="datetime-local" name="from" value="${f?.from !== undefined ? inputTime(f.from) : value('from')}"></label>
<label>To (UTC)<input type="datetime-local" name="to" value="${f?.to !== undefined ? inputTime(f.to) : value('to')}"></label>
<p><button type="submit">Search</button> <a href="/console">Clear</a></p>
</form>
${view.error ? html`<p class="notice error" role="alert">${view.error}</p>` : ''}`;
}

export function renderResults(view: SearchView) {
  const results = view.results;
  if (!results) return '';
  if (results.rows.length === 0) return html`<p class="notice" role="status">No message matches.</p>`;
  const searched = view.filter?.recipient;
  const next = new URLSearchParams(view.params);
  if (results.nextCursor) next.set('cursor', results.nextCursor);
  const detail = (smsId: string) => `/console/messages/${encodeURIComponent(smsId)}${searched ? `?recipient=${encodeURIComponent(searched)}` : ''}`;
  return html`<div class="scroll"><table data-table="results">
<thead><tr><th>created (UTC)</th><th>recipient</th><th>status</th><th>provider</th><th>activity.id</th><th>user_id</th><th>sms_id</th><th>error</th></tr></thead>
<tbody>${results.rows.map(
    (
      r,
    ) => html`<tr data-sms-id="${r.sms_id}"><td>${when(r.created_at)}</td><td data-field="recipient">${shownRecipient(r.recipient, searched)}</td><td data-field="status">${statusWord(r)}</td><td title="${r.route === null ? '' : routeText(r)}">${r.provider}${r.route === null ? '' : html` <span class="muted">(${r.route} ${r.route_rule === 0 ? 'catch-all' : `rule ${r.route_rule_name ?? r.route_rule}`})</span>`}</td>
<td>${r.activity_key}</td><td>${r.user_id ?? '—'}</td><td><a href="${detail(r.sms_id)}">${r.sms_id}</a></td><td class="text">${r.error === null ? '' : maskPhoneNumbersIn(r.error)}</td></tr>`,
  )}</tbody></table></div>
<p class="muted">${results.rows.length} shown, newest first.${results.nextCursor ? html` <a href="/console?${next.toString()}" rel="next">Older messages →</a>` : ''}</p>`;
}

/** "route BR-promo, rule 2 (brazil), member sinch": where the route's rules sent it; null for a provider named directly. */
export function routeText(m: { route: string | null; route_rule: number | null; route_rule_name: string | null; provider: string }): string | null {
  if (m.route === null) return null;
  const rule = m.route_rule === 0 ? 'catch-all' : `rule ${m.route_rule}${m.route_rule_name ? ` (${m.route_rule_name})` : ''}`;
  return `route ${m.route}, ${rule}${m.provider !== m.route ? `, member ${m.provider}` : ''}`;
}
