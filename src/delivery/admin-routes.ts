/** What operators use to see and repair delivery: searching messages, one message's story; the dead conversions and their replay (the conversion outbox's, conversions.ts). */
import type { Context } from 'hono';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { stringifyExact } from '../http/exact-json.js';
import { listDeadConversions, replayDeadConversions } from '../ledger/conversions.js';
import { searchMessages } from '../ledger/message-search.js';
import { findMessageBySmsId } from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import { messageStory } from './message-story.js';
import { parseDeadLetterQuery } from './dead-letter-query.js';
import { encodeCursor, parseMessageQuery } from './message-query.js';
import { readReplayJson, replayRoute } from '../outbox/replay-route.js';
import type { KindAdminDeps } from '../outbox/descriptor.js';
import { errorAnswerSchema } from '../http/error-answer.js';
import { route, type MountableRoute, type ResponseDoc } from '../http/route-table.js';
import { SEARCH_STATUSES } from '../ledger/message-search.js';
import { DEAD_LETTER_STATUSES } from './dead-letter-query.js';
import { MAX_PARAMETER_LENGTH } from '../http/query-parameters.js';
import { MAX_PAGE_SIZE } from './message-query.js';

export interface DeliveryAdminRouteDeps {
  db: Kysely<Database>;
  /** Where the read-only views read (the ledger's read connection, src/ledger/engine/db.ts); `db` when absent. */
  readDb?: Kysely<Database>;
  /** sms.default_region: how a national recipient number in a search is read. */
  defaultRegion: string | undefined;
  /** How a provider's receipts are verified (receipt-checks.ts). */
  receiptCheck: (provider: string) => string;
}

function exactJson(c: Context, value: unknown) {
  return c.body(stringifyExact(value), 200, { 'content-type': 'application/json' });
}

const replayRequestSchema = z.strictObject({
  ids: z.array(z.number().int().positive()).min(1).max(10_000).optional().describe('Conversion ids to replay'),
  provider: z.string().min(1).max(256).optional().describe('Only dead letters of messages sent through this provider'),
  status: z.enum(['delivered', 'undelivered', 'failed', 'delivery_unknown']).optional().describe('Only dead letters reporting this status'),
});

const epochMs = z.number().int().describe('epoch milliseconds');
const deliveryStatus = z.enum(['delivered', 'undelivered', 'failed', 'delivery_unknown']);

const storedMessageSchema = z.strictObject({
  sms_id: z.string(),
  activity_key: z.string().describe('activity.id as a string: the idempotency key'),
  activity: z.record(z.string(), z.unknown()).describe('activity exactly as the CRM sent it'),
  user_id: z.string().nullable().describe('activity.user_id as text'),
  request_id: z.string().nullable().describe('X-Request-Id of the request that first sent it'),
  provider: z.string(),
  provider_message_id: z.string().nullable(),
  recipient: z.string(),
  sender: z.string().nullable(),
  encoding: z.enum(['gsm7', 'ucs2']),
  segments: z.number().int(),
  content: z.string().nullable().describe('null unless ledger.store_content is on'),
  state: z.enum(['dispatching', 'held', 'submitted', 'rejected', 'retryable', 'uncertain']),
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
  /** What its provider said when asked about a send whose process was lost (docs/crash-windows.md). */
  lookup_result: z.enum(['pending', 'found', 'absent', 'unknown']).nullable(),
  status_queried_at: epochMs.nullable(),
  traceparent: z.string().nullable().describe('W3C traceparent of the send span when tracing was on (docs/tracing.md): its second field is the trace id'),
  intake_note: z
    .string()
    .nullable()
    .describe('What was read otherwise than the CRM sent it, so the message was not lost: a sender_name no SMS can carry, an unknown encoding'),
  country: z.string().nullable().describe("The recipient's ISO 3166 country as read; null when the number placed in none"),
  cost: z.string().nullable().describe('What the message cost, exact decimal text in cost_currency (docs/costs.md); null while not counted'),
  cost_currency: z.string().nullable(),
  cost_source: z.enum(['reported', 'estimate', 'none']).nullable().describe('The provider reported it, the rate table estimated it, or neither is known'),
  route: z.string().nullable().describe('The route whose rules chose the members (docs/routing.md); null when sent to a provider by name'),
  route_rule: z.number().int().nullable().describe("The rule's number in the route (1 first); 0 for the route's own members (catch-all)"),
  route_rule_name: z.string().nullable().describe("The rule's name, when it has one"),
  held_until: epochMs
    .nullable()
    .describe('When its quiet hours end and it is released to its provider (docs/routing.md "Quiet hours"); null unless it was held'),
  receipts_name_sms_id: z
    .number()
    .int()
    .describe("1 when its provider's receipts name this sms_id and find it by it; 0 when they may carry only provider_message_id (docs/ledger.md)"),
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
  price: z
    .string()
    .nullable()
    .describe('The price a receipt parked before its message was known reported, exact decimal text in price_currency (docs/costs.md); else null'),
  price_currency: z.string().nullable(),
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
  /** The post it first went out in: a repeat after a crash carries the same conversions (docs/crash-windows.md). */
  post_group: z.string().nullable(),
  posted_at: epochMs.nullable(),
  last_error: z.string().nullable(),
  dead: z.number().int().describe('1 when dead-lettered (replayable)'),
  created_at: epochMs,
  attempt_log: z.array(conversionAttemptSchema),
});

const timelineEntrySchema = z.strictObject({
  at: epochMs.nullable(),
  kind: z.enum(['received', 'send', 'receipt', 'timeout', 'conversion', 'webhook', 'event']),
  summary: z.string(),
  detail: z.record(z.string(), z.union([z.string(), z.number(), z.null()])),
});

const messageStorySchema = z.strictObject({
  message: storedMessageSchema,
  receipts: z.array(storedReceiptSchema),
  conversions: z.array(conversionSchema),
  events: z
    .array(
      z.strictObject({
        event_id: z.string(),
        type: z.string().describe('The CRM queue type, e.g. USER_CONSENTS_V2'),
        user_id: z.string(),
        created_at: epochMs,
        sent_at: epochMs.nullable(),
        dead: z.number().int(),
        attempts: z.number().int(),
        http_status: z.number().int().nullable(),
        last_error: z.string().nullable(),
      }),
    )
    .describe('CRM events this message’s send caused: a provider’s opt-out error queues a User Consents event (GET /admin/events has them in full)'),
  timeline: z.array(timelineEntrySchema).describe('Everything above in time order, for people; only the latest send attempt’s answer is stored'),
});

const messageSummarySchema = storedMessageSchema.pick({
  sms_id: true,
  activity_key: true,
  user_id: true,
  request_id: true,
  provider: true,
  provider_message_id: true,
  recipient: true,
  state: true,
  delivery_status: true,
  provider_status: true,
  error: true,
  error_code: true,
  attempts: true,
  segments: true,
  created_at: true,
  submitted_at: true,
  completed_at: true,
  route: true,
  route_rule: true,
  route_rule_name: true,
});

const searchAnswerSchema = z.strictObject({
  messages: z.array(messageSummarySchema).describe('Newest first'),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next (older) page; null on the last page'),
});

const deadLetterSchema = z.strictObject({
  id: z.number().int(),
  sms_id: z.string(),
  activity_key: z.string(),
  provider: z.string(),
  delivery_status: deliveryStatus,
  attempts: z.number().int(),
  last_error: z.string().nullable().describe('Why the last post failed'),
  last_http_status: z.number().int().nullable().describe('The webhook’s last HTTP status (null: no answer)'),
  last_attempt_at: epochMs.nullable(),
  created_at: epochMs,
});

const text = (description: string) => z.string().min(1).max(MAX_PARAMETER_LENGTH).describe(description);
const time = text('ISO 8601 (UTC unless an offset is given, e.g. 2026-11-24T03:00Z) or epoch milliseconds');
const searchParameters = [
  {
    name: 'recipient',
    in: 'query' as const,
    description: 'Phone number, E.164 or national (read with sms.default_region); matched on its E.164 form',
    schema: text('phone number'),
  },
  { name: 'user_id', in: 'query' as const, description: 'activity.user_id', schema: text('player id') },
  { name: 'activity_id', in: 'query' as const, description: 'activity.id', schema: text('activity.id') },
  { name: 'sms_id', in: 'query' as const, schema: text('sms_id') },
  { name: 'provider', in: 'query' as const, schema: text('provider name') },
  {
    name: 'status',
    in: 'query' as const,
    description:
      'held: accepted inside its quiet hours, not yet sent; refused: the provider refused it at send; uncertain: a send that may have gone out; dead: its conversion is dead-lettered; sent: accepted, no terminal receipt yet',
    schema: z.enum([...SEARCH_STATUSES.keys()] as [string, ...string[]]),
  },
  { name: 'from', in: 'query' as const, description: 'created at or after', schema: time },
  { name: 'to', in: 'query' as const, description: 'created before', schema: time },
  {
    name: 'limit',
    in: 'query' as const,
    description: `page size (default 50)`,
    schema: z
      .string()
      .regex(/^[0-9]{1,3}$/)
      .describe(`1 to ${MAX_PAGE_SIZE}`),
  },
  { name: 'cursor', in: 'query' as const, description: 'next_cursor of the previous page', schema: text('opaque') },
];

const replayAnswerSchema = z.strictObject({ replayed: z.number().int().describe('How many dead conversions are due again') });

const adminRefusals: Record<number, ResponseDoc> = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'The admin API is disabled (admin.api_key is not set)', schema: errorAnswerSchema },
};

/** The delivery area's table of the /admin sub-app (src/auth/admin.ts guards it). */
export function deliveryAdminRoutes(deps: DeliveryAdminRouteDeps): MountableRoute[] {
  return [
    route({
      method: 'get',
      path: '/messages/:smsId',
      doc: {
        tag: 'admin',
        summary: 'A message, its receipts and its conversion attempts',
        security: ['adminBearer'],
        parameters: [{ name: 'smsId', in: 'path', schema: z.string() }],
        responses: {
          200: { description: 'The message story', schema: messageStorySchema },
          ...adminRefusals,
          404: { description: 'No message with this sms_id', schema: errorAnswerSchema },
        },
      },
      handlers: [
        async (c) => {
          const message = await findMessageBySmsId(deps.readDb ?? deps.db, c.req.param('smsId'));
          if (!message) return c.json({ error: `sms_id ${c.req.param('smsId')} is not in the ledger`, code: 404 }, 404);
          return exactJson(c, await messageStory(deps.readDb ?? deps.db, message, deps.receiptCheck));
        },
      ],
    }),
    route({
      method: 'get',
      path: '/messages',
      doc: {
        tag: 'admin',
        summary: 'Search messages: by phone number, player, activity.id, sms_id, provider, status and time; newest first',
        description:
          'Filters combine (AND). Every filter is backed by an index, so a page costs the same at any ledger size. Unknown or repeated parameters are refused.',
        security: ['adminBearer'],
        parameters: searchParameters,
        responses: {
          200: { description: 'A page of messages', schema: searchAnswerSchema },
          400: { description: 'A parameter is unknown, repeated, empty, too long or not valid (the error names it)', schema: errorAnswerSchema },
          ...adminRefusals,
        },
      },
      handlers: [
        async (c) => {
          const query = parseMessageQuery(new URL(c.req.url).searchParams, deps.defaultRegion);
          if (!query.ok) return c.json({ error: query.error }, 400);
          const { rows, more } = await searchMessages(deps.readDb ?? deps.db, query.filter);
          return c.json({ messages: rows, next_cursor: more ? encodeCursor(rows[rows.length - 1]!) : null });
        },
      ],
    }),
  ];
}

/** The conversion outbox's dead list and replay in /admin (its descriptor's routes, src/delivery/conversions.ts). */
export function conversionAdminRoutes(deps: KindAdminDeps): MountableRoute[] {
  return [
    route({
      method: 'get',
      path: '/conversions/dead',
      doc: {
        tag: 'admin',
        summary: 'Dead-lettered conversions, newest first: reason, attempts, the webhook’s last answer',
        security: ['adminBearer'],
        parameters: [
          { name: 'provider', in: 'query', schema: text('provider name') },
          { name: 'status', in: 'query', schema: z.enum(DEAD_LETTER_STATUSES as [string, ...string[]]) },
          {
            name: 'limit',
            in: 'query',
            description: 'page size (default 100)',
            schema: z
              .string()
              .regex(/^[0-9]{1,4}$/)
              .describe('1 to 1000'),
          },
          { name: 'cursor', in: 'query', description: 'next_cursor of the previous page', schema: z.string().regex(/^[0-9]{1,15}$/) },
        ],
        responses: {
          200: {
            description: 'A page of dead letters',
            schema: z.strictObject({ dead_letters: z.array(deadLetterSchema), next_cursor: z.string().nullable() }),
          },
          400: { description: 'A parameter is unknown, repeated, empty or not valid (the error names it)', schema: errorAnswerSchema },
          ...adminRefusals,
        },
      },
      handlers: [
        async (c) => {
          const query = parseDeadLetterQuery(new URL(c.req.url).searchParams);
          if (!query.ok) return c.json({ error: query.error }, 400);
          const rows = await listDeadConversions(deps.readDb, { ...query.match, limit: query.limit + 1 });
          const more = rows.length > query.limit;
          const page = more ? rows.slice(0, query.limit) : rows;
          return c.json({ dead_letters: page, next_cursor: more ? String(page[page.length - 1]!.id) : null });
        },
      ],
    }),
    route({
      method: 'post',
      path: '/conversions/replay',
      doc: {
        tag: 'admin',
        summary: 'Make dead-lettered conversions due again',
        description: 'An empty body (or `{}`) replays every dead conversion; `ids` picks some; `provider` and `status` replay those matching.',
        security: ['adminBearer'],
        request: { schema: replayRequestSchema },
        responses: {
          200: { description: 'How many were replayed', schema: replayAnswerSchema },
          400: { description: 'The body is not JSON, or a field is not valid (the error names it)', schema: errorAnswerSchema },
          ...adminRefusals,
        },
      },
      handlers: [
        replayRoute({
          read: (c) =>
            readReplayJson(c, replayRequestSchema, (issue) => {
              const field = issue.path.length ? issue.path.map(String).join('.') : 'body';
              return `${field}: ${issue.code === 'unrecognized_keys' ? 'only ids, provider and status are accepted' : issue.message}`;
            }),
          replay: (request) => replayDeadConversions(deps.db, deps.now(), request),
          kind: 'conversions',
          wake: deps.wake,
        }),
      ],
    }),
  ];
}
