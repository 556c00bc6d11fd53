/**
 * /console: the operators' page, served by the gateway itself. The admin key is posted once to /console/login and
 * exchanged for a signed, HttpOnly, SameSite=Strict session cookie (never a URL); state-changing posts also carry
 * the session's CSRF token in the form.
 */
import { Hono, type Context } from 'hono';
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
import { parseEventQuery } from '../events/event-query.js';
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

export const loginFormSchema = z.object({ key: z.string().describe('admin.api_key') });
export const csrfFormSchema = z.object({ csrf: z.string().describe('The token in the console’s forms') });

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
    return session && !(await isConsoleSessionRevoked(deps.readDb ?? deps.db, session.nonce)) ? session : null;
  };
  const loginPage = (c: Context, status: 200 | 401, error?: string) => htmlPage(c, { title: TITLE, status, body: renderLoginForm(error) });
  const back = (c: Context, query = '') => c.redirect(`/console${query}`, 303);

  app.get('/', async (c) => {
    const session = await sessionOf(c);
    if (!session) return loginPage(c, 200);
    const params = new URL(c.req.url).searchParams;
    const csrf = sessions.csrfToken(session);
    const search = await runSearch(deps.readDb ?? deps.db, params, deps);
    const body = renderDashboard({
      summary: await loadConsoleSummary(deps.readDb ?? deps.db, deps.providers, deps.now(), { credits: deps.creditsOutbox === true }),
      search,
      replayed: replayedCount(params),
      circuits: deps.circuits?.(),
    });
    return htmlPage(c, { title: TITLE, nav: renderNav(csrf), body, status: search.error ? 400 : 200 });
  });

  app.get('/messages/:smsId', async (c) => {
    const session = await sessionOf(c);
    if (!session) return loginPage(c, 401, 'Sign in to see this message.');
    const nav = renderNav(sessions.csrfToken(session));
    const message = await findMessageBySmsId(deps.readDb ?? deps.db, c.req.param('smsId'));
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
    const story = await messageStory(deps.readDb ?? deps.db, message, deps.receiptCheck, maskPhoneNumbersIn);
    return htmlPage(c, { title: TITLE, nav, body: renderStory(story, searched.ok ? searched.e164 : undefined) });
  });

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

  app.get(
    '/dead-letters',
    deadListPage(
      'Sign in to see the dead letters.',
      async (params) => {
        const query = parseDeadLetterQuery(params, { form: true, ignore: ['replayed'] });
        if (!query.ok) return query;
        return { ok: true, ...keysetPage(await listDeadConversions(readDb, { ...query.match, limit: query.limit + 1 }), query.limit) };
      },
      (view) => renderDeadLetters({ ...view, providers: deps.providers }),
    ),
  );

  app.get(
    '/dead-events',
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
  );

  app.get(
    '/dead-credits',
    deadListPage(
      'Sign in to see the dead credits.',
      async (params) => {
        const query = parseDeadCreditQuery(params);
        if (!query.ok) return query;
        return { ok: true, ...keysetPage(await listDeadCredits(readDb, { ...query.filter, limit: DEAD_LIST_PAGE + 1 }), DEAD_LIST_PAGE) };
      },
      renderDeadCredits,
    ),
  );

  app.post('/login', async (c) => {
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
  });

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

  app.post(
    '/replay',
    replayRoute(
      { path: '/console/dead-letters', name: 'dead letters' },
      replayFormMatch,
      (match) => replayDeadConversions(deps.db, deps.now(), match),
      deps.onReplay,
    ),
  );
  app.post(
    '/events/replay',
    replayRoute(
      { path: '/console/dead-events', name: 'dead CRM events' },
      eventReplayFormMatch,
      (match) => replayDeadEvents(deps.db, deps.now(), match),
      deps.onEventsReplay,
    ),
  );
  app.post(
    '/credits/replay',
    replayRoute(
      { path: '/console/dead-credits', name: 'dead credits' },
      creditReplayFormMatch,
      (match) => replayDeadCredits(deps.db, match, deps.now()),
      deps.onCreditsReplay,
    ),
  );

  app.post(
    '/logout',
    guarded(async (c, session) => {
      // Ended on the server too: a copy of the cookie taken before sign-out no longer opens the console.
      await revokeConsoleSession(deps.db, session.nonce, session.expiresAt, deps.now());
      deleteCookie(c, SESSION_COOKIE, { path: '/console' });
      return back(c);
    }),
  );

  return app;
}
