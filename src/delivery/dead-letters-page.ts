/**
 * Dead-lettered conversions (the conversion outbox, src/ledger/conversions.ts) as a list: reason, attempts, the
 * webhook's last answer and age, with replay of one row, the ticked rows, or every dead letter matching the filter.
 * One form; the button pressed says which (replayFormMatch). The frame is dead-list-frame.ts.
 */
import { html } from 'hono/html';
import { z } from 'zod';
import { DEAD_LETTER_STATUSES } from './dead-letter-query.js';
import { parseDeadLetterQuery } from './dead-letter-query.js';
import {
  countOutboxBacklog,
  listDeadConversions,
  oldestUnpostedConversion,
  replayDeadConversions,
  type DeadLetter,
  type DeadLetterMatch,
  type OutboxBacklog,
} from '../ledger/conversions.js';
import { countParkedReceiptsByProvider } from '../ledger/receipts.js';
import type { OutboxPanel } from '../outbox/panel.js';
import { keysetPage } from '../outbox/list-query.js';
import { age, when, renderDeadList, type DeadListView } from '../outbox/dead-list-frame.js';
import { readDeadReplayForm } from '../outbox/replay-form.js';
import type { DeadListDeps, DeadListSpec } from '../outbox/dead-list.js';
import { backToConsole, csrfFormSchema, deadListAnswers, field, formContentType, page, replayRefusals, searchField } from '../outbox/page-docs.js';

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
 * What a replay post from the dead-letter list asks for (replay-form.ts), or no action at all: the
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

/** What the replay form posts: the CSRF token and which dead letters. */
const replayFormSchema = csrfFormSchema.extend({
  only: z
    .string()
    .regex(/^[0-9]{1,15}$/)
    .optional()
    .describe('The one conversion whose Replay button was pressed'),
  action: z
    .enum(['selected', 'matching'])
    .optional()
    .describe('selected: the ticked ids; matching (or absent): every dead letter matching provider and status'),
  ids: z
    .array(z.string().regex(/^[0-9]{1,15}$/))
    .optional()
    .describe('Ticked conversion ids'),
  provider: field('Filter of the list').optional(),
  status: z.enum(['', 'delivered', 'undelivered', 'failed', 'delivery_unknown']).optional(),
});

/** The dead conversions' list and replay, as src/console/dead-list-routes.ts mounts them. */
export function deadLettersList(deps: DeadListDeps): DeadListSpec<DeadLetter, DeadLetterMatch> {
  return {
    kind: 'conversions',
    list: {
      path: '/dead-letters',
      signIn: 'Sign in to see the dead letters.',
      doc: {
        tag: 'console',
        summary: 'Dead-lettered conversions with reasons, attempts, last answers and ages, and replay buttons',
        security: ['consoleSession'],
        parameters: [searchField('provider', 'Provider name'), searchField('status', 'Delivery status reported'), searchField('cursor', 'The next page')],
        responses: { ...deadListAnswers('dead-letter'), 400: page('A filter is not valid') },
      },
    },
    replay: {
      path: '/replay',
      name: 'dead letters',
      doc: {
        tag: 'console',
        summary: 'Make dead-lettered conversions due again: one, the ticked ones, or all matching the filter',
        security: ['consoleSession'],
        request: { schema: replayFormSchema, contentTypes: [formContentType] },
        responses: { 303: backToConsole, ...replayRefusals('dead letters') },
      },
    },
    async load(params) {
      const query = parseDeadLetterQuery(params, { form: true, ignore: ['replayed'] });
      if (!query.ok) return query;
      return { ok: true, ...keysetPage(await listDeadConversions(deps.readDb, { ...query.match, limit: query.limit + 1 }), query.limit) };
    },
    render: (view) => renderDeadLetters({ ...view, providers: deps.providers }),
    readForm: replayFormMatch,
    replayRows: (match) => replayDeadConversions(deps.db, deps.now(), match),
  };
}

/** The conversion outbox on the dashboard: due, retrying, dead, the oldest owed, and the parked receipts beside it. */
export const conversionPanel: OutboxPanel<{ backlog: OutboxBacklog; oldestOwed: number | null; parked: number }> = {
  section: 'outbox',
  heading: 'Conversion outbox',
  load: async (readDb) => ({
    backlog: await countOutboxBacklog(readDb),
    oldestOwed: await oldestUnpostedConversion(readDb),
    parked: (await countParkedReceiptsByProvider(readDb)).reduce((sum, row) => sum + row.parked, 0),
  }),
  render: ({ backlog, oldestOwed, parked }, at) =>
    html`<div class="scroll"><table data-table="outbox"><thead><tr><th>due</th><th>retrying</th><th>dead</th><th>oldest owed</th><th>parked receipts</th></tr></thead>
<tbody><tr><td data-backlog="due">${backlog.due}</td><td data-backlog="retrying">${backlog.retrying}</td><td data-backlog="dead">${backlog.dead}</td>
<td data-backlog="oldest">${oldestOwed === null ? '—' : age(at - oldestOwed)}</td><td data-backlog="parked">${parked}</td></tr></tbody></table></div>`,
  deadList: { href: '/console/dead-letters', text: 'The dead conversions, with their reasons →' },
};
