/** OpenAPI description of the event relay (/relay/…) and its admin view (/admin/events), from the schemas the routes use. */
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { describeRoute, type ResponseDoc, type RouteDoc } from '../observability/openapi.js';
import { eventReplayRequestSchema } from './admin-routes.js';
import { eventSchema as relayEventSchema, resolveCatalogue } from '../crm/event-catalogue.js';
import { EVENT_TYPES } from './event-query.js';

const acceptedSchema = z.strictObject({ event_id: z.string().describe('The outbox id of the event (the first one’s, for a repeated bonus status)') });

const relayRefusals: Record<number, ResponseDoc> = {
  400: {
    description: 'A field is missing or wrong (named in the error), the body is too large or too deep, or credit_id names no credit of the user',
    schema: errorAnswerSchema,
  },
  401: { description: 'X-Api-Key missing or not one of relay.api_keys', schema: errorAnswerSchema },
  403: { description: 'relay.api_keys is empty: the relay is off', schema: errorAnswerSchema },
  415: { description: 'Content-Type is not application/json', schema: errorAnswerSchema },
};

const adminRefusals: Record<number, ResponseDoc> = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'admin.api_key is not set', schema: errorAnswerSchema },
};

const eventSchema = z.strictObject({
  event_id: z.string(),
  type: z.string().describe('The CRM queue type, e.g. BONUS, USER_CONSENTS_V2'),
  method: z.enum(['POST', 'PUT']),
  path: z.string().describe('Integration API path'),
  user_id: z.string(),
  source: z.enum(['relay', 'gateway']).describe('relay: received on /relay; gateway: caused by the gateway’s own data change'),
  status: z.enum(['pending', 'sent', 'dead']),
  attempts: z.number().int(),
  created_at: z.number().int().describe('epoch milliseconds (accepted)'),
  next_attempt_at: z.number().int().describe('epoch milliseconds'),
  sent_at: z.number().int().nullable(),
  http_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  payload: z.record(z.string(), z.unknown()).describe('The body as sent'),
});

const relayDocs: RouteDoc[] = resolveCatalogue().map((route) =>
  describeRoute({
    method: route.method === 'POST' ? 'post' : 'put',
    path: `/relay${route.path}`,
    tag: 'events',
    summary: `Relay a ${route.kind.replaceAll('_', ' ')} event to the CRM (default ${route.method} ${route.path}${route.channel === 'push_webhook' ? ', Basic auth' : `, queue type ${route.type}`})`,
    description:
      'Validated against the documented fields; other keys are passed through. Committed to the outbox before the answer, then delivered in order per user_id.' +
      (route.kind === 'bonus'
        ? ' credit_id (optional) names the credit whose crm_references to attach; without it the newest credit of the same user_id and bonus_code within relay.reference_window is used. A repeated (user_bonus_id, status) other than Ongoing answers the first event_id with Idempotent-Replayed: true.'
        : ''),
    security: ['relayApiKey'],
    request: { schema: relayEventSchema(route.kind) },
    responses: {
      202: {
        description: 'Accepted: committed to the outbox',
        schema: acceptedSchema,
        ...(route.kind === 'bonus'
          ? {
              headers: {
                'Idempotent-Replayed': {
                  description: 'true when this (user_bonus_id, status) was accepted before; nothing more is sent',
                  schema: z.literal('true'),
                },
              },
            }
          : {}),
      },
      ...relayRefusals,
    },
  }),
);

export const eventRouteDocs: RouteDoc[] = [
  ...relayDocs,
  describeRoute({
    method: 'get',
    path: '/admin/events',
    tag: 'events',
    summary: 'Events of the CRM outbox, newest first (100 a page)',
    security: ['adminBearer'],
    parameters: [
      { name: 'user_id', in: 'query', schema: z.string().min(1).max(256), description: 'Only this user’s events' },
      { name: 'status', in: 'query', schema: z.enum(['pending', 'sent', 'dead']) },
      { name: 'type', in: 'query', schema: z.enum(EVENT_TYPES as [string, ...string[]]), description: 'Only events of this CRM queue type' },
      { name: 'cursor', in: 'query', schema: z.string().regex(/^[0-9]{1,15}$/), description: 'next_cursor of the previous page' },
    ],
    responses: {
      200: { description: 'A page', schema: z.strictObject({ events: z.array(eventSchema), next_cursor: z.string().nullable() }) },
      400: { description: 'A parameter is unknown, repeated, empty, too long (256) or not valid (named in the error)', schema: errorAnswerSchema },
      ...adminRefusals,
    },
  }),
  describeRoute({
    method: 'post',
    path: '/admin/events/replay',
    tag: 'events',
    summary: 'Send dead events again: the given event_ids, or all of them (of a type and/or user_id when given)',
    security: ['adminBearer'],
    request: { schema: eventReplayRequestSchema },
    responses: {
      200: { description: 'How many dead events are due again', schema: z.strictObject({ replayed: z.number().int() }) },
      400: { description: 'The body is not valid', schema: errorAnswerSchema },
      ...adminRefusals,
    },
  }),
];
