/** X-Api-Key authentication: several keys may be valid at once (rotation); compared in constant time. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Hashing first gives equal-length buffers, so the comparison time says nothing about the key's length. */
export function createKeyMatcher(keys: readonly string[]): (candidate: string | undefined) => boolean {
  const expected = keys.map(digest);
  return (candidate) => {
    if (!candidate) return false;
    const given = digest(candidate);
    let match = false;
    for (const key of expected) match = timingSafeEqual(given, key) || match;
    return match;
  };
}

export function requireApiKey(keys: readonly string[], header = 'x-api-key'): MiddlewareHandler {
  const matches = createKeyMatcher(keys);
  return async (c, next) => {
    const given = c.req.header(header);
    if (!matches(given)) {
      return c.json({ error: given ? `${header}: the key is not valid` : `${header}: header is missing` }, 401);
    }
    await next();
  };
}
