/**
 * The console's dead lists, one descriptor per outbox kind (src/outbox/dead-list.ts, each written in its kind's area),
 * each mounted here as two routes: its page (sign-in, the CSRF token of its replay form, its
 * filter read from the query, one page of rows) and its replay post (the form read, the rows replayed, the kind's
 * outbox woken, back to the list with the count).
 */
import type { Context } from 'hono';
import { html } from 'hono/html';
import { htmlPage } from '../http/html-page.js';
import { route, type MountableRoute } from '../http/route-table.js';
import type { DeadListSpec } from '../outbox/dead-list.js';
import type { Wake } from '../outbox/wake.js';
import type { ConsoleDoor } from './door.js';
import { TITLE } from './door.js';

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
