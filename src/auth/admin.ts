/** `Authorization: Bearer <admin.api_key>` for /admin/*; without a configured key the admin API is closed. */
import type { MiddlewareHandler } from 'hono';
import { createKeyMatcher } from './api-key.js';

export function requireAdmin(adminKey: string | undefined): MiddlewareHandler {
  const matches = createKeyMatcher(adminKey ? [adminKey] : []);
  return async (c, next) => {
    if (!adminKey) return c.json({ error: 'the admin API is disabled: set admin.api_key' }, 403);
    const header = c.req.header('authorization') ?? '';
    const token = /^Bearer\s+(.+)$/i.exec(header)?.[1];
    if (!matches(token)) {
      return c.json({ error: header ? 'authorization: the admin key is not valid' : 'authorization: Bearer token is missing' }, 401);
    }
    await next();
  };
}
