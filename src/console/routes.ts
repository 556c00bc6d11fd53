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
import { htmlPage } from '../http/html-page.js';
import { isConsoleSessionRevoked, revokeConsoleSession } from '../ledger/console-sessions.js';
import { replayDeadConversions } from '../ledger/conversions.js';
import { findMessageByActivityKey, findMessageBySmsId } from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import type { MemberHealthView } from '../sms/route-health.js';
import { renderDashboard, renderLoginForm, renderNav } from './pages.js';
import { createSessionCodec, type Session } from './session.js';
import { loadConsoleSummary } from './summary.js';

export const SESSION_COOKIE = 'console_session';
const SESSION_TTL_MS = 8 * 3_600_000;
const TITLE = 'crm-sms-gateway console';

export const loginFormSchema = z.object({ key: z.string().describe('admin.api_key') });
export const csrfFormSchema = z.object({ csrf: z.string().describe('The token in the console’s forms') });

export interface ConsoleRouteDeps {
  db: Kysely<Database>;
  adminKey: string | undefined;
  /** Production: the session cookie is always `Secure` (sent over HTTPS only). */
  secureCookie: boolean;
  providers: readonly string[];
  now: () => number;
  onReplay: () => void;
  /** Route members' circuit breakers, shown as a small table. */
  circuits?: () => MemberHealthView[];
}

/** By sms_id first (what the logs and the CRM's conversions carry), else by activity.id. */
async function findStory(db: Kysely<Database>, query: string) {
  const message = (await findMessageBySmsId(db, query)) ?? (await findMessageByActivityKey(db, query));
  return message ? messageStory(db, message) : null;
}

export function consoleRoutes(deps: ConsoleRouteDeps) {
  const app = new Hono();
  const { adminKey } = deps;
  if (!adminKey) {
    app.all('*', (c) => htmlPage(c, { title: TITLE, status: 403, body: html`<p class="notice error">The console is disabled: set <code>admin.api_key</code>.</p>` }));
    return app;
  }
  const sessions = createSessionCodec(adminKey, SESSION_TTL_MS, deps.now);
  const isAdminKey = createKeyMatcher([adminKey]);
  // A signed cookie is not enough: a session signed out before it expires is refused too (issue 16).
  const sessionOf = async (c: Context): Promise<Session | null> => {
    const session = sessions.verify(getCookie(c, SESSION_COOKIE));
    return session && !(await isConsoleSessionRevoked(deps.db, session.nonce)) ? session : null;
  };
  const loginPage = (c: Context, status: 200 | 401, error?: string) => htmlPage(c, { title: TITLE, status, body: renderLoginForm(error) });
  const back = (c: Context, query = '') => c.redirect(`/console${query}`, 303);

  app.get('/', async (c) => {
    const session = await sessionOf(c);
    if (!session) return loginPage(c, 200);
    const query = c.req.query('q')?.trim() || undefined;
    const replayed = c.req.query('replayed');
    const csrf = sessions.csrfToken(session);
    const body = renderDashboard({
      summary: await loadConsoleSummary(deps.db, deps.providers, deps.now()),
      csrf,
      query,
      story: query === undefined ? undefined : await findStory(deps.db, query),
      replayed: replayed !== undefined && /^\d+$/.test(replayed) ? Number(replayed) : undefined,
      circuits: deps.circuits?.(),
    });
    return htmlPage(c, { title: TITLE, nav: renderNav(csrf), body });
  });

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
      return htmlPage(c, { title: TITLE, status: 403, body: html`<p class="notice error">The form's security token does not match this session. <a href="/console">Reload the console</a> and try again.</p>` });
    }
    return handler(c, session);
  };

  app.post(
    '/replay',
    guarded(async (c) => {
      const replayed = await replayDeadConversions(deps.db, deps.now());
      if (replayed > 0) deps.onReplay();
      return back(c, `?replayed=${replayed}`);
    }),
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
