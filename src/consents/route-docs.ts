/** OpenAPI description of /mo/{provider} (src/consents/routes.ts). */
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { describeRoute } from '../observability/openapi.js';

export const inboundAnswerSchema = z.strictObject({ received: z.number().int().describe('1 when the request carried a message, now stored') });

export const inboundMessagesAnswerSchema = z.strictObject({
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

export const inboundAdminRouteDocs = [
  describeRoute({
    method: 'get',
    path: '/admin/inbound-messages',
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
  }),
];

/** `providers` are the configured names whose plugin takes inbound messages. */
export function inboundRouteDocs() {
  return (['get', 'post'] as const).map((method) =>
    describeRoute({
      method,
      path: '/mo/{provider}',
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
        403: { description: 'Refused by the provider plugin (signature or format); nothing stored', schema: errorAnswerSchema },
        404: { description: 'No provider of that name, or it takes no inbound messages', schema: errorAnswerSchema },
      },
    }),
  );
}
