/**
 * Dead-lettered CRM events (the events outbox, src/ledger/events.ts) as a list: type, user, attempts, the CRM's
 * last answer and error, age, with replay of one event, the ticked events, or every dead event matching the filter.
 * One form; the button pressed says which (eventReplayFormMatch). The frame is dead-list-frame.ts.
 */
import { html } from 'hono/html';
import { z } from 'zod';
import { EVENT_TYPES, parseEventQuery } from './event-query.js';
import {
  countEventBacklog,
  countNotRoutedEvents,
  listEvents,
  oldestUnsentEvent,
  replayDeadEvents,
  type DeadEventMatch,
  type EventBacklog,
  type EventRow,
} from '../ledger/events.js';
import { renderOwedRow, type OutboxPanel } from '../outbox/panel.js';
import { keysetPage } from '../outbox/list-query.js';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import { age, when, renderDeadList, type DeadListView } from '../outbox/dead-list-frame.js';
import { readDeadReplayForm, userIdField } from '../outbox/replay-form.js';
import { DEAD_LIST_PAGE, type DeadListDeps, type DeadListSpec } from '../outbox/dead-list.js';
import { csrfFormSchema, cursorField, deadListAnswers, field, formContentType, replayRefusals, searchField } from '../outbox/page-docs.js';

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

/** What the dead-event replay form posts. */
const eventReplayFormSchema = csrfFormSchema.extend({
  only: z.string().uuid().optional().describe('The one event whose Replay button was pressed'),
  action: z
    .enum(['selected', 'matching'])
    .optional()
    .describe('selected: the ticked ids; matching: every dead event matching type and user_id (required unless only is given)'),
  ids: z.array(z.string().uuid()).optional().describe('Ticked event ids'),
  type: z
    .enum(['', ...EVENT_TYPES] as [string, ...string[]])
    .optional()
    .describe('Filter of the list'),
  user_id: field('Filter of the list').optional(),
});

/** The dead CRM events' list and replay, as src/console/dead-list-routes.ts mounts them. */
export function deadEventsList(deps: DeadListDeps): DeadListSpec<EventRow, DeadEventMatch> {
  return {
    kind: 'events',
    list: {
      path: '/dead-events',
      signIn: 'Sign in to see the dead CRM events.',
      doc: {
        tag: 'console',
        summary: 'Dead-lettered CRM events with type, user, attempts, the CRM’s last answer and age, and replay buttons',
        security: ['consoleSession'],
        parameters: [
          { name: 'type', in: 'query', description: 'CRM queue type', schema: z.enum(['', ...EVENT_TYPES] as [string, ...string[]]) },
          searchField('user_id', 'The player'),
          cursorField,
        ],
        responses: deadListAnswers('dead-event'),
      },
    },
    replay: {
      path: '/events/replay',
      name: 'dead CRM events',
      doc: {
        tag: 'console',
        summary: 'Make dead CRM events due again: one, the ticked ones, or all matching the filter',
        security: ['consoleSession'],
        request: { schema: eventReplayFormSchema, contentTypes: [formContentType] },
        responses: {
          303: { description: 'Done; back to the dead events', headers: { Location: { description: '/console/dead-events?replayed=N', schema: z.string() } } },
          ...replayRefusals('dead events'),
        },
      },
    },
    async load(params) {
      const query = parseEventQuery(params, { form: true, ignore: ['replayed'] });
      if (!query.ok) return query;
      // The list is of dead events only: status is not a parameter here.
      if (query.filter.status !== undefined) return { ok: false, error: 'status: this list shows dead events only' };
      return { ok: true, ...keysetPage(await listEvents(deps.readDb, { ...query.filter, status: 'dead', limit: DEAD_LIST_PAGE + 1 }), DEAD_LIST_PAGE) };
    },
    render: renderDeadEvents,
    readForm: eventReplayFormMatch,
    replayRows: (match) => replayDeadEvents(deps.db, deps.now(), match),
  };
}

/** The CRM event outbox on the dashboard: owed, of which retrying and not routed, dead, and how long the oldest has waited. */
export const eventPanel: OutboxPanel<EventBacklog & { notRouted: number; oldestUnsentAt: number | null }> = {
  section: 'crm-events',
  heading: 'CRM event outbox',
  load: async (readDb) => ({
    ...(await countEventBacklog(readDb)),
    notRouted: await countNotRoutedEvents(readDb),
    oldestUnsentAt: await oldestUnsentEvent(readDb),
  }),
  render: (events, at) =>
    renderOwedRow(
      at,
      'crm-events',
      'data-events',
      { owed: ['unsent', events.unsent], retrying: events.retrying, dead: events.dead, oldestAt: events.oldestUnsentAt },
      { owed: 'accepted, not yet taken by the CRM', dead: 'stopped after relay.max_attempts', oldest: 'since the oldest owed event was accepted' },
      {
        key: 'not-routed',
        label: 'not routed',
        title: 'of those, last sent to a broker that routed it to no queue or partition (a binding or topic missing on the CRM side); retried',
        n: events.notRouted,
      },
    ),
  deadList: { href: '/console/dead-events', text: 'The dead CRM events, with their reasons →' },
};
