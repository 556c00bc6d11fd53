/**
 * /console: the operators' page, served by the gateway itself. The admin key is posted once to /console/login and
 * exchanged for a signed, HttpOnly, SameSite=Strict session cookie (never a URL); state-changing posts also carry
 * the session's CSRF token in the form.
 */
import { Hono, type Context } from 'hono';
import { mountRoutes, route, type ResponseDoc } from '../http/route-table.js';
import { html } from 'hono/html';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { createKeyMatcher } from '../auth/api-key.js';
import { messageStory } from '../delivery/admin-routes.js';
import { parseDeadLetterQuery } from '../delivery/dead-letter-query.js';
import { encodeCursor, parseMessageQuery } from '../delivery/message-query.js';
import { htmlPage } from '../http/html-page.js';
import { isConsoleSessionRevoked, revokeConsoleSession } from '../ledger/console-sessions.js';
import { listDeadConversions, replayDeadConversions } from '../ledger/conversions.js';
import { listEvents, replayDeadEvents } from '../ledger/events.js';
import { listDeadCredits, replayDeadCredits } from '../ledger/credit-delivery.js';
import { EVENT_TYPES, parseEventQuery } from '../events/event-query.js';
import { searchMessages } from '../ledger/message-search.js';
import { findMessageBySmsId } from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import { normaliseRecipient } from '../kit/phone-number.js';
import type { MemberHealthView } from '../provider-wrappers/breakers.js';
import { keysetPage, type DeadListView } from '../outbox/dead-list.js';
import { creditReplayFormMatch, parseDeadCreditQuery, renderDeadCredits } from './dead-credits-page.js';
import { eventReplayFormMatch, renderDeadEvents } from './dead-events-page.js';
import { renderDeadLetters, replayFormMatch } from './dead-letters-page.js';
import { renderDashboard, renderLoginForm, renderNav } from './pages.js';
import type { SearchView } from './search-page.js';
import { createSessionCodec, type Session } from './session.js';
import { renderStory } from './story-page.js';
import { loadConsoleSummary } from './summary.js';

export const SESSION_COOKIE = 'console_session';
const SESSION_TTL_MS = 8 * 3_600_000;
const TITLE = 'crm-sms-gateway console';
const DEAD_LIST_PAGE = 100;

const loginFormSchema = z.object({ key: z.string().describe('admin.api_key') });
const csrfFormSchema = z.object({ csrf: z.string().describe('The token in the console’s forms') });

export interface ConsoleRouteDeps {
  db: Kysely<Database>;
  /** Where the read-only views read (the ledger's read connection, src/ledger/db.ts); `db` when absent. */
  readDb?: Kysely<Database>;
  adminKey: string | undefined;
  /** Production: the session cookie is always `Secure` (sent over HTTPS only). */
  secureCookie: boolean;
  providers: readonly string[];
  now: () => number;
  onReplay: () => void;
  /** Wakes the event relay after dead CRM events were replayed. */
  onEventsReplay?: () => void;
  /** Wakes the credit outbox after dead credits were replayed. */
  onCreditsReplay?: () => void;
  /** operator.credits.url is set: the summary shows the credits outbox. */
  creditsOutbox?: boolean;
  /** Route members' circuit breakers, shown as a small table. */
  circuits?: () => MemberHealthView[];
  /** sms.default_region: how a national number typed into the search is read. */
  defaultRegion: string | undefined;
  receiptCheck: (provider: string) => string;
}

/** `?replayed=N` after a replay's redirect. */
function replayedCount(params: URLSearchParams): number | undefined {
  const value = params.get('replayed');
  return value !== null && /^\d{1,15}$/.test(value) ? Number(value) : undefined;
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

const field = (description: string) => z.string().max(256).describe(description);
/** What the replay form posts: the CSRF token and which dead letters (console/dead-letters-page.ts). */
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
/** What the dead-event replay form posts (console/dead-events-page.ts). */
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
/** What the dead-credit replay form posts (console/dead-credits-page.ts). */
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
const searchField = (name: string, description: string) => ({ name, in: 'query' as const, description, schema: field(description) });

const page = (description: string): ResponseDoc => ({ description, contentType: 'text/html; charset=UTF-8', schema: z.string() });
const backToConsole: ResponseDoc = { description: 'Done; back to the console', headers: { Location: { description: '/console…', schema: z.string() } } };
const form = 'application/x-www-form-urlencoded';
const disabled = page('The console is disabled (admin.api_key is not set)');

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
  const sessions = createSessionCodec(adminKey, SESSION_TTL_MS, deps.now);
  const isAdminKey = createKeyMatcher([adminKey]);
  // A signed cookie is not enough: a session signed out before it expires is refused too (docs/security.md).
  const sessionOf = async (c: Context): Promise<Session | null> => {
    const session = sessions.verify(getCookie(c, SESSION_COOKIE));
    return session && !(await isConsoleSessionRevoked(readDb, session.nonce)) ? session : null;
  };

  /** A dead list's page: sign-in, the CSRF token for its replay form, its filter read from the query, one page of rows. */
  const deadListPage =
    <R>(
      signIn: string,
      load: (params: URLSearchParams) => Promise<{ ok: true; rows: R[]; nextCursor: string | null } | { ok: false; error: string }>,
      render: (view: DeadListView & { rows: R[]; now: number }) => ReturnType<typeof html>,
    ) =>
    async (c: Context) => {
      const session = await sessionOf(c);
      if (!session) return loginPage(c, 401, signIn);
      const csrf = sessions.csrfToken(session);
      const params = new URL(c.req.url).searchParams;
      const view = { params, csrf, now: deps.now(), replayed: replayedCount(params) };
      const page = await load(params);
      if (!page.ok)
        return htmlPage(c, { title: TITLE, nav: renderNav(csrf), status: 400, body: render({ ...view, rows: [], nextCursor: null, error: page.error }) });
      return htmlPage(c, { title: TITLE, nav: renderNav(csrf), body: render({ ...view, rows: page.rows, nextCursor: page.nextCursor }) });
    };
  const loginPage = (c: Context, status: 200 | 401, error?: string) => htmlPage(c, { title: TITLE, status, body: renderLoginForm(error) });
  const back = (c: Context, query = '') => c.redirect(`/console${query}`, 303);

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
          const session = await sessionOf(c);
          if (!session) return loginPage(c, 200);
          const params = new URL(c.req.url).searchParams;
          const csrf = sessions.csrfToken(session);
          const search = await runSearch(readDb, params, deps);
          const body = renderDashboard({
            summary: await loadConsoleSummary(readDb, deps.providers, deps.now(), { credits: deps.creditsOutbox === true }),
            search,
            replayed: replayedCount(params),
            circuits: deps.circuits?.(),
          });
          return htmlPage(c, { title: TITLE, nav: renderNav(csrf), body, status: search.error ? 400 : 200 });
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
          const session = await sessionOf(c);
          if (!session) return loginPage(c, 401, 'Sign in to see this message.');
          const nav = renderNav(sessions.csrfToken(session));
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
    route({
      method: 'get',
      path: '/dead-letters',
      doc: {
        tag: 'console',
        summary: 'Dead-lettered conversions with reasons, attempts, last answers and ages, and replay buttons',
        security: ['consoleSession'],
        parameters: [searchField('provider', 'Provider name'), searchField('status', 'Delivery status reported'), searchField('cursor', 'The next page')],
        responses: { 200: page('The dead-letter list'), 400: page('A filter is not valid'), 401: page('No valid session: the sign-in form'), 403: disabled },
      },
      handlers: [
        deadListPage(
          'Sign in to see the dead letters.',
          async (params) => {
            const query = parseDeadLetterQuery(params, { form: true, ignore: ['replayed'] });
            if (!query.ok) return query;
            return { ok: true, ...keysetPage(await listDeadConversions(readDb, { ...query.match, limit: query.limit + 1 }), query.limit) };
          },
          (view) => renderDeadLetters({ ...view, providers: deps.providers }),
        ),
      ],
    }),
    route({
      method: 'get',
      path: '/dead-events',
      doc: {
        tag: 'console',
        summary: 'Dead-lettered CRM events with type, user, attempts, the CRM’s last answer and age, and replay buttons',
        security: ['consoleSession'],
        parameters: [
          { name: 'type', in: 'query', description: 'CRM queue type', schema: z.enum(['', ...EVENT_TYPES] as [string, ...string[]]) },
          searchField('user_id', 'The player'),
          { name: 'cursor', in: 'query', description: 'The next page', schema: z.string().regex(/^[0-9]{0,15}$/) },
        ],
        responses: {
          200: page('The dead-event list'),
          400: page('A filter is not valid (named on the page)'),
          401: page('No valid session: the sign-in form'),
          403: disabled,
        },
      },
      handlers: [
        deadListPage(
          'Sign in to see the dead CRM events.',
          async (params) => {
            const query = parseEventQuery(params, { form: true, ignore: ['replayed'] });
            if (!query.ok) return query;
            // The list is of dead events only: status is not a parameter here.
            if (query.filter.status !== undefined) return { ok: false, error: 'status: this list shows dead events only' };
            return { ok: true, ...keysetPage(await listEvents(readDb, { ...query.filter, status: 'dead', limit: DEAD_LIST_PAGE + 1 }), DEAD_LIST_PAGE) };
          },
          renderDeadEvents,
        ),
      ],
    }),
    route({
      method: 'get',
      path: '/dead-credits',
      doc: {
        tag: 'console',
        summary:
          'Dead-lettered credits (sql backend, operator.credits.url) with user, bonus code, amount, attempts, the operator’s last answer and age, and replay buttons',
        security: ['consoleSession'],
        parameters: [
          searchField('user_id', 'The player'),
          { name: 'cursor', in: 'query', description: 'The next page', schema: z.string().regex(/^[0-9]{0,15}$/) },
        ],
        responses: {
          200: page('The dead-credit list'),
          400: page('A filter is not valid (named on the page)'),
          401: page('No valid session: the sign-in form'),
          403: disabled,
        },
      },
      handlers: [
        deadListPage(
          'Sign in to see the dead credits.',
          async (params) => {
            const query = parseDeadCreditQuery(params);
            if (!query.ok) return query;
            return { ok: true, ...keysetPage(await listDeadCredits(readDb, { ...query.filter, limit: DEAD_LIST_PAGE + 1 }), DEAD_LIST_PAGE) };
          },
          renderDeadCredits,
        ),
      ],
    }),
    route({
      method: 'post',
      path: '/login',
      doc: {
        tag: 'console',
        summary: 'Exchange the admin key for a session cookie (HttpOnly, SameSite=Strict)',
        request: { schema: loginFormSchema, contentTypes: [form] },
        responses: { 303: backToConsole, 401: page('Not the admin key'), 403: disabled },
      },
      handlers: [
        async (c) => {
          const form = loginFormSchema.safeParse(await c.req.parseBody());
          if (!form.success || !isAdminKey(form.data.key)) return loginPage(c, 401, 'That is not the admin key.');
          const { token } = sessions.issue();
          setCookie(c, SESSION_COOKIE, token, {
            path: '/console',
            httpOnly: true,
            sameSite: 'Strict',
            // Behind a TLS-terminating proxy the request itself is plain HTTP; the proxy says what the browser used.
            secure: deps.secureCookie || new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https',
            maxAge: Math.floor(SESSION_TTL_MS / 1000),
          });
          return back(c);
        },
      ],
    }),
  ]);

  /** Posts that change something need the session and its CSRF token (SameSite=Strict already keeps other sites' forms out). */
  const guarded = (handler: (c: Context, session: Session) => Promise<Response>) => async (c: Context) => {
    const session = await sessionOf(c);
    if (!session) return loginPage(c, 401, 'Your session has ended; sign in again.');
    const form = csrfFormSchema.safeParse(await c.req.parseBody());
    if (!form.success || !sessions.checkCsrf(session, form.data.csrf)) {
      return htmlPage(c, {
        title: TITLE,
        status: 403,
        body: html`<p class="notice error">The form's security token does not match this session. <a href="/console">Reload the console</a> and try again.</p>`,
      });
    }
    return handler(c, session);
  };

  /** A dead list's replay post: read the form, replay, wake the kind's outbox, and back to the list with the count. */
  const replayRoute = <M>(
    list: { path: string; name: string },
    read: (form: FormData) => { ok: true; match: M } | { ok: false; error: string },
    replay: (match: M) => Promise<number>,
    wake?: () => void,
  ) =>
    guarded(async (c) => {
      const form = read(await c.req.formData());
      if (!form.ok)
        return htmlPage(c, {
          title: TITLE,
          status: 400,
          body: html`<p class="notice error" role="alert">${form.error}. <a href="${list.path}">Back to the ${list.name}</a></p>`,
        });
      const replayed = await replay(form.match);
      if (replayed > 0) wake?.();
      return c.redirect(`${list.path}?replayed=${replayed}`, 303);
    });

  mountRoutes(app, [
    route({
      method: 'post',
      path: '/replay',
      doc: {
        tag: 'console',
        summary: 'Make dead-lettered conversions due again: one, the ticked ones, or all matching the filter',
        security: ['consoleSession'],
        request: { schema: replayFormSchema, contentTypes: [form] },
        responses: {
          303: backToConsole,
          400: page('The form names no valid dead letters'),
          401: page('No valid session'),
          403: page('CSRF token missing or wrong, or the console is disabled'),
        },
      },
      handlers: [
        replayRoute(
          { path: '/console/dead-letters', name: 'dead letters' },
          replayFormMatch,
          (match) => replayDeadConversions(deps.db, deps.now(), match),
          deps.onReplay,
        ),
      ],
    }),
    route({
      method: 'post',
      path: '/events/replay',
      doc: {
        tag: 'console',
        summary: 'Make dead CRM events due again: one, the ticked ones, or all matching the filter',
        security: ['consoleSession'],
        request: { schema: eventReplayFormSchema, contentTypes: [form] },
        responses: {
          303: { description: 'Done; back to the dead events', headers: { Location: { description: '/console/dead-events?replayed=N', schema: z.string() } } },
          400: page('The form names no valid dead events'),
          401: page('No valid session'),
          403: page('CSRF token missing or wrong, or the console is disabled'),
        },
      },
      handlers: [
        replayRoute(
          { path: '/console/dead-events', name: 'dead CRM events' },
          eventReplayFormMatch,
          (match) => replayDeadEvents(deps.db, deps.now(), match),
          deps.onEventsReplay,
        ),
      ],
    }),
    route({
      method: 'post',
      path: '/credits/replay',
      doc: {
        tag: 'console',
        summary: 'Make dead credits due again for operator.credits.url: one, the ticked ones, or all of the filter',
        security: ['consoleSession'],
        request: { schema: creditReplayFormSchema, contentTypes: [form] },
        responses: {
          303: {
            description: 'Done; back to the dead credits',
            headers: { Location: { description: '/console/dead-credits?replayed=N', schema: z.string() } },
          },
          400: page('The form names no valid dead credits'),
          401: page('No valid session'),
          403: page('CSRF token missing or wrong, or the console is disabled'),
        },
      },
      handlers: [
        replayRoute(
          { path: '/console/dead-credits', name: 'dead credits' },
          creditReplayFormMatch,
          (match) => replayDeadCredits(deps.db, match, deps.now()),
          deps.onCreditsReplay,
        ),
      ],
    }),
    route({
      method: 'post',
      path: '/logout',
      doc: {
        tag: 'console',
        summary: 'End the session',
        security: ['consoleSession'],
        request: { schema: csrfFormSchema, contentTypes: [form] },
        responses: { 303: backToConsole, 401: page('No valid session'), 403: page('CSRF token missing or wrong, or the console is disabled') },
      },
      handlers: [
        guarded(async (c, session) => {
          // Ended on the server too: a copy of the cookie taken before sign-out no longer opens the console.
          await revokeConsoleSession(deps.db, session.nonce, session.expiresAt, deps.now());
          deleteCookie(c, SESSION_COOKIE, { path: '/console' });
          return back(c);
        }),
      ],
    }),
  ]);

  return app;
}
