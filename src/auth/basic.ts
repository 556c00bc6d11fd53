/** HTTP Basic authentication for the operator API (docs/crm-interface.md, Authentication), compared in constant time. */
import type { MiddlewareHandler } from 'hono';
import { createKeyMatcher } from './api-key.js';

export function requireBasic(username: string, password: string): MiddlewareHandler {
  // Username and password are checked as one string, so neither part's correctness shows in the timing.
  const matches = createKeyMatcher([`${username}:${password}`]);
  return async (c, next) => {
    const header = c.req.header('authorization');
    const encoded = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '')?.[1];
    if (!encoded || !matches(Buffer.from(encoded, 'base64').toString('utf8'))) {
      c.header('WWW-Authenticate', 'Basic realm="operator API", charset="UTF-8"');
      return c.json({ error: header ? 'Authorization: the Basic credentials are not valid' : 'Authorization: header is missing (Basic credentials)' }, 401);
    }
    await next();
  };
}
