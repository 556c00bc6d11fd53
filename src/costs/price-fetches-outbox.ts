/**
 * The price fetches as one outbox kind (src/outbox/descriptor.ts), `price-fetches`: messages of a provider that
 * reports no price in its receipts (Twilio), owed an ask of their price after their final status (price-fetch.ts,
 * docs/costs.md "Twilio"). Its receiver is the providers' `fetchPrice`, bound by `serve` once it has built them
 * (like the held sends' send path); `flush` builds no providers and leaves them to `serve`. A fetch given up is dead
 * and can be replayed. Listed in src/outboxes.ts.
 */
import { html } from 'hono/html';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { route } from '../http/route-table.js';
import { countPriceFetchBacklog, listDeadPriceFetches, replayDeadPriceFetches, type PriceFetchBacklog } from '../ledger/price-fetches.js';
import { renderDeadList, when } from '../outbox/dead-list-frame.js';
import { DEAD_LIST_PAGE } from '../outbox/dead-list.js';
import type { OutboxDescriptor } from '../outbox/descriptor.js';
import { registerOutboxMetrics } from '../outbox/metrics.js';
import { csrfFormSchema, deadListAnswers, formContentType, replayRefusals } from '../outbox/page-docs.js';
import { renderOwedRow, type OutboxPanel } from '../outbox/panel.js';
import { readDeadReplayForm } from '../outbox/replay-form.js';
import { readReplayJson, replayRoute } from '../outbox/replay-route.js';
import { priceFetchOutbox, type PriceAsker } from './price-fetch.js';

type PriceFetchMetrics = ReturnType<typeof registerOutboxMetrics<PriceFetchBacklog>>;

/** The receiver: the providers' asks, bound by `serve` once the providers are built (src/gateway.ts). */
export interface PriceAskerPort {
  asker(): Promise<PriceAsker | undefined>;
  bind(asker: PriceAsker): void;
  /** Ends the asks under way; a round waiting for the binding then asks nothing. */
  abort(): void;
  signal: AbortSignal;
}

function createPriceAskerPort(): PriceAskerPort {
  const stop = new AbortController();
  let bound: PriceAsker | undefined;
  let ready!: (asker: PriceAsker | undefined) => void;
  const binding = new Promise<PriceAsker | undefined>((resolve) => (ready = resolve));
  return {
    asker: async () => bound ?? binding,
    bind(asker) {
      bound = asker;
      ready(asker);
    },
    abort() {
      stop.abort();
      ready(undefined);
    },
    signal: stop.signal,
  };
}

const backlogSchema = z.strictObject({
  owed: z.number().int().describe('Messages whose price is still to be asked of their provider'),
  retrying: z.number().int().describe('Of those, asked at least once (no price yet, or the ask failed)'),
  dead: z.number().int().describe('Given up after costs.twilio_price_fetch.max_attempts: their estimate stands'),
  next_at: z.number().int().nullable().describe('The soonest next ask (epoch ms)'),
});

const adminAnswers = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'The admin API is disabled (admin.api_key is not set)', schema: errorAnswerSchema },
};

const deadRowSchema = z.strictObject({
  sms_id: z.string(),
  provider: z.string(),
  provider_message_id: z.string(),
  attempts: z.number().int(),
  last_error: z.string().nullable(),
});

const replayBodySchema = z.strictObject({
  sms_ids: z.array(z.string().min(1).max(64)).max(10_000).optional().describe('The dead fetches to ask again; all of them when absent'),
});

const pricePanel: OutboxPanel<PriceFetchBacklog> = {
  section: 'price-fetches',
  heading: 'Prices to ask (costs.twilio_price_fetch)',
  load: (readDb) => countPriceFetchBacklog(readDb),
  render: (b, at) =>
    html`${renderOwedRow(
      at,
      'price-fetches',
      'data-price-fetches',
      { owed: ['owed', b.owed], retrying: b.retrying, dead: b.dead, oldestAt: null },
      {
        owed: 'final, their price still to be asked of their provider',
        dead: 'given up after costs.twilio_price_fetch.max_attempts: their estimate stands',
        oldest: 'not kept for price fetches',
      },
    )}<p class="muted" data-price-fetches="next">${b.nextAt === null ? 'None to ask.' : `Next ask ${when(b.nextAt)} UTC.`}</p>`,
  deadList: { href: '/console/dead-price-fetches', text: 'The dead price fetches →' },
};

export const priceFetches: OutboxDescriptor<PriceAskerPort, PriceFetchMetrics> = {
  name: 'price-fetches',
  flushLine: { prefix: 'flush price fetches', sent: 'priced', unreachable: 'provider price lookups failing' },
  receiver(config, { purpose }) {
    // The asks need serve's providers; only a Twilio provider has prices to ask (src/costs/cost-book.ts).
    const fetch = config.costs.twilio_price_fetch;
    if (purpose !== 'serve' || !fetch.enabled || !Object.values(config.providers).some((p) => p.type === 'twilio')) return undefined;
    const port = createPriceAskerPort();
    return { client: port, abort: () => port.abort() };
  },
  outbox: (config, port, deps) => {
    const c = config.costs.twilio_price_fetch;
    return priceFetchOutbox(
      { ratePerSecond: c.rate_per_second, maxAttempts: c.max_attempts, afterMs: c.after, pollIntervalMs: c.poll_interval },
      () => port.asker(),
      { db: deps.db, now: deps.now, signal: port.signal, onPriced: deps.metrics?.sent, onDead: (n) => deps.metrics?.dead(n, 'attempts') },
    );
  },
  async backlog(db) {
    const { owed, dead } = await countPriceFetchBacklog(db);
    return { left: owed, dead };
  },
  metrics: (registry, { readDb }) =>
    registerOutboxMetrics(
      registry,
      {
        sent: {
          name: 'sms_gateway_price_fetches_priced_total',
          help: 'Messages whose price was asked of their provider and recorded in place of the estimate',
        },
        dead: { name: 'sms_gateway_price_fetches_dead_lettered_total', help: 'Price fetches given up (the estimate stands)' },
        backlog: {
          name: 'sms_gateway_price_fetches_outbox',
          help: 'Price fetches by state: owed (still to be asked), retrying (of those), dead',
          states: (b: PriceFetchBacklog) => ({ owed: b.owed, retrying: b.retrying, dead: b.dead }),
        },
      },
      () => countPriceFetchBacklog(readDb),
    ),
  panel: (config) => (Object.values(config.providers).some((p) => p.type === 'twilio') ? pricePanel : undefined),
  deadList: ({ db, readDb, now }) => ({
    kind: 'price-fetches',
    list: {
      path: '/dead-price-fetches',
      signIn: 'Sign in to see the dead price fetches.',
      doc: { tag: 'console', summary: 'Dead price fetches', security: ['consoleSession'], responses: deadListAnswers('dead price fetch') },
    },
    replay: {
      path: '/price-fetches/replay',
      name: 'dead price fetches',
      doc: {
        tag: 'console',
        summary: 'Ask the price of dead price fetches again: one, the ticked ones, or all',
        security: ['consoleSession'],
        request: { schema: csrfFormSchema, contentTypes: [formContentType] },
        responses: {
          303: {
            description: 'Done; back to the dead price fetches',
            headers: { Location: { description: '/console/dead-price-fetches?replayed=N', schema: z.string() } },
          },
          ...replayRefusals('dead price fetches'),
        },
      },
    },
    load: async (params) => {
      // One page and no filter (fetches given up are rare): any other parameter is a mistake.
      const unknown = [...params.keys()].find((key) => key !== 'replayed');
      if (unknown !== undefined) return { ok: false, error: `${unknown}: not a parameter of this list` };
      return { ok: true, rows: await listDeadPriceFetches(readDb, DEAD_LIST_PAGE), nextCursor: null };
    },
    render: (view) =>
      renderDeadList(view, {
        section: 'dead-price-fetches',
        heading: 'Dead price fetches',
        intro: html`<p class="muted">Messages whose price the provider did not give within costs.twilio_price_fetch.max_attempts asks; their estimate stands. Replaying them asks again from the first ask.</p>`,
        listPath: '/console/dead-price-fetches',
        replayPath: '/console/price-fetches/replay',
        filterFields: html``,
        hiddenFilter: html``,
        filtered: false,
        headers: ['sms_id', 'provider', 'last error', 'asks'],
        afterHeaders: [],
        rows: view.rows.map((r) => ({
          id: r.sms_id,
          attribute: 'data-price-fetch-row',
          cells: html`<td><a href="/console/messages/${encodeURIComponent(r.sms_id)}"><code>${r.sms_id}</code></a></td><td>${r.provider}</td><td class="text">${r.last_error ?? '—'}</td><td class="num">${r.attempts}</td>`,
          after: html``,
        })),
        replayedNoun: 'dead price fetch(es)',
        replayedThen: 'the price fetches outbox asks them now.',
        none: 'No dead price fetch',
        all: 'dead price fetches',
      }),
    readForm: (form) => {
      const request = readDeadReplayForm(form, { noun: 'price fetch', idPattern: /^[A-Za-z0-9_.:-]{1,64}$/, filter: () => ({ ok: true, filter: null }) });
      if (!request.ok) return request;
      return { ok: true, match: request.ids };
    },
    replayRows: (ids) => replayDeadPriceFetches(db, now(), ids),
  }),
  adminRoutes: ({ db, readDb, now, wake }) => [
    route({
      method: 'get',
      path: '/price-fetches',
      doc: {
        tag: 'admin',
        summary: 'Prices still to be asked of their provider',
        description: 'The price fetches outbox: messages whose price is asked of their provider after their final status (docs/costs.md "Twilio").',
        security: ['adminBearer'],
        responses: { 200: { description: 'The backlog', schema: backlogSchema }, ...adminAnswers },
      },
      handlers: [
        async (c) => {
          const b = await countPriceFetchBacklog(readDb);
          return c.json({ owed: b.owed, retrying: b.retrying, dead: b.dead, next_at: b.nextAt });
        },
      ],
    }),
    route({
      method: 'get',
      path: '/price-fetches/dead',
      doc: {
        tag: 'admin',
        summary: 'Price fetches given up (the estimate stands), at most 100',
        security: ['adminBearer'],
        responses: { 200: { description: 'The dead price fetches', schema: z.strictObject({ dead: z.array(deadRowSchema) }) }, ...adminAnswers },
      },
      handlers: [async (c) => c.json({ dead: await listDeadPriceFetches(readDb, DEAD_LIST_PAGE) })],
    }),
    route({
      method: 'post',
      path: '/price-fetches/replay',
      doc: {
        tag: 'admin',
        summary: 'Ask the price of dead price fetches again: the given sms_ids, or all of them',
        security: ['adminBearer'],
        request: { schema: replayBodySchema },
        responses: {
          200: { description: 'How many dead price fetches are due again', schema: z.strictObject({ replayed: z.number().int() }) },
          400: { description: 'The body is not JSON, or a field is not valid (the error names it)', schema: errorAnswerSchema },
          ...adminAnswers,
        },
      },
      handlers: [
        replayRoute({
          read: (c) =>
            readReplayJson(c, replayBodySchema, (issue) => {
              if (issue.code === 'unrecognized_keys')
                return `body: only sms_ids is accepted, not ${issue.keys.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}`;
              const field = issue.path.length ? String(issue.path[0]) : 'body';
              return `${field}: ${field === 'sms_ids' ? 'must be an array of at most 10000 sms_ids' : 'must be a JSON object'}`;
            }),
          replay: (request) => replayDeadPriceFetches(db, now(), request.sms_ids),
          kind: 'price-fetches',
          wake,
        }),
      ],
    }),
  ],
};
