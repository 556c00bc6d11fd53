/**
 * An outbox kind's dead list in the console, as a descriptor its area writes (src/delivery/dead-letters-page.ts,
 * src/events/dead-events-page.ts, src/operator/credits/dead-credits-page.ts) on the frame of dead-list-frame.ts, and
 * src/console/dead-list-routes.ts mounts as two routes: its page and its replay post.
 */
import type { html } from 'hono/html';
import type { Kysely } from 'kysely';
import type { RouteDoc } from '../http/route-table.js';
import type { Database } from '../ledger/schema.js';
import type { DeadListView } from './dead-list-frame.js';
import type { OutboxKindName } from './wake.js';

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
