/**
 * OpenAPI description of the receipt endpoint and the operators' /admin API. The replay body is the schema the
 * route validates with; the message story schema describes what messageStory() returns (rows of the ledger).
 */
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { describeRoute, type ResponseDoc } from '../observability/openapi.js';
import { replayRequestSchema } from './admin-routes.js';

const epochMs = z.number().int().describe('epoch milliseconds');
const deliveryStatus = z.enum(['delivered', 'undelivered', 'failed', 'delivery_unknown']);

const storedMessageSchema = z.strictObject({
  sms_id: z.string(),
  activity_key: z.string().describe('activity.id as a string: the idempotency key'),
  activity: z.record(z.string(), z.unknown()).describe('activity exactly as the CRM sent it'),
  provider: z.string(),
  provider_message_id: z.string().nullable(),
  recipient: z.string(),
  sender: z.string().nullable(),
  encoding: z.enum(['gsm7', 'ucs2']),
  segments: z.number().int(),
  content: z.string().nullable().describe('null unless ledger.store_content is on'),
  state: z.enum(['dispatching', 'submitted', 'rejected', 'retryable', 'uncertain']),
  error: z.string().nullable(),
  error_code: z.string().nullable(),
  attempts: z.number().int(),
  provider_status: z.string().nullable(),
  delivery_status: deliveryStatus.nullable(),
  delivery_source: z.enum(['receipt', 'timeout']).nullable(),
  created_at: epochMs,
  updated_at: epochMs,
  dispatched_at: epochMs,
  submitted_at: epochMs.nullable(),
  completed_at: epochMs.nullable(),
});

const storedReceiptSchema = z.strictObject({
  id: z.number().int(),
  provider: z.string(),
  dedup_key: z.string(),
  sms_id: z.string().nullable(),
  provider_message_id: z.string().nullable(),
  provider_status: z.string(),
  mapped_status: z.string(),
  error_code: z.string().nullable(),
  matched: z.number().int().describe('1 once applied to its message; 0 while parked; 2 when set aside after delivery.parked_receipt_ttl'),
  received_at: epochMs,
  per_part: z.number().int().describe('1 when the receipt reports one part of a concatenated message (rolled up with the other parts)'),
});

const conversionAttemptSchema = z.strictObject({
  id: z.number().int(),
  conversion_id: z.number().int(),
  attempted_at: epochMs,
  ok: z.number().int(),
  http_status: z.number().int().nullable(),
  error: z.string().nullable(),
});

const conversionSchema = z.strictObject({
  id: z.number().int(),
  sms_id: z.string(),
  delivery_status: deliveryStatus,
  attempts: z.number().int(),
  next_attempt_at: epochMs,
  claimed_until: epochMs,
  claim_token: z.string().nullable(),
  posted_at: epochMs.nullable(),
  last_error: z.string().nullable(),
  dead: z.number().int().describe('1 when dead-lettered (replayable)'),
  created_at: epochMs,
  attempt_log: z.array(conversionAttemptSchema),
});

export const messageStorySchema = z.strictObject({
  message: storedMessageSchema,
  receipts: z.array(storedReceiptSchema),
  conversions: z.array(conversionSchema),
});

export const replayAnswerSchema = z.strictObject({ replayed: z.number().int().describe('How many dead conversions are due again') });
export const receiptAnswerSchema = z.strictObject({ received: z.number().int().describe('Events in the request, now stored') });

const adminRefusals: Record<number, ResponseDoc> = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'The admin API is disabled (admin.api_key is not set)', schema: errorAnswerSchema },
};

/**
 * The configured provider names are not listed: /openapi.json is public, and which providers an operator uses (and
 * under which names) is nobody else's business.
 */
export function receiptRouteDocs() {
  return (['get', 'post'] as const).map((method) =>
    describeRoute({
      method,
      path: '/dlr/{provider}',
      tag: 'receipts',
      summary: `Delivery receipt from a provider (${method.toUpperCase()})`,
      description: 'The body and signature are the provider’s own (Twilio form posts, Vonage JSON, sandbox JSON); the provider’s plugin verifies and parses them. Answers only after the events are stored.',
      parameters: [{ name: 'provider', in: 'path', description: 'The key under `providers` in config.yaml', schema: z.string() }],
      ...(method === 'post'
        ? { request: { schema: z.unknown().describe('Provider-specific'), contentTypes: ['application/json', 'application/x-www-form-urlencoded'] } }
        : {}),
      responses: {
        200: { description: 'Stored (duplicates are acknowledged and ignored)', schema: receiptAnswerSchema },
        403: { description: 'Refused by the provider plugin (signature or format)', schema: errorAnswerSchema },
        404: { description: 'No provider of that name is configured', schema: errorAnswerSchema },
      },
    }),
  );
}

export const adminRouteDocs = [
  describeRoute({
    method: 'get',
    path: '/admin/messages/{smsId}',
    tag: 'admin',
    summary: 'A message, its receipts and its conversion attempts',
    security: ['adminBearer'],
    parameters: [{ name: 'smsId', in: 'path', schema: z.string() }],
    responses: {
      200: { description: 'The message story', schema: messageStorySchema },
      ...adminRefusals,
      404: { description: 'No message with this sms_id', schema: errorAnswerSchema },
    },
  }),
  describeRoute({
    method: 'get',
    path: '/admin/messages',
    tag: 'admin',
    summary: 'A message found by the CRM’s activity.id',
    security: ['adminBearer'],
    parameters: [{ name: 'activity_id', in: 'query', required: true, schema: z.string() }],
    responses: {
      200: { description: 'The message story', schema: messageStorySchema },
      400: { description: 'activity_id is missing', schema: errorAnswerSchema },
      ...adminRefusals,
      404: { description: 'No message with this activity.id', schema: errorAnswerSchema },
    },
  }),
  describeRoute({
    method: 'post',
    path: '/admin/conversions/replay',
    tag: 'admin',
    summary: 'Make dead-lettered conversions due again',
    description: 'An empty body (or `{}`) replays every dead conversion; `ids` picks some.',
    security: ['adminBearer'],
    request: { schema: replayRequestSchema },
    responses: {
      200: { description: 'How many were replayed', schema: replayAnswerSchema },
      400: { description: 'The body is not JSON or `ids` is not a list of conversion ids', schema: errorAnswerSchema },
      ...adminRefusals,
    },
  }),
];
