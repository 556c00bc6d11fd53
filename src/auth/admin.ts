/**
 * `/admin/*` authentication: `Authorization: Bearer <admin.api_key>`, compared in constant time (docs/design.md §3).
 * Without admin.api_key the admin API is off rather than open.
 */
import type { MiddlewareHandler } from 'hono';
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
