/**
 * /dlr/{provider}: through the provider callbacks' door (src/http/provider-callback.ts), verified and parsed by the
 * provider's plugin, stored, answered 2xx quickly (providers retry otherwise).
 */
import { Hono, type Env, type Handler } from 'hono';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { bodyAnswers, mountRoutes, route, type RouteDoc } from '../http/route-table.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';
import { type CallbackGuard, openCallback, refuseCallback } from '../http/provider-callback.js';
import type { ReceiptSummary, ReceiptInput } from './apply-receipts.js';
import { boundReceiptEvents } from './receipt-limits.js';

export interface ReceiptRouteDeps {
  router: ProviderRouter;
  /** Base of the URLs we handed to providers; signatures are checked against it, never against the Host header. */
  publicUrl: string;
  store: (inputs: ReceiptInput[]) => Promise<ReceiptSummary>;
  /** delivery.max_receipt_events */
  maxEvents: number;
  /** Failed signatures per address, and the refusals' log (src/auth/callback-guard.ts). */
  guard: CallbackGuard;
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
    400: { description: 'Refused unread: too many fields, JSON too deep or with a key twice, ids too long', schema: errorAnswerSchema },
    403: { description: 'Refused by the provider plugin (signature or format)', schema: errorAnswerSchema },
    404: { description: 'No provider of that name is configured', schema: errorAnswerSchema },
    // Only a POST has a body to be too large.
    ...bodyAnswers(method, {
      413: { description: 'Larger than the provider sends, or more events than delivery.max_receipt_events', schema: errorAnswerSchema },
    }),
    429: { description: 'Too many failed signatures from this address (auth.failure_budget); Retry-After says when', schema: errorAnswerSchema },
  },
});

export function receiptRoutes(deps: ReceiptRouteDeps) {
  const app = new Hono();
  const door = {
    door: 'dlr' as const,
    find: (name: string) => deps.router.byName(name),
    publicUrl: deps.publicUrl,
    refused: 'receipt refused',
    guard: deps.guard,
  };
  const receive: Handler<Env, '/:provider'> = async (c) => {
    const opened = await openCallback(c, door);
    if (!opened.ok) return opened.answer;
    const { name, provider } = opened;
    const parsed = await provider.parseReceipt(opened.request);
    if (!parsed.ok) return refuseCallback(c, door, name, 403, parsed.reason);
    const bounded = boundReceiptEvents(parsed.events, deps.maxEvents);
    if (!bounded.ok) return refuseCallback(c, door, name, bounded.status, bounded.error);
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
