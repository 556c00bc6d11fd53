/**
 * Dead-lettered conversions (the conversion outbox, src/ledger/conversions.ts) as a list: reason, attempts, the
 * webhook's last answer and age, with replay of one row, the ticked rows, or every dead letter matching the filter.
 * One form; the button pressed says which (replayFormMatch). The frame is src/outbox/dead-list.ts.
 */
import { html } from 'hono/html';
import { DEAD_LETTER_STATUSES } from '../delivery/dead-letter-query.js';
import type { DeadLetter, DeadLetterMatch } from '../ledger/conversions.js';
import { age, renderDeadList, type DeadListView } from '../outbox/dead-list.js';
import { readDeadReplayForm } from '../outbox/replay-form.js';
import { when } from './search-page.js';

export interface DeadLettersView extends DeadListView {
  rows: DeadLetter[];
  providers: readonly string[];
  now: number;
}

const lastAnswer = (d: DeadLetter) => (d.last_http_status === null ? (d.last_attempt_at === null ? '—' : 'no HTTP answer') : `HTTP ${d.last_http_status}`);

export function renderDeadLetters(view: DeadLettersView) {
  const provider = view.params.get('provider') ?? '';
  const status = view.params.get('status') ?? '';
  return renderDeadList(view, {
    section: 'dead-letters',
    heading: 'Dead conversions',
    intro: html`<p class="muted">Conversions the CRM's webhook did not take within delivery.max_attempts. Replaying one makes it due again with a fresh retry budget. <a href="/console/dead-events">Dead CRM events →</a></p>`,
    listPath: '/console/dead-letters',
    replayPath: '/console/replay',
    filterFields: html`<label>Provider<select name="provider"><option value="">any</option>${view.providers.map((p) => html`<option${p === provider ? ' selected' : ''}>${p}</option>`)}</select></label>
<label>Status<select name="status"><option value="">any</option>${DEAD_LETTER_STATUSES.map((s) => html`<option${s === status ? ' selected' : ''}>${s}</option>`)}</select></label>`,
    hiddenFilter: html`<input type="hidden" name="provider" value="${provider}"><input type="hidden" name="status" value="${status}">`,
    filtered: Boolean(provider || status),
    headers: ['conversion', 'message', 'provider', 'status', 'attempts', 'last answer', 'reason', 'age'],
    afterHeaders: [],
    rows: view.rows.map((d) => ({
      id: String(d.id),
      attribute: 'data-conversion',
      cells: html`<td>${d.id}</td>
<td><a href="/console/messages/${encodeURIComponent(d.sms_id)}">${d.activity_key}</a></td><td>${d.provider}</td><td>${d.delivery_status}</td><td class="num">${d.attempts}</td>
<td>${lastAnswer(d)}${d.last_attempt_at === null ? '' : html`<br><span class="muted">${when(d.last_attempt_at)}</span>`}</td>
<td class="text">${d.last_error ?? '—'}</td><td title="${when(d.created_at)} UTC">${age(view.now - d.created_at)}</td>`,
      after: html``,
    })),
    replayedNoun: 'dead conversion(s)',
    replayedThen: 'the conversion outbox posts them now.',
    none: 'No dead conversion',
    all: 'dead conversions',
  });
}

const CONVERSION_ID = /^\d{1,15}$/;

/**
 * What a replay post from the dead-letter list asks for (src/outbox/replay-form.ts), or no action at all: the
 * dashboard's "replay all". Pure, for table tests.
 */
export function replayFormMatch(form: FormData): { ok: true; match: DeadLetterMatch } | { ok: false; error: string } {
  const read = readDeadReplayForm(form, {
    noun: 'conversion',
    idPattern: CONVERSION_ID,
    trim: true,
    matchingByDefault: true,
    filter: (text) => {
      const provider = text('provider');
      const status = text('status');
      if (provider === null || (provider !== undefined && provider.length > 256)) return { ok: false, error: 'provider: must be one provider name' };
      if (status === null) return { ok: false, error: 'status: must be one status' };
      const knownStatus = status ? DEAD_LETTER_STATUSES.find((s) => s === status) : undefined;
      if (status && !knownStatus) return { ok: false, error: `status: must be one of ${DEAD_LETTER_STATUSES.join(', ')}` };
      return { ok: true, filter: { ...(provider ? { provider } : {}), ...(knownStatus ? { status: knownStatus } : {}) } };
    },
  });
  if (!read.ok) return read;
  return { ok: true, match: read.ids ? { ids: read.ids.map(Number) } : read.filter };
}
