/**
 * The one door of provider callbacks (`/dlr/{provider}` for receipts, `/mo/{provider}` for players' messages): the
 * provider found by the name in the path, the body read and bounded before its plugin sees a byte
 * (callback-body.ts), and the request as the plugin verifies it, with the public URL the provider called rebuilt from
 * server.public_url (providers/kit/callback-url.ts), never from the Host header. The routes (src/delivery/routes.ts,
 * src/consents/routes.ts) then hand it to the plugin's parser.
 */
import type { Context } from 'hono';
import { callbackPath, inboundPath, receivedCallbackUrl } from '../../providers/kit/callback-url.js';
import type { IncomingReceipt } from '../../providers/types.js';
import { checkCallbackBody } from './callback-body.js';
import { DEFAULT_MAX_JSON_DEPTH } from './json-body.js';

export interface CallbackDoor<P> {
  /** `dlr` (receipts) or `mo` (players' messages): where the provider calls. */
  door: 'dlr' | 'mo';
  /** The configured provider of that name. */
  find(name: string): P | undefined;
  /** Base of the URLs handed to providers (server.public_url, or the listener's address). */
  publicUrl(): string;
  /** How a refusal begins: "receipt refused", "inbound message refused". */
  refused: string;
  /** Why a configured provider cannot take this callback at all (404), before its body is read. */
  unable?: (name: string, provider: P) => string | undefined;
}

export type CallbackOpened<P> = { ok: true; name: string; provider: P; request: IncomingReceipt } | { ok: false; answer: Response };

export async function openCallback<P>(c: Context, door: CallbackDoor<P>): Promise<CallbackOpened<P>> {
  const name = c.req.param('provider') ?? '';
  const provider = door.find(name);
  if (!provider) return { ok: false, answer: c.json({ error: `provider ${JSON.stringify(name)} is not configured`, code: 404 }, 404) };
  const unable = door.unable?.(name, provider);
  if (unable) return { ok: false, answer: c.json({ error: unable, code: 404 }, 404) };
  const url = new URL(c.req.url);
  // Object.fromEntries makes every header an own key, whatever its name (a header may be called `__proto__`).
  const headers: Record<string, string> = Object.fromEntries(c.req.raw.headers.entries());
  const rawBody = Buffer.from(await c.req.arrayBuffer());
  const contentType = headers['content-type'] ?? '';
  // Before the plugin: a form with too many fields, or JSON too deep or with a key twice, costs no more than this.
  const checked = checkCallbackBody({ contentType, search: url.search, rawBody }, c.get('maxJsonDepth') ?? DEFAULT_MAX_JSON_DEPTH);
  if (!checked.ok) return { ok: false, answer: c.json({ error: `${door.refused}: ${checked.error}`, code: checked.status }, checked.status) };
  const path = door.door === 'dlr' ? callbackPath(name) : inboundPath(name);
  return {
    ok: true,
    name,
    provider,
    request: {
      method: c.req.method,
      publicUrl: receivedCallbackUrl(door.publicUrl(), path, url.search),
      query: Object.fromEntries(url.searchParams),
      headers,
      contentType,
      rawBody,
    },
  };
}
