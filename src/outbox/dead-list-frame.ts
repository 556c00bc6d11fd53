/**
 * The frame of every outbox's dead list in the console (dead conversions, dead CRM events, dead credits; each kind's
 * cells in its area's dead-*-page.ts): the replay notice, the filter form,
 * one post form with the session's CSRF token whose pressed button says what to replay (a row's Replay, the ticked
 * rows, or all matching the filter), the table with a pick box and a Replay button per row, and the Older link.
 * Escaped by hono/html; no script.
 */
import { html } from 'hono/html';

type Html = ReturnType<typeof html>;

/** A UTC time as the console shows it: "2026-11-28 09:04:11". */
export const when = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? '—' : new Date(Number(ms)).toISOString().replace('T', ' ').slice(0, 19);

/** "3 d 4 h", "12 min": how long a dead row has waited. */
export function age(ms: number): string {
  const minutes = Math.max(0, Math.floor(ms / 60_000));
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

export interface DeadListView {
  params: URLSearchParams;
  csrf: string;
  nextCursor: string | null;
  replayed?: number;
  error?: string;
}

export interface DeadListRow {
  /** What the pick box and Replay button post. */
  id: string;
  /** The row's data- attribute (data-conversion, data-event, data-credit). */
  attribute: string;
  /** The cells between the pick box and the Replay button, then those after it. */
  cells: Html;
  after: Html;
}

export interface DeadListParts {
  section: string;
  heading: string;
  intro: Html;
  listPath: string;
  replayPath: string;
  /** The filter form's fields, and the same filter as hidden fields of the replay form. */
  filterFields: Html;
  hiddenFilter: Html;
  filtered: boolean;
  /** Header cells between "pick" and the Replay column, then after it. */
  headers: string[];
  afterHeaders: string[];
  rows: DeadListRow[];
  /** "dead CRM event(s)": what the notices count; `replayedThen`: what happens to them next. */
  replayedNoun: string;
  replayedThen: string;
  /** "No dead CRM event" (then " matches." or "."). */
  none: string;
  /** "dead events": the Replay all button's words without a filter. */
  all: string;
}

export function renderDeadList(view: DeadListView, parts: DeadListParts) {
  const next = new URLSearchParams(view.params);
  next.delete('replayed');
  if (view.nextCursor) next.set('cursor', view.nextCursor);
  const empty = parts.rows.length === 0;
  return html`${view.replayed !== undefined ? html`<p class="notice" role="status">Replayed ${view.replayed} ${parts.replayedNoun}; ${parts.replayedThen}</p>` : ''}
${view.error ? html`<p class="notice error" role="alert">${view.error}</p>` : ''}
<section id="${parts.section}">
<h2>${parts.heading}</h2>
${parts.intro}
<form method="get" action="${parts.listPath}" class="search">
${parts.filterFields}
<p><button type="submit">Filter</button></p>
</form>
<form method="post" action="${parts.replayPath}">
<input type="hidden" name="csrf" value="${view.csrf}">
${parts.hiddenFilter}
<div class="scroll"><table data-table="${parts.section}">
<thead><tr><th>pick</th>${parts.headers.map((h) => html`<th>${h}</th>`)}<th></th>${parts.afterHeaders.map((h) => html`<th>${h}</th>`)}</tr></thead>
<tbody>${parts.rows.map(
    (
      r,
    ) => html`<tr ${r.attribute}="${r.id}"><td><input type="checkbox" name="ids" value="${r.id}" aria-label="pick ${r.attribute.replace('data-', '')} ${r.id}"></td>
${r.cells}<td><button type="submit" name="only" value="${r.id}">Replay</button></td>${r.after}</tr>`,
  )}</tbody></table></div>
${empty ? html`<p class="notice" role="status">${parts.none}${parts.filtered ? ' matches' : ''}.</p>` : ''}
<p><button type="submit" name="action" value="selected"${empty ? ' disabled' : ''}>Replay ticked</button>
<button type="submit" name="action" value="matching"${empty ? ' disabled' : ''}>Replay all ${parts.filtered ? 'matching' : parts.all}</button></p>
</form>
${view.nextCursor ? html`<p><a href="${parts.listPath}?${next.toString()}" rel="next">Older →</a></p>` : ''}
</section>`;
}
