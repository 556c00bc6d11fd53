/**
 * Dead-lettered credits (the sql backend's credits outbox, src/ledger/credit-delivery.ts) as a list: user, bonus
 * code, amount, credit_id, attempts, the operator's last answer or the error, age; with replay of one credit, the
 * ticked credits, or every dead credit of the filter (creditReplayFormMatch). The frame is dead-list-frame.ts.
 */
import { html } from 'hono/html';
import { z } from 'zod';
import {
  countCreditBacklog,
  listDeadCredits,
  replayDeadCredits,
  type CreditBacklog,
  type DeadCredit,
  type DeadCreditMatch,
} from '../../ledger/credit-delivery.js';
import { renderOwedRow, type OutboxPanel } from '../../outbox/panel.js';
import { cursorParameter, keysetPage, parseListQuery } from '../../outbox/list-query.js';
import { maskPhoneNumbersIn } from '../../observability/logger.js';
import { age, when, renderDeadList, type DeadListView } from '../../outbox/dead-list-frame.js';
import { readDeadReplayForm, userIdField } from '../../outbox/replay-form.js';
import { DEAD_LIST_PAGE, type DeadListDeps, type DeadListSpec } from '../../outbox/dead-list.js';
import { csrfFormSchema, cursorField, deadListAnswers, field, formContentType, replayRefusals, searchField } from '../../outbox/page-docs.js';
import { exactAmount } from './credit-rows.js';

export interface DeadCreditsView extends DeadListView {
  rows: DeadCredit[];
  now: number;
}

/** As the CRM wrote it (exactAmount): the stored double would show 12345678901234567.25 as 12345678901234568. */
const amount = (c: DeadCredit) => {
  const written = exactAmount(c);
  return written === null ? '—' : `${String(written)}${c.currency ? ` ${c.currency}` : ''}`;
};

export function renderDeadCredits(view: DeadCreditsView) {
  const userId = view.params.get('user_id') ?? '';
  return renderDeadList(view, {
    section: 'dead-credits',
    heading: 'Dead credits',
    intro: html`<p class="muted">Credits the CRM was answered for (sql backend) that the operator's endpoint (operator.credits.url) did not take within operator.credits.max_attempts. The player has not received them. Replaying one pushes it again with a fresh retry budget and the same Idempotency-Key (its credit_id). <a href="/console/dead-events">Dead CRM events →</a></p>`,
    listPath: '/console/dead-credits',
    replayPath: '/console/credits/replay',
    filterFields: html`<label>Player (user_id)<input name="user_id" value="${userId}" maxlength="256"></label>`,
    hiddenFilter: html`<input type="hidden" name="user_id" value="${userId}">`,
    filtered: Boolean(userId),
    headers: ['user', 'kind', 'bonus code', 'amount', 'last answer', 'attempts', 'age'],
    afterHeaders: ['credit_id'],
    rows: view.rows.map((c) => ({
      id: String(c.id),
      attribute: 'data-credit',
      cells: html`<td><a href="/console/dead-credits?user_id=${encodeURIComponent(c.user_id)}">${c.user_id}</a></td><td>${c.kind}</td><td>${c.bonus_code}</td><td class="num">${amount(c)}</td>
<td class="text">${c.delivery_error === null ? '—' : maskPhoneNumbersIn(c.delivery_error)}</td><td class="num">${c.delivery_attempts}</td><td title="credited ${when(c.created_at)} UTC">${age(view.now - c.created_at)}</td>`,
      after: html`<td><code>${c.id}</code></td>`,
    })),
    replayedNoun: 'dead credit(s)',
    replayedThen: 'the credit outbox pushes them now.',
    none: 'No dead credit',
    all: 'dead credits',
  });
}

/** The list's query string (user_id, cursor) to a filter, or an error naming the parameter. Pure. */
export function parseDeadCreditQuery(params: URLSearchParams): { ok: true; filter: { userId?: string; before?: number } } | { ok: false; error: string } {
  const filter: { userId?: string; before?: number } = {};
  // user_ids are the operator's strings: kept as given (a space may be part of one).
  return parseListQuery(
    params,
    {
      user_id: (value, f) => {
        f.userId = value;
        return undefined;
      },
      cursor: cursorParameter((f, before) => {
        f.before = before;
      }),
    },
    filter,
    { form: true, ignore: ['replayed'], untrimmed: ['user_id'] },
  );
}

/** credit_ids are the ledger's row ids, as POST /bonus/credit answered them. */
const CREDIT_ID = /^[1-9]\d{0,14}$/;

export function creditReplayFormMatch(form: FormData): { ok: true; match: DeadCreditMatch } | { ok: false; error: string } {
  const read = readDeadReplayForm(form, {
    noun: 'credit',
    idPattern: CREDIT_ID,
    filter: (text) => {
      const user = userIdField(text);
      return user.ok ? { ok: true, filter: user.userId ? { userId: user.userId } : {} } : user;
    },
  });
  if (!read.ok) return read;
  return { ok: true, match: read.ids ? { ids: read.ids.map(Number) } : read.filter };
}

/** What the dead-credit replay form posts. */
const creditReplayFormSchema = csrfFormSchema.extend({
  only: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/)
    .optional()
    .describe('The one credit (credit_id) whose Replay button was pressed'),
  action: z
    .enum(['selected', 'matching'])
    .optional()
    .describe('selected: the ticked ids; matching: every dead credit of user_id, or every dead credit (required unless only is given)'),
  ids: z
    .array(z.string().regex(/^[1-9][0-9]{0,14}$/))
    .optional()
    .describe('Ticked credit_ids'),
  user_id: field('Filter of the list').optional(),
});

/** The dead credits' list and replay, as src/console/dead-list-routes.ts mounts them. */
export function deadCreditsList(deps: DeadListDeps): DeadListSpec<DeadCredit, DeadCreditMatch> {
  return {
    kind: 'credits',
    list: {
      path: '/dead-credits',
      signIn: 'Sign in to see the dead credits.',
      doc: {
        tag: 'console',
        summary:
          'Dead-lettered credits (sql backend, operator.credits.url) with user, bonus code, amount, attempts, the operator’s last answer and age, and replay buttons',
        security: ['consoleSession'],
        parameters: [searchField('user_id', 'The player'), cursorField],
        responses: deadListAnswers('dead-credit'),
      },
    },
    replay: {
      path: '/credits/replay',
      name: 'dead credits',
      doc: {
        tag: 'console',
        summary: 'Make dead credits due again for operator.credits.url: one, the ticked ones, or all of the filter',
        security: ['consoleSession'],
        request: { schema: creditReplayFormSchema, contentTypes: [formContentType] },
        responses: {
          303: {
            description: 'Done; back to the dead credits',
            headers: { Location: { description: '/console/dead-credits?replayed=N', schema: z.string() } },
          },
          ...replayRefusals('dead credits'),
        },
      },
    },
    async load(params) {
      const query = parseDeadCreditQuery(params);
      if (!query.ok) return query;
      return { ok: true, ...keysetPage(await listDeadCredits(deps.readDb, { ...query.filter, limit: DEAD_LIST_PAGE + 1 }), DEAD_LIST_PAGE) };
    },
    render: renderDeadCredits,
    readForm: creditReplayFormMatch,
    replayRows: (match) => replayDeadCredits(deps.db, match, deps.now()),
  };
}

/** The credits outbox on the dashboard, shown when operator.credits.url is set. */
export const creditPanel: OutboxPanel<CreditBacklog> = {
  section: 'credits',
  heading: 'Credits outbox (to operator.credits.url)',
  load: (readDb) => countCreditBacklog(readDb),
  render: (credits, at) =>
    renderOwedRow(
      at,
      'credits',
      'data-credits',
      { owed: ['due', credits.due], retrying: credits.retrying, dead: credits.dead, oldestAt: credits.oldestDueAt },
      {
        owed: 'answered to the CRM, not yet taken by operator.credits.url',
        dead: 'stopped after operator.credits.max_attempts',
        oldest: 'since the oldest owed credit was made',
      },
    ),
  deadList: { href: '/console/dead-credits', text: "The dead credits, with the operator's last answer →" },
};
