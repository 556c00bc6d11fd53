/**
 * OpenAPI description of the CRM's SMS endpoints. The request body is the schema prepareMessage validates each
 * message with; the answer schemas below give BatchAnswer its type in routes.ts.
 */
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { describeRoute, type ResponseDoc } from '../observability/openapi.js';
import { smsMessageSchema } from './message-schema.js';

export const singleAnswerSchema = z.strictObject({ sms_id: z.string().describe('Our id for the message; conversions carry it') });

export const singleRefusalSchema = z.strictObject({
  error: z.string(),
  sms_id: z.string().optional().describe('Present when the provider refused a message we had already recorded'),
});

const echoedId = z.union([z.string(), z.number(), z.null()]).describe('activity.id exactly as received, with its JSON type (null when absent)');
const batchEntry = z.strictObject({ id: echoedId, sms_id: z.string().optional(), error: z.string() });

export const batchAnswerSchema = z.strictObject({
  successful: z.array(z.strictObject({ id: echoedId, sms_id: z.string() })),
  failed: z.array(batchEntry).describe('Permanent: the CRM does not retry these'),
  fatal: z.array(batchEntry).describe('Transient: the CRM retries these'),
});

export type BatchAnswer = z.infer<typeof batchAnswerSchema>;

const common: Record<number, ResponseDoc> = {
  401: { description: 'X-Api-Key missing or not valid', schema: errorAnswerSchema },
  413: { description: 'Body larger than server.body_limit_bytes', schema: errorAnswerSchema },
  415: { description: 'Content-Type is not application/json', schema: errorAnswerSchema },
};

export const smsRouteDocs = [
  describeRoute({
    method: 'post',
    path: '/channels/sms/single',
    tag: 'sms',
    summary: 'Send one SMS',
    description: 'Idempotent on activity.id: a retry of a sent id answers the same sms_id and sends nothing.',
    security: ['crmApiKey'],
    request: { schema: smsMessageSchema },
    responses: {
      200: { description: 'Sent (handed to the provider)', schema: singleAnswerSchema },
      400: { description: 'Permanent problem with this message (invalid field, or the provider refused it); do not retry', schema: singleRefusalSchema },
      ...common,
      503: {
        description: 'Transient problem; retry later',
        schema: errorAnswerSchema,
        headers: { 'Retry-After': { description: 'Seconds to wait', schema: z.string() } },
      },
    },
  }),
  describeRoute({
    method: 'post',
    path: '/channels/sms/batch',
    tag: 'sms',
    summary: 'Send many SMS',
    description: 'Every entry appears in exactly one of the three arrays. Entries not sent by sms.batch_deadline are fatal.',
    security: ['crmApiKey'],
    request: { schema: z.array(smsMessageSchema) },
    responses: {
      200: { description: 'Each entry classified', schema: batchAnswerSchema },
      400: { description: 'The body is not a JSON array', schema: errorAnswerSchema },
      ...common,
    },
  }),
];
