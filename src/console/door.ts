/**
 * The console's door: the admin key posted once to /console/login is exchanged for a signed, HttpOnly,
 * SameSite=Strict session cookie (never a URL); a session signed out early is refused too; posts that change
 * something carry the session's CSRF token in the form. The pages (routes.ts, dead-list-routes.ts) ask it who is signed in.
 */
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import type { Kysely } from 'kysely';
import { createKeyMatcher } from '../auth/api-key.js';
import { htmlPage } from '../http/html-page.js';
import { route, type MountableRoute } from '../http/route-table.js';
import { isConsoleSessionRevoked, revokeConsoleSession } from '../ledger/console-sessions.js';
import type { Database } from '../ledger/schema.js';
import { renderLoginForm, renderNav } from './pages.js';
import { backToConsole, csrfFormSchema, disabled, formContentType, loginFormSchema, page } from '../outbox/page-docs.js';
import { createSessionCodec, type Session } from './session.js';

export const SESSION_COOKIE = 'console_session';
const SESSION_TTL_MS = 8 * 3_600_000;
export const TITLE = 'crm-sms-gateway console';

export interface ConsoleDoorDeps {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  adminKey: string;
  /** Production: the session cookie is always `Secure` (sent over HTTPS only). */
  secureCookie: boolean;
  now: () => number;
}

export interface ConsoleDoor {
  /** The request's session: a valid signed cookie whose session was not signed out. */
  sessionOf(c: Context): Promise<Session | null>;
  csrfToken(session: Session): string;
  /** The navigation bar of a signed-in page (its sign-out form carries the CSRF token). */
  nav(session: Session): ReturnType<typeof renderNav>;
  loginPage(c: Context, status: 200 | 401, error?: string): Response | Promise<Response>;
  /** A post that changes something: the session and its CSRF token first (SameSite=Strict already keeps other sites' forms out). */
  guarded(handler: (c: Context, session: Session) => Promise<Response>): (c: Context) => Promise<Response>;
  /** POST /login and POST /logout. */
  login: MountableRoute;
  logout: MountableRoute;
}

export function createConsoleDoor(deps: ConsoleDoorDeps): ConsoleDoor {
  const sessions = createSessionCodec(deps.adminKey, SESSION_TTL_MS, deps.now);
  const isAdminKey = createKeyMatcher([deps.adminKey]);
  // A signed cookie is not enough: a session signed out before it expires is refused too (docs/security.md).
  const sessionOf = async (c: Context): Promise<Session | null> => {
    const session = sessions.verify(getCookie(c, SESSION_COOKIE));
    return session && !(await isConsoleSessionRevoked(deps.readDb, session.nonce)) ? session : null;
  };
  const loginPage = (c: Context, status: 200 | 401, error?: string) => htmlPage(c, { title: TITLE, status, body: renderLoginForm(error) });
  const back = (c: Context) => c.redirect('/console', 303);
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

  return {
    sessionOf,
    csrfToken: (session) => sessions.csrfToken(session),
    nav: (session) => renderNav(sessions.csrfToken(session)),
    loginPage,
    guarded,
    login: route({
      method: 'post',
      path: '/login',
      doc: {
        tag: 'console',
        summary: 'Exchange the admin key for a session cookie (HttpOnly, SameSite=Strict)',
        request: { schema: loginFormSchema, contentTypes: [formContentType] },
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
    logout: route({
      method: 'post',
      path: '/logout',
      doc: {
        tag: 'console',
        summary: 'End the session',
        security: ['consoleSession'],
        request: { schema: csrfFormSchema, contentTypes: [formContentType] },
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
  };
}
