/**
 * The one door of provider callbacks (`/dlr/{provider}` for receipts, `/mo/{provider}` for players' messages): the
 * provider found by the name in the path, the caller's address refused while it has failed too many signatures, the
 * body bounded by what that provider really sends (SmsProvider.callbackBodyLimit) and by callback-body.ts before its
 * plugin sees a byte, and the request as the plugin verifies it, with the public URL the provider called rebuilt from
 * server.public_url (providers/kit/callback-url.ts), never from the Host header. The routes (src/delivery/routes.ts,
 * src/consents/routes.ts) then hand it to the plugin's parser, and answer every refusal through refuseCallback, so
 * each one is counted by the guard (src/auth/callback-guard.ts) instead of written as a line of its own.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'hono';
import { callbackPath, inboundPath, receivedCallbackUrl } from '../../providers/kit/callback-url.js';
import type { IncomingReceipt, SmsProvider } from '../../providers/types.js';
import { checkCallbackBody } from './callback-body.js';
import { DEFAULT_MAX_JSON_DEPTH } from './json-body.js';

export interface CallbackRefusal {
  door: 'dlr' | 'mo';
  /** A configured provider's name (never a name from the path that is not configured). */
  provider: string;
  status: 400 | 403 | 413 | 429;
  reason: string;
}

/** Failed signatures per client address, and the refusals' log (src/auth/callback-guard.ts). */
export interface CallbackGuard {
  /** Milliseconds until this request's address may call again, or 0 when it may now. */
  blockedFor(c: Context): number;
  /** How long to hold the 429 of an address blocked for `waitMs` before answering it (CALLBACK_REFUSAL_PAUSE_MS). */
  pauseFor(waitMs: number): number;
  /** Counts a refusal in the log; a failed verification (403) also against the caller's address. */
  refused(c: Context, refusal: CallbackRefusal): void;
}

export interface CallbackDoor<P> {
  /** `dlr` (receipts) or `mo` (players' messages): where the provider calls. */
  door: 'dlr' | 'mo';
  /** The configured provider of that name. */
  find(name: string): P | undefined;
  /** Base of the URLs handed to providers (server.public_url, or the listener's address). */
  publicUrl: string;
  /** How a refusal begins: "receipt refused", "inbound message refused". */
  refused: string;
  /** Why a configured provider cannot take this callback at all (404), before its body is read. */
  unable?: (name: string, provider: P) => string | undefined;
  guard: CallbackGuard;
}

export type CallbackOpened<P> = { ok: true; name: string; provider: P; request: IncomingReceipt } | { ok: false; answer: Response };

/** Counts the refusal (src/auth/callback-guard.ts) and answers it `{error, code}`. */
export function refuseCallback<P>(c: Context, door: CallbackDoor<P>, provider: string, status: CallbackRefusal['status'], reason: string): Response {
  door.guard.refused(c, { door: door.door, provider, status, reason });
  return c.json({ error: `${door.refused}: ${reason}`, code: status }, status);
}

export async function openCallback<P extends Pick<SmsProvider, 'callbackBodyLimit'>>(c: Context, door: CallbackDoor<P>): Promise<CallbackOpened<P>> {
  const name = c.req.param('provider') ?? '';
  const provider = door.find(name);
  if (!provider) return { ok: false, answer: c.json({ error: `provider ${JSON.stringify(name)} is not configured`, code: 404 }, 404) };
  const unable = door.unable?.(name, provider);
  if (unable) return { ok: false, answer: c.json({ error: unable, code: 404 }, 404) };
  const waitMs = door.guard.blockedFor(c);
  if (waitMs > 0) {
    // Held before it is answered: a client that sends its next request when the last is answered (as a flood on a
    // few keep-alive connections does) then sends a few a second per connection, not thousands; a timer costs nothing.
    const pauseMs = door.guard.pauseFor(waitMs);
    if (pauseMs > 0) await sleep(pauseMs);
    const seconds = Math.ceil(waitMs / 1000);
    c.header('Retry-After', String(seconds));
    return { ok: false, answer: refuseCallback(c, door, name, 429, `too many failed signatures from this address; try again in ${seconds} s`) };
  }
  // What the provider really sends: a larger body cannot be its own, and is refused before it is read (when its
  // length is declared) or verified.
  const limit = provider.callbackBodyLimit?.[door.door];
  const tooLarge = () =>
    refuseCallback(c, door, name, 413, `body is larger than ${limit} bytes, more than provider ${JSON.stringify(name)} sends to /${door.door}`);
  if (limit !== undefined && Number(c.req.header('content-length') ?? 0) > limit) return { ok: false, answer: tooLarge() };
  const url = new URL(c.req.url);
  // Object.fromEntries makes every header an own key, whatever its name (a header may be called `__proto__`).
  const headers: Record<string, string> = Object.fromEntries(c.req.raw.headers.entries());
  const rawBody = Buffer.from(await c.req.arrayBuffer());
  if (limit !== undefined && rawBody.length > limit) return { ok: false, answer: tooLarge() };
  const contentType = headers['content-type'] ?? '';
  // Before the plugin: a form with too many fields, or JSON too deep or with a key twice, costs no more than this.
  const checked = checkCallbackBody({ contentType, search: url.search, rawBody }, c.get('maxJsonDepth') ?? DEFAULT_MAX_JSON_DEPTH);
  if (!checked.ok) return { ok: false, answer: refuseCallback(c, door, name, checked.status, checked.error) };
  const path = door.door === 'dlr' ? callbackPath(name) : inboundPath(name);
  return {
    ok: true,
    name,
    provider,
    request: {
      method: c.req.method,
      publicUrl: receivedCallbackUrl(door.publicUrl, path, url.search),
      query: Object.fromEntries(url.searchParams),
      headers,
      contentType,
      rawBody,
    },
  };
}
