/**
 * The held sends outbox as one unit (src/outbox/descriptor.ts): messages accepted inside their quiet hours
 * (src/sms/quiet-hours.ts), owed to their provider once their window opens. Its receiver is the send path
 * (held-sends.ts: the claim's move out of `held`, the send step with the providers' throttles, the record step),
 * bound by the dispatcher once `serve` has built it; `flush` has no send path and leaves them to `serve`. Each message
 * is marked done as soon as it is handed over (sendEachCommitted), so a process killed mid-round hands over again at
 * most the ones under way, and those find their row no longer `held` (docs/routing.md "Quiet hours"). Listed in
 * src/outboxes.ts.
 */
import { html } from 'hono/html';
import { z } from 'zod';
import { route } from '../http/route-table.js';
import { dialectFlagsOf } from '../ledger/engine/flags.js';
import {
  claimDueHeldSends,
  countHeldBacklog,
  listDeadHeldSends,
  markHeldSendsDone,
  markHeldSendsFailed,
  replayDeadHeldSends,
  type DueHeldSend,
  type HeldBacklog,
} from '../ledger/held-sends.js';
import { age, renderDeadList, when } from '../outbox/dead-list-frame.js';
import { DEAD_LIST_PAGE } from '../outbox/dead-list.js';
import type { OutboxDescriptor } from '../outbox/descriptor.js';
import { registerOutboxMetrics } from '../outbox/metrics.js';
import { sendEachCommitted, type OutboxKind } from '../outbox/outbox.js';
import { csrfFormSchema, deadListAnswers, formContentType, replayRefusals } from '../outbox/page-docs.js';
import { errorAnswerSchema } from '../http/error-answer.js';
import { renderOwedRow, type OutboxPanel } from '../outbox/panel.js';
import { readDeadReplayForm } from '../outbox/replay-form.js';
import { createHeldSendPort, type HeldSendPort } from './held-sends.js';

type HeldMetrics = ReturnType<typeof registerOutboxMetrics<HeldBacklog>>;

const backlogSchema = z.strictObject({
  owed: z.number().int().describe('Held messages not yet handed to their provider'),
  retrying: z.number().int().describe('Of those, tried at least once (a transient failure)'),
  dead: z.number().int(),
  oldest_at: z.number().int().nullable().describe('When the oldest owed one arrived (epoch ms)'),
  next_at: z.number().int().nullable().describe('The soonest time one is released or tried again (epoch ms)'),
});

const heldPanel: OutboxPanel<HeldBacklog> = {
  section: 'held-sends',
  heading: 'Held for quiet hours (quiet_hours)',
  load: (readDb) => countHeldBacklog(readDb),
  render: (held, at) =>
    html`${renderOwedRow(
      at,
      'held-sends',
      'data-held',
      { owed: ['held', held.owed], retrying: held.retrying, dead: held.dead, oldestAt: held.oldestAt },
      {
        owed: 'answered to the CRM, waiting for their window to open',
        dead: 'stopped (none while failures are retried until quiet_hours.max_wait)',
        oldest: 'since the oldest held message arrived',
      },
    )}<p class="muted" data-held="next">${held.nextAt === null ? 'None to release.' : `Next release ${when(held.nextAt)} UTC.`}</p>`,
  deadList: { href: '/console/dead-held-sends', text: 'The dead held messages →' },
};

function heldOutbox(
  settings: OutboxKind<DueHeldSend>['settings'],
  port: HeldSendPort,
  lanes: number,
  deps: { now: () => number; metrics?: HeldMetrics | undefined },
): OutboxKind<DueHeldSend> {
  // The rows of the round under way held again (their window closed at their release): still owed, never marked done.
  const heldAgain = new Set<number>();
  const committed = sendEachCommitted<DueHeldSend>(
    async (row) => {
      const outcome = await port.send(row);
      if ('heldAgain' in outcome) heldAgain.add(row.id);
      return outcome;
    },
    { lanes, leaseMs: settings.lease, now: deps.now },
  );
  return {
    name: 'held sends outbox',
    settings,
    claim: (db, limit, now, leaseMs, token) => claimDueHeldSends(db, dialectFlagsOf(db), limit, now, leaseMs, token),
    attemptsOf: (row) => row.attempts,
    send: (rows, context) => {
      heldAgain.clear();
      const markSent = async (sent: DueHeldSend[], status: number | null) => {
        const done = sent.filter((r) => !heldAgain.has(r.id));
        if (done.length > 0) await context.markSent(done, status);
      };
      return committed(rows, { ...context, markSent });
    },
    markSent: (db, ids, token, at) => markHeldSendsDone(db, ids, token, at),
    markFailed: (db, failed, token) => markHeldSendsFailed(db, failed, token),
    again: (round) => round.sent.length > 0,
    report: (round) => deps.metrics?.sent(round.sent.filter((r) => !heldAgain.has(r.id)).length),
    onDead: (count, reason) => deps.metrics?.dead(count, reason),
  };
}

export const heldSends: OutboxDescriptor<HeldSendPort, HeldMetrics> = {
  name: 'held-sends',
  flushLine: { prefix: 'flush held sends', sent: 'released', unreachable: 'send path unavailable' },
  receiver(_config, { purpose }) {
    // Held rows of an earlier configuration still go out, so serve runs it whatever quiet_hours.windows says now.
    if (purpose !== 'serve') return undefined;
    const port = createHeldSendPort();
    return { client: port, abort: () => port.abort() };
  },
  outbox: (config, port, deps) => {
    const q = config.quiet_hours;
    // A held message's send starts by half the claim's lease at the latest (sendEachCommitted) and ends by
    // sms.send_timeout, its wait for provider capacity included (held-sends.ts): within the claim, so no second
    // claimer sends it meanwhile.
    const lease = Math.max(60_000, 3 * config.sms.send_timeout);
    const settings = { batch_size: 100, poll_interval: q.poll_interval, retry_initial_ms: q.retry_initial_ms, retry_max_ms: q.retry_max_ms, lease };
    return heldOutbox(settings, port, q.concurrency, deps);
  },
  async backlog(db) {
    const { owed, dead } = await countHeldBacklog(db);
    return { left: owed, dead };
  },
  metrics: (registry, { readDb }) =>
    registerOutboxMetrics(
      registry,
      {
        sent: { name: 'sms_gateway_held_sends_released_total', help: 'Held messages handed to the send path (or expired) once their time came' },
        dead: { name: 'sms_gateway_held_sends_dead_lettered_total', help: 'Held messages dead-lettered' },
        backlog: {
          name: 'sms_gateway_held_sends_outbox',
          help: 'Held messages by state: held (not yet handed to their provider), retrying (of those), dead',
          states: (b: HeldBacklog) => ({ held: b.owed, retrying: b.retrying, dead: b.dead }),
        },
      },
      () => countHeldBacklog(readDb),
    ),
  panel: () => heldPanel,
  deadList: ({ db, readDb, now }) => ({
    kind: 'held-sends',
    list: {
      path: '/dead-held-sends',
      signIn: 'Sign in to see the dead held messages.',
      doc: { tag: 'console', summary: 'Dead held messages', security: ['consoleSession'], responses: deadListAnswers('dead held message') },
    },
    replay: {
      path: '/held-sends/replay',
      name: 'dead held messages',
      doc: {
        tag: 'console',
        summary: 'Make dead held messages due again: one, the ticked ones, or all',
        security: ['consoleSession'],
        request: { schema: csrfFormSchema, contentTypes: [formContentType] },
        responses: {
          303: {
            description: 'Done; back to the dead held messages',
            headers: { Location: { description: '/console/dead-held-sends?replayed=N', schema: z.string() } },
          },
          ...replayRefusals('dead held messages'),
        },
      },
    },
    load: async (params) => {
      // The list has no filter and one page (dead held messages are rare): any other parameter is a mistake.
      const unknown = [...params.keys()].find((key) => key !== 'replayed');
      if (unknown !== undefined) return { ok: false, error: `${unknown}: not a parameter of this list` };
      return { ok: true, rows: await listDeadHeldSends(readDb, DEAD_LIST_PAGE), nextCursor: null };
    },
    render: (view) =>
      renderDeadList(view, {
        section: 'dead-held-sends',
        heading: 'Dead held messages',
        intro: html`<p class="muted">Messages held for their quiet hours that the outbox stopped trying. Replaying them makes them due now; one past quiet_hours.max_wait then ends failed.</p>`,
        listPath: '/console/dead-held-sends',
        replayPath: '/console/held-sends/replay',
        filterFields: html``,
        hiddenFilter: html``,
        filtered: false,
        headers: ['sms_id', 'last error', 'attempts', 'released'],
        afterHeaders: [],
        rows: view.rows.map((r) => ({
          id: String(r.id),
          attribute: 'data-held-row',
          cells: html`<td><a href="/console/messages/${encodeURIComponent(r.sms_id)}"><code>${r.sms_id}</code></a></td><td class="text">${r.last_error ?? '—'}</td><td class="num">${r.attempts}</td><td title="${when(r.release_at)} UTC">${age(view.now - r.release_at)}</td>`,
          after: html``,
        })),
        replayedNoun: 'dead held message(s)',
        replayedThen: 'the held sends outbox takes them now.',
        none: 'No dead held message',
        all: 'dead held messages',
      }),
    readForm: (form) => {
      const request = readDeadReplayForm(form, { noun: 'held message', idPattern: /^[0-9]{1,15}$/, filter: () => ({ ok: true, filter: null }) });
      if (!request.ok) return request;
      return { ok: true, match: request.ids?.map(Number) };
    },
    replayRows: (ids) => replayDeadHeldSends(db, now(), ids),
  }),
  adminRoutes: ({ readDb }) => [
    route({
      method: 'get',
      path: '/held-sends',
      doc: {
        tag: 'admin',
        summary: 'Messages held for their quiet hours',
        description: 'The held sends outbox: held messages owed to their provider (docs/routing.md "Quiet hours").',
        security: ['adminBearer'],
        responses: {
          200: { description: 'The backlog', schema: backlogSchema },
          401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
          403: { description: 'The admin API is disabled (admin.api_key is not set)', schema: errorAnswerSchema },
        },
      },
      handlers: [
        async (c) => {
          const b = await countHeldBacklog(readDb);
          return c.json({ owed: b.owed, retrying: b.retrying, dead: b.dead, oldest_at: b.oldestAt, next_at: b.nextAt });
        },
      ],
    }),
  ],
};
