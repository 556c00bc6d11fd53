/** /dlr/{provider}: verify and parse with the provider's plugin, store, answer 2xx quickly (providers retry otherwise). */
import { Hono, type Env, type Handler } from 'hono';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { mountRoutes, route, type RouteDoc } from '../http/route-table.js';
import type { Logger } from 'pino';
import { receivedCallbackUrl } from '../../providers/kit/callback-url.js';
import { requestLogger } from '../observability/request-context.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';
import { checkCallbackBody } from '../http/callback-body.js';
import { DEFAULT_MAX_JSON_DEPTH } from '../http/json-body.js';
import type { ReceiptSummary, ReceiptInput } from './apply-receipts.js';
import { boundReceiptEvents } from './receipt-limits.js';

export interface ReceiptRouteDeps {
  router: ProviderRouter;
  /** Base of the URLs we handed to providers; signatures are checked against it, never against the Host header. */
  publicUrl: () => string;
  store: (inputs: ReceiptInput[]) => Promise<ReceiptSummary>;
  /** delivery.max_receipt_events */
  maxEvents: number;
  logger: Logger;
}

const receiptAnswerSchema = z.strictObject({ received: z.number().int().describe('Events in the request, now stored') });

/**
 * The configured provider names are not listed: /openapi.json is public, and which providers an operator uses (and
 * under which names) is nobody else's business.
 */
const receiptDoc = (method: 'get' | 'post'): RouteDoc => ({
  tag: 'receipts',
  summary: `Delivery receipt from a provider (${method.toUpperCase()})`,
  description:
    'The body and signature are the provider’s own (Twilio form posts, Vonage JSON, sandbox JSON); the provider’s plugin verifies and parses them. Answers only after the events are stored.',
  parameters: [{ name: 'provider', in: 'path', description: 'The key under `providers` in config.yaml', schema: z.string() }],
  ...(method === 'post'
    ? { request: { schema: z.unknown().describe('Provider-specific'), contentTypes: ['application/json', 'application/x-www-form-urlencoded'] } }
    : {}),
  responses: {
    200: { description: 'Stored (duplicates are acknowledged and ignored)', schema: receiptAnswerSchema },
    403: { description: 'Refused by the provider plugin (signature or format)', schema: errorAnswerSchema },
    404: { description: 'No provider of that name is configured', schema: errorAnswerSchema },
  },
});

export function receiptRoutes(deps: ReceiptRouteDeps) {
  const app = new Hono();
  const receive: Handler<Env, '/:provider'> = async (c) => {
    const name = c.req.param('provider');
    const provider = deps.router.byName(name);
    if (!provider) return c.json({ error: `provider ${JSON.stringify(name)} is not configured`, code: 404 }, 404);
    const url = new URL(c.req.url);
    // Object.fromEntries makes every header an own key, whatever its name (a header may be called `__proto__`).
    const headers: Record<string, string> = Object.fromEntries(c.req.raw.headers.entries());
    const rawBody = Buffer.from(await c.req.arrayBuffer());
    // Before the plugin: a form with too many fields, or JSON too deep or with a key twice, costs no more than this.
    const checked = checkCallbackBody(
      { contentType: headers['content-type'] ?? '', search: url.search, rawBody },
      c.get('maxJsonDepth') ?? DEFAULT_MAX_JSON_DEPTH,
    );
    if (!checked.ok) return c.json({ error: `receipt refused: ${checked.error}`, code: checked.status }, checked.status);
    const parsed = await provider.parseReceipt({
      method: c.req.method,
      publicUrl: receivedCallbackUrl(deps.publicUrl(), name, url.search),
      query: Object.fromEntries(url.searchParams),
      headers,
      contentType: headers['content-type'] ?? '',
      rawBody,
    });
    if (!parsed.ok) {
      requestLogger(c, deps.logger).warn({ provider: name, reason: parsed.reason }, 'receipt refused');
      return c.json({ error: `receipt refused: ${parsed.reason}`, code: 403 }, 403);
    }
    const bounded = boundReceiptEvents(parsed.events, deps.maxEvents);
    if (!bounded.ok) {
      requestLogger(c, deps.logger).warn({ provider: name, reason: bounded.error }, 'receipt refused');
      return c.json({ error: `receipt refused: ${bounded.error}`, code: bounded.status }, bounded.status);
    }
    // Answer only after the events are committed: a provider that got its 2xx will not send them again.
    await deps.store(bounded.events.map((event) => ({ provider: name, event, requestId: c.get('requestId'), traceparent: c.get('traceparent') })));
    return c.json({ received: bounded.events.length }, 200);
  };
  mountRoutes(app, [
    route({ method: 'get', path: '/:provider', doc: receiptDoc('get'), handlers: [receive] }),
    route({ method: 'post', path: '/:provider', doc: receiptDoc('post'), handlers: [receive] }),
  ]);
  return app;
}
