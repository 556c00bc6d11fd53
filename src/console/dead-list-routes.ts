/**
 * The console's dead lists, one descriptor per outbox kind (dead-letters-page.ts, dead-events-page.ts,
 * dead-credits-page.ts), each mounted here as two routes: its page (sign-in, the CSRF token of its replay form, its
 * filter read from the query, one page of rows) and its replay post (the form read, the rows replayed, the kind's
 * outbox woken, back to the list with the count).
 */
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { Kysely } from 'kysely';
import { htmlPage } from '../http/html-page.js';
import type { Database } from '../ledger/schema.js';
import { route, type MountableRoute, type RouteDoc } from '../http/route-table.js';
import type { OutboxKindName, Wake } from '../outbox/wake.js';
import type { DeadListView } from './dead-list-frame.js';
import type { ConsoleDoor } from './door.js';
import { TITLE } from './door.js';

type Html = ReturnType<typeof html>;

/** The newest dead rows shown on one page of the events' and credits' lists. */
export const DEAD_LIST_PAGE = 100;

export interface DeadListSpec<R, M> {
  kind: OutboxKindName;
  /** The list's page under /console, its documentation and the sign-in prompt it shows without a session. */
  list: { path: string; doc: RouteDoc; signIn: string };
  /** The replay post under /console, its documentation, and the list's name in the back link of a refused post. */
  replay: { path: string; doc: RouteDoc; name: string };
  load(params: URLSearchParams): Promise<{ ok: true; rows: R[]; nextCursor: string | null } | { ok: false; error: string }>;
  render(view: DeadListView & { rows: R[]; now: number }): Html;
  readForm(form: FormData): { ok: true; match: M } | { ok: false; error: string };
  replayRows(match: M): Promise<number>;
}

/** What the descriptors read and write with. */
export interface DeadListDeps {
  db: Kysely<Database>;
  /** The ledger's read connection (src/ledger/engine/db.ts): the lists read there. */
  readDb: Kysely<Database>;
  now: () => number;
  /** The configured providers: the dead letters' filter offers them. */
  providers: readonly string[];
}

/** A kind's list with its row types closed over: what the console mounts. */
export interface DeadListRoutes {
  page: MountableRoute;
  replay: MountableRoute;
}

/** `?replayed=N` after a replay's redirect. */
export function replayedCount(params: URLSearchParams): number | undefined {
  const value = params.get('replayed');
  return value !== null && /^\d{1,15}$/.test(value) ? Number(value) : undefined;
}

export function deadListRoutes<R, M>(spec: DeadListSpec<R, M>, door: ConsoleDoor, now: () => number, wake: Wake | undefined): DeadListRoutes {
  const listUrl = `/console${spec.list.path}`;
  const showList = async (c: Context) => {
    const session = await door.sessionOf(c);
    if (!session) return door.loginPage(c, 401, spec.list.signIn);
    const csrf = door.csrfToken(session);
    const params = new URL(c.req.url).searchParams;
    const view = { params, csrf, now: now(), replayed: replayedCount(params) };
    const loaded = await spec.load(params);
    const nav = door.nav(session);
    if (!loaded.ok) return htmlPage(c, { title: TITLE, nav, status: 400, body: spec.render({ ...view, rows: [], nextCursor: null, error: loaded.error }) });
    return htmlPage(c, { title: TITLE, nav, body: spec.render({ ...view, rows: loaded.rows, nextCursor: loaded.nextCursor }) });
  };
  const replayPost = door.guarded(async (c) => {
    const form = spec.readForm(await c.req.formData());
    if (!form.ok)
      return htmlPage(c, {
        title: TITLE,
        status: 400,
        body: html`<p class="notice error" role="alert">${form.error}. <a href="${listUrl}">Back to the ${spec.replay.name}</a></p>`,
      });
    const replayed = await spec.replayRows(form.match);
    if (replayed > 0) wake?.(spec.kind);
    return c.redirect(`${listUrl}?replayed=${replayed}`, 303);
  });
  return {
    page: route({ method: 'get', path: spec.list.path, doc: spec.list.doc, handlers: [showList] }),
    replay: route({ method: 'post', path: spec.replay.path, doc: spec.replay.doc, handlers: [replayPost] }),
  };
}
