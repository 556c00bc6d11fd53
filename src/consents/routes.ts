/**
 * /mo/{provider}: a provider's inbound-SMS webhook (a player's reply, such as STOP). The provider's plugin verifies
 * it like a receipt, against the public URL we configured (never the Host header): unsigned or forged is 403 and
 * nothing is stored. The answer is what the provider expects (Twilio: empty TwiML, so no reply is sent).
 */
import { Hono, type Env, type Handler } from 'hono';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { mountRoutes, route, type MountableRoute, bodyAnswers, type RouteDoc } from '../http/route-table.js';
import type { Kysely } from 'kysely';
import type { InboundSms, SmsProvider } from '../../providers/types.js';
import { type CallbackDoor, type CallbackGuard, openCallback, refuseCallback } from '../http/provider-callback.js';
import { findInboundMessagesFrom } from '../ledger/consents.js';
import type { Database } from '../ledger/schema.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';
import { boundInboundSms } from './inbound-limits.js';

const inboundAnswerSchema = z.strictObject({ received: z.number().int().describe('1 when the request carried a message, now stored') });

const inboundMessagesAnswerSchema = z.strictObject({
  messages: z
    .array(
      z.strictObject({
        id: z.number().int(),
        provider: z.string(),
        provider_message_id: z.string(),
        from_number: z.string(),
        to_number: z.string(),
        content: z.string().nullable().describe('null unless ledger.store_content is on'),
        action: z.enum(['opt_out', 'opt_in']).nullable().describe('What the text asked for: a keyword of sms.opt_out_keywords or sms.opt_in_keywords, or null'),
        matched_user_ids: z.array(z.string()).describe('Players whose mobile is the sender'),
        received_at: z.string().describe('RFC 3339'),
      }),
    )
    .describe('Newest first, at most 100'),
});

const inboundDoc = (method: 'get' | 'post'): RouteDoc => ({
  tag: 'receipts',
  summary: `Inbound SMS from a provider (${method.toUpperCase()}): STOP and START`,
  description:
    'A player’s reply, in the provider’s own format and signature (Twilio’s Messaging webhook, Vonage inbound SMS). ' +
    'A text equal to one of sms.opt_out_keywords or sms.opt_in_keywords (trimmed, any case) opts the players whose mobile is the sender out of or into sms. ' +
    'Every message is kept. Twilio is answered with empty TwiML.',
  parameters: [{ name: 'provider', in: 'path', description: 'The key under `providers` in config.yaml', schema: z.string() }],
  ...(method === 'post'
    ? { request: { schema: z.unknown().describe('Provider-specific'), contentTypes: ['application/x-www-form-urlencoded', 'application/json'] } }
    : {}),
  responses: {
    200: { description: 'Stored (a provider retry of a stored message is acknowledged and changes nothing)', schema: inboundAnswerSchema },
    400: { description: 'Refused unread (too many fields, JSON too deep or with a key twice), or a field too long; nothing stored', schema: errorAnswerSchema },
    403: { description: 'Refused by the provider plugin (signature or format); nothing stored', schema: errorAnswerSchema },
    404: { description: 'No provider of that name, or it takes no inbound messages', schema: errorAnswerSchema },
    // Only a POST has a body to be too large.
    ...bodyAnswers(method, { 413: { description: 'Larger than the provider sends; nothing stored', schema: errorAnswerSchema } }),
    429: { description: 'Too many failed signatures from this address (auth.failure_budget); Retry-After says when', schema: errorAnswerSchema },
  },
});

export interface InboundRouteDeps {
  router: ProviderRouter;
  publicUrl: string;
  receive: (provider: string, sms: InboundSms) => Promise<unknown>;
  /** Failed signatures per address, and the refusals' log (src/auth/callback-guard.ts). */
  guard: CallbackGuard;
}

/**
 * GET /admin/inbound-messages?from=+…: what a number sent us, newest first (at most 100), e.g. to show when it said STOP.
 * The consents area's table of the /admin sub-app (src/auth/admin.ts guards it).
 */
export function inboundAdminRoutes(deps: { db: Kysely<Database>; readDb?: Kysely<Database> }): MountableRoute[] {
  return [
    route({
      method: 'get',
      path: '/inbound-messages',
      doc: {
        tag: 'admin',
        summary: 'The inbound SMS received from a number (STOP, START and the rest)',
        security: ['adminBearer'],
        parameters: [{ name: 'from', in: 'query', required: true, description: 'The sender in E.164', schema: z.string() }],
        responses: {
          200: { description: 'The messages', schema: inboundMessagesAnswerSchema },
          400: { description: '`from` is missing or not an E.164 number', schema: errorAnswerSchema },
          401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
          403: { description: 'The admin API is disabled (admin.api_key is not set)', schema: errorAnswerSchema },
        },
      },
      handlers: [
        async (c) => {
          const from = c.req.query('from');
          if (!from || !/^\+\d{6,15}$/.test(from)) return c.json({ error: 'from: query parameter must be a number in E.164, such as +447700900123' }, 400);
          const rows = await findInboundMessagesFrom(deps.readDb ?? deps.db, from, 100);
          const messages = rows.map((r) => ({
            ...r,
            matched_user_ids: JSON.parse(r.matched_user_ids) as string[],
            received_at: new Date(Number(r.received_at)).toISOString(),
          }));
          return c.json({ messages }, 200);
        },
      ],
    }),
  ];
}

export function inboundRoutes(deps: InboundRouteDeps) {
  const app = new Hono();
  const door: CallbackDoor<SmsProvider> = {
    door: 'mo',
    find: (name) => deps.router.byName(name),
    publicUrl: deps.publicUrl,
    refused: 'inbound message refused',
    unable: (name, provider) => (provider.parseInbound ? undefined : `provider ${JSON.stringify(name)} takes no inbound messages`),
    guard: deps.guard,
  };
  const receive: Handler<Env, '/:provider'> = async (c) => {
    const opened = await openCallback(c, door);
    if (!opened.ok) return opened.answer;
    const { name, provider } = opened;
    const parsed = provider.parseInbound!(opened.request);
    if (!parsed.ok) return refuseCallback(c, door, name, 403, parsed.reason);
    const bounded = parsed.message ? boundInboundSms(parsed.message) : undefined;
    if (bounded) return refuseCallback(c, door, name, 400, bounded);
    // Answered after the commit: a provider that got its 2xx does not send the message again.
    if (parsed.message) await deps.receive(name, parsed.message);
    const answer = provider.inboundAnswer;
    return answer ? c.body(answer.body, 200, { 'content-type': answer.contentType }) : c.json({ received: parsed.message ? 1 : 0 }, 200);
  };
  mountRoutes(app, [
    route({ method: 'get', path: '/:provider', doc: inboundDoc('get'), handlers: [receive] }),
    route({ method: 'post', path: '/:provider', doc: inboundDoc('post'), handlers: [receive] }),
  ]);
  return app;
}
