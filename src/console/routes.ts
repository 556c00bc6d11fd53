/**
 * /console: the operators' page, served by the gateway itself. Signing in and out, sessions and CSRF are door.ts; the
 * dead lists and their replays are one descriptor per outbox kind (dead-list-routes.ts); here are the dashboard (search,
 * totals, charts, the outboxes) and one message's page, and the mounting of it all.
 */
import { Hono, type Context } from 'hono';
import { html } from 'hono/html';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { parseMessageQuery, encodeCursor } from '../delivery/message-query.js';
import { messageStory } from '../delivery/message-story.js';
import { htmlPage } from '../http/html-page.js';
import { mountRoutes, route } from '../http/route-table.js';
import { normaliseRecipient } from '../kit/phone-number.js';
import { searchMessages } from '../ledger/message-search.js';
import { findMessageBySmsId } from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import type { Wake } from '../outbox/wake.js';
import type { MemberHealthView } from '../provider-wrappers/breakers.js';
import type { DeadListSpec } from '../outbox/dead-list.js';
import type { OutboxPanel } from '../outbox/panel.js';
import { deadListRoutes, replayedCount } from './dead-list-routes.js';
import { createConsoleDoor, TITLE } from './door.js';
import { costConsoleRoutes } from './costs-page.js';
import type { PreviewDeps } from '../sms/preview.js';
import { renderDashboard } from './pages.js';
import { backToConsole, disabled, field, formContentType, page, searchField } from '../outbox/page-docs.js';
import type { Session } from './session.js';
import type { SearchView } from './search-page.js';
import { renderStory } from './story-page.js';
import { loadConsoleSummary } from './summary.js';
import type { Routing } from '../provider-wrappers/routing.js';
import { consoleActor, controlBodyOfForm, renderRoutingPage } from './routing-page.js';

export interface ConsoleRouteDeps {
  db: Kysely<Database>;
  /** Where the read-only views read (the ledger's read connection, src/ledger/engine/db.ts); `db` when absent. */
  readDb?: Kysely<Database>;
  adminKey: string | undefined;
  /** Production: the session cookie is always `Secure` (sent over HTTPS only). */
  secureCookie: boolean;
  providers: readonly string[];
  now: () => number;
  /** Wakes a kind's outbox after its dead rows were replayed. */
  wake?: Wake;
  /**
   * Each outbox kind's dead list and, when shown with this configuration, its dashboard panel, in the registry's
   * order (src/outboxes.ts).
   */
  outboxes: ReadonlyArray<{ deadList: DeadListSpec<any, any>; panel?: OutboxPanel | undefined }>;
  /** Route members' circuit breakers, shown as a small table. */
  circuits?: () => MemberHealthView[];
  /** sms.default_region: how a national number typed into the search is read. */
  defaultRegion: string | undefined;
  receiptCheck: (provider: string) => string;
  /** The preview page's rate tables and sms settings (src/sms/preview.ts). */
  preview: PreviewDeps;
  /** The routing page (/console/routing); absent, no such page. */
  routing?: Routing | undefined;
}

/** The search the dashboard shows: none without parameters, an error naming a bad one, else a page of results. */
async function runSearch(db: Kysely<Database>, params: URLSearchParams, deps: ConsoleRouteDeps): Promise<SearchView> {
  const view: SearchView = { params, providers: deps.providers };
  if (![...params.keys()].some((k) => k !== 'replayed')) return view;
  const query = parseMessageQuery(params, deps.defaultRegion, { form: true, ignore: ['replayed'] });
  if (!query.ok) return { ...view, error: query.error };
  const { rows, more } = await searchMessages(db, query.filter);
  return { ...view, filter: query.filter, results: { rows, nextCursor: more ? encodeCursor(rows[rows.length - 1]!) : null } };
}

export function consoleRoutes(deps: ConsoleRouteDeps) {
  const app = new Hono();
  const { adminKey } = deps;
  const readDb = deps.readDb ?? deps.db;
  if (!adminKey) {
    app.all('*', (c) =>
      htmlPage(c, { title: TITLE, status: 403, body: html`<p class="notice error">The console is disabled: set <code>admin.api_key</code>.</p>` }),
    );
    return app;
  }
  const door = createConsoleDoor({ db: deps.db, readDb, adminKey, secureCookie: deps.secureCookie, now: deps.now });
  const deadLists = deps.outboxes.map((outbox) => deadListRoutes(outbox.deadList, door, deps.now, deps.wake));
  const panels = deps.outboxes.flatMap((outbox) => (outbox.panel ? [outbox.panel] : []));

  mountRoutes(app, [
    route({
      method: 'get',
      path: '/',
      doc: {
        tag: 'console',
        summary: 'The console: the sign-in form without a session; with one, message search, totals, charts and the outbox',
        description: 'The search takes the parameters of GET /admin/messages; empty ones are ignored (the form sends every field).',
        parameters: [
          searchField('recipient', 'Phone number, E.164 or national'),
          searchField('user_id', 'activity.user_id'),
          searchField('activity_id', 'activity.id'),
          searchField('sms_id', 'sms_id'),
          searchField('provider', 'Provider name'),
          searchField('status', 'A status word of GET /admin/messages'),
          searchField('from', 'Created at or after (UTC)'),
          searchField('to', 'Created before (UTC)'),
          searchField('cursor', 'The next page'),
        ],
        responses: {
          200: page('The console page, or the sign-in form'),
          400: page('The console page with the search parameter named that is not valid'),
          403: disabled,
        },
      },
      handlers: [
        async (c) => {
          const session = await door.sessionOf(c);
          if (!session) return door.loginPage(c, 200);
          const params = new URL(c.req.url).searchParams;
          const search = await runSearch(readDb, params, deps);
          const summary = await loadConsoleSummary(readDb, deps.providers, deps.now());
          const outboxes = [];
          for (const panel of panels) outboxes.push({ panel, data: await panel.load(readDb) });
          const body = renderDashboard({
            summary,
            outboxes,
            search,
            replayed: replayedCount(params),
            circuits: deps.circuits?.(),
          });
          return htmlPage(c, { title: TITLE, nav: door.nav(session), body, status: search.error ? 400 : 200 });
        },
      ],
    }),
    route({
      method: 'get',
      path: '/messages/:smsId',
      doc: {
        tag: 'console',
        summary: 'One message: its fields and a timeline of its send, receipts and conversions',
        security: ['consoleSession'],
        parameters: [
          { name: 'smsId', in: 'path', schema: z.string() },
          { name: 'recipient', in: 'query', description: 'The number searched for: shown unmasked when it is this message’s', schema: field('phone number') },
        ],
        responses: { 200: page('The message page'), 401: page('No valid session: the sign-in form'), 403: disabled, 404: page('No message with this sms_id') },
      },
      handlers: [
        async (c) => {
          const session = await door.sessionOf(c);
          if (!session) return door.loginPage(c, 401, 'Sign in to see this message.');
          const nav = door.nav(session);
          const message = await findMessageBySmsId(readDb, c.req.param('smsId'));
          if (!message)
            return htmlPage(c, {
              title: TITLE,
              nav,
              status: 404,
              body: html`<p class="notice error" role="alert">No message with sms_id ${c.req.param('smsId')}.</p>`,
            });
          // The number is shown in full only to someone who searched for it (the link from the results carries it).
          const searched = normaliseRecipient(c.req.query('recipient')?.slice(0, 256) ?? '', deps.defaultRegion);
          // Provider error texts may quote the number: masked on the page like every other number.
          const story = await messageStory(readDb, message, deps.receiptCheck, maskPhoneNumbersIn);
          return htmlPage(c, { title: TITLE, nav, body: renderStory(story, searched.ok ? searched.e164 : undefined) });
        },
      ],
    }),
    ...deadLists.map((list) => list.page),
    ...costConsoleRoutes({ door, readDb, now: deps.now, preview: deps.preview }),
    ...(deps.routing ? routingPages(deps.routing, door) : []),
    door.login,
    ...deadLists.map((list) => list.replay),
    door.logout,
  ]);
  return app;
}

/** GET and POST /console/routing: the page, and a change made from its forms (then back to the page with what it did). */
function routingPages(routing: Routing, door: ReturnType<typeof createConsoleDoor>) {
  const show = async (c: Context, session: Session, notice?: { error: boolean; text: string }, status: 200 | 400 = 200) => {
    const [stored, audit, refusals] = await Promise.all([routing.storedControls(), routing.audit(50), routing.refusalCounts()]);
    const body = renderRoutingPage({
      delivery: routing.delivery.view(routing.snapshot().routes),
      snapshot: routing.snapshot(),
      controls: routing.controls(),
      stored,
      audit,
      refusals,
      csrf: door.csrfToken(session),
      notice,
    });
    return htmlPage(c, { title: TITLE, nav: door.nav(session), body, status });
  };
  return [
    route({
      method: 'get',
      path: '/routing',
      doc: {
        tag: 'console',
        summary: 'Routing: the routes and rules in force, suspensions, weights and members, their audit, refusals by country',
        security: ['consoleSession'],
        parameters: [{ name: 'done', in: 'query', description: 'What the last change did', schema: field('text') }],
        responses: { 200: page('The routing page'), 401: page('No valid session: the sign-in form'), 403: disabled },
      },
      handlers: [
        async (c) => {
          const session = await door.sessionOf(c);
          if (!session) return door.loginPage(c, 401, 'Sign in to see routing.');
          const done = c.req.query('done')?.slice(0, 200);
          return show(c, session, done ? { error: false, text: done } : undefined);
        },
      ],
    }),
    route({
      method: 'post',
      path: '/routing',
      doc: {
        tag: 'console',
        summary: 'Change routing from the page: the fields of POST /admin/routing/controls (weights as `a=3, b=1`, members as `a, b`)',
        security: ['consoleSession'],
        request: { schema: z.object({ csrf: z.string(), action: z.string() }), contentTypes: [formContentType] },
        responses: {
          303: backToConsole,
          400: page('The change is not valid (named on the page)'),
          401: page('No valid session: the sign-in form'),
          403: disabled,
        },
      },
      handlers: [
        door.guarded(async (c, session) => {
          const result = await routing.change(controlBodyOfForm(await c.req.formData()), consoleActor(session.nonce));
          if (!result.ok) return show(c, session, { error: true, text: result.error }, 400);
          const text = `${result.target}: ${result.unchanged ? 'unchanged' : `${JSON.stringify(result.before)} → ${JSON.stringify(result.after)}`}`;
          return c.redirect(`/console/routing?done=${encodeURIComponent(text)}`, 303);
        }),
      ],
    }),
  ];
}
