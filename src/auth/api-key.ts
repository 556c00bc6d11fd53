/** X-Api-Key authentication: several keys may be valid at once (rotation); compared in constant time. */
import { timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';

/**
 * Every key is compared, each as a buffer padded to the longest key's length, so the time taken says nothing
 * about which key matched or how much of one did. (Hashing to equal lengths does the same at ~10 µs per request,
 * a few percent of a whole send.) A candidate longer than every key fails at once: that says only that it is long.
 */
export function createKeyMatcher(keys: readonly string[]): (candidate: string | undefined) => boolean {
  const encoded = keys.map((key) => Buffer.from(key, 'utf8'));
  const width = Math.max(0, ...encoded.map((k) => k.length));
  const padded = encoded.map((key) => Buffer.concat([key, Buffer.alloc(width - key.length)]));
  const given = Buffer.alloc(width);
  return (candidate) => {
    if (!candidate || Buffer.byteLength(candidate, 'utf8') > width) return false;
    given.fill(0);
    const length = given.write(candidate, 'utf8');
    let match = false;
    for (let i = 0; i < padded.length; i++) match = (timingSafeEqual(given, padded[i]!) && length === encoded[i]!.length) || match;
    return match;
  };
}

export interface ApiKeyOptions {
  /** The header that carries the key: X-Api-Key unless said. */
  header?: string;
  /** With no key configured the door is off: every call is answered 403 with this sentence (without it, 401). */
  offWithoutKeys?: string;
  /** The answer's body carries its status as `code`, as the relay answers every refusal (src/events/routes.ts). */
  codeInBody?: boolean;
}

export function requireApiKey(keys: readonly string[], options: ApiKeyOptions = {}): MiddlewareHandler {
  const { header = 'x-api-key', offWithoutKeys, codeInBody = false } = options;
  const matches = createKeyMatcher(keys);
  const refuse = (c: Context, status: 401 | 403, error: string) => c.json(codeInBody ? { error, code: status } : { error }, status);
  return async (c, next) => {
    if (offWithoutKeys !== undefined && keys.length === 0) return refuse(c, 403, offWithoutKeys);
    const given = c.req.header(header);
    if (!matches(given)) return refuse(c, 401, given ? `${header}: the key is not valid` : `${header}: header is missing`);
    await next();
  };
}
