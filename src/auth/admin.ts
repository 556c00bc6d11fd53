/**
 * `/admin/*` authentication: `Authorization: Bearer <admin.api_key>`, compared in constant time (docs/design.md §3).
 * Without admin.api_key the admin API is off rather than open.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { mountRoutes, type MountableRoute } from '../http/route-table.js';
import { createKeyMatcher } from './api-key.js';

export function requireAdmin(key: string | undefined): MiddlewareHandler {
  const matches = key ? createKeyMatcher([key]) : null;
  return async (c, next) => {
    if (!matches) return c.json({ error: 'the admin API is off: set admin.api_key to use it' }, 403);
    const header = c.req.header('authorization');
    const token = /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1]?.trim();
    if (!matches(token)) {
      c.header('WWW-Authenticate', 'Bearer realm="admin"');
      return c.json({ error: header ? 'Authorization: the admin key is not valid' : 'Authorization: header is missing (Bearer <admin.api_key>)' }, 401);
    }
    await next();
  };
}

/**
 * The one `/admin` sub-app: each area hands in its route table (delivery, consents, operator, events) and one guard
 * stands before all of them, so no area's routes depend on another's middleware or on the order of mounting.
 */
export function adminRoutes(key: string | undefined, tables: ReadonlyArray<readonly MountableRoute[]>): Hono {
  const app = new Hono();
  app.use('*', requireAdmin(key));
  mountRoutes(app, tables.flat());
  return app;
}
