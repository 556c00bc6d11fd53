/** /admin/events: what operators use to see the CRM event outbox (per user, per status) and replay dead events. */
import { errorAnswerSchema } from '../http/error-answer.js';
import { route, type MountableRoute, type ResponseDoc } from '../http/route-table.js';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { RawJson, stringifyExact } from '../http/exact-json.js';
import { listEvents, replayDeadEvents, type EventRow, type EventStatus } from '../ledger/events.js';
import { EVENT_TYPES, parseEventQuery } from './event-query.js';
import type { Database } from '../ledger/schema.js';
import { readReplayJson, replayRoute } from '../outbox/replay-route.js';
import type { Wake } from '../outbox/wake.js';

export interface EventAdminDeps {
  db: Kysely<Database>;
  /** Where the read-only views read (the ledger's read connection, src/ledger/engine/db.ts); `db` when absent. */
  readDb?: Kysely<Database>;
  now: () => number;
  wake: Wake;
}

const eventReplayRequestSchema = z.strictObject({
  event_ids: z
    .array(z.string().min(1).max(100))
    .min(1)
    .max(10_000)
    .optional()
    .describe('Dead events to replay; all dead events (of type and user_id, when given) when absent'),
  type: z
    .enum(EVENT_TYPES as [string, ...string[]])
    .optional()
    .describe('Only dead events of this CRM queue type'),
  user_id: z.string().min(1).max(256).optional().describe('Only dead events of this user'),
});

const PAGE = 100;

/** What each field of a replay request must be, for the 400 that names it. */
const REPLAY_FIELD_PROBLEMS: ReadonlyMap<string, string> = new Map([
  ['event_ids', 'must be a non-empty array of event ids'],
  ['type', `must be one of ${EVENT_TYPES.join(', ')}`],
  ['user_id', 'must be a string of 1 to 256 characters'],
]);

export function eventStatus(row: Pick<EventRow, 'sent_at' | 'dead'>): EventStatus {
  if (row.sent_at !== null) return 'sent';
  return row.dead === 1 ? 'dead' : 'pending';
}

function eventView(row: EventRow) {
  return {
    event_id: row.event_id,
    type: row.type,
    method: row.method,
    path: row.path,
    user_id: row.user_id,
    source: row.source,
    status: eventStatus(row),
    attempts: row.attempts,
    created_at: Number(row.created_at),
    next_attempt_at: Number(row.next_attempt_at),
    sent_at: row.sent_at === null ? null : Number(row.sent_at),
    http_status: row.http_status,
    last_error: row.last_error,
    // As stored, which is as it is sent (stringifyExact keeps its numbers exactly).
    payload: new RawJson(row.payload_json),
  };
}

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

/** The events area's table of the /admin sub-app (src/auth/admin.ts guards it). */
export function eventAdminRoutes(deps: EventAdminDeps): MountableRoute[] {
  return [
    route({
      method: 'get',
      path: '/events',
      doc: {
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
      },
      handlers: [
        async (c) => {
          const query = parseEventQuery(new URL(c.req.url).searchParams);
          if (!query.ok) return c.json({ error: query.error }, 400);
          const rows = await listEvents(deps.readDb ?? deps.db, { ...query.filter, limit: PAGE + 1 });
          const page = rows.slice(0, PAGE);
          const next = rows.length > PAGE ? String(page[page.length - 1]!.id) : null;
          return c.body(stringifyExact({ events: page.map(eventView), next_cursor: next }), 200, { 'content-type': 'application/json' });
        },
      ],
    }),
    route({
      method: 'post',
      path: '/events/replay',
      doc: {
        tag: 'events',
        summary: 'Send dead events again: the given event_ids, or all of them (of a type and/or user_id when given)',
        security: ['adminBearer'],
        request: { schema: eventReplayRequestSchema },
        responses: {
          200: { description: 'How many dead events are due again', schema: z.strictObject({ replayed: z.number().int() }) },
          400: { description: 'The body is not valid', schema: errorAnswerSchema },
          ...adminRefusals,
        },
      },
      handlers: [
        replayRoute({
          read: (c) =>
            readReplayJson(c, eventReplayRequestSchema, (issue) => {
              if (issue.code === 'unrecognized_keys') return 'body: only event_ids, type and user_id are accepted';
              const field = issue.path.length ? String(issue.path[0]) : 'body';
              return `${field}: ${REPLAY_FIELD_PROBLEMS.get(field) ?? 'must be a JSON object'}`;
            }),
          replay: ({ event_ids: eventIds, type, user_id: userId }) => replayDeadEvents(deps.db, deps.now(), { eventIds, type, userId }),
          kind: 'events',
          wake: deps.wake,
        }),
      ],
    }),
  ];
}
