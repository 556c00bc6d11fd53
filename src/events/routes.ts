/**
 * /relay/…: the operator's platform sends each real-time event here instead of to the CRM, at the CRM's own path and
 * method (docs/crm-interface.md §7). Check the key, the size, the shape; commit to the outbox; answer 202 {event_id}.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { mountRoutes, route as entry, type ResponseDoc, type RouteDoc } from '../http/route-table.js';
import type { Transact } from '../ledger/engine/transaction-queue.js';
import { requireApiKey } from '../auth/api-key.js';
import { readJsonBody } from '../http/json-body.js';
import { describeFirstIssue } from '../http/zod-issue.js';
import { acceptEvent } from './accept.js';
import { catalogueRow, eventSchema, extraCheck, orderKeyOf, type CatalogueRow, type EventRoute } from '../crm/event-catalogue.js';
import { guardPayload } from './payload-guard.js';
import type { Wake } from '../outbox/wake.js';

interface BonusFields {
  credit_id?: string;
  bonus_code?: string;
  user_bonus_id: string;
  status: string;
}

const acceptedSchema = z.strictObject({ event_id: z.string().describe('The outbox id of the event (the first one’s, for a repeated bonus status)') });

const conflictSchema = z.strictObject({
  error: z.string().describe('Which event took the key first, naming user_id, user_bonus_id and status'),
  code: z.literal(409),
  event_id: z.string().describe('The event accepted first under this (user_id, user_bonus_id, status): the one sent'),
});

const relayRefusals: Record<number, ResponseDoc> = {
  400: {
    description: 'A field is missing or wrong (named in the error), the body is too large or too deep, or credit_id names no credit of the user',
    schema: errorAnswerSchema,
  },
  401: { description: 'X-Api-Key missing or not one of relay.api_keys', schema: errorAnswerSchema },
  403: { description: 'relay.api_keys is empty: the relay is off', schema: errorAnswerSchema },
  415: { description: 'Content-Type is not application/json', schema: errorAnswerSchema },
};

const bonusConflict: Record<number, ResponseDoc> = {
  409: { description: 'Another body was accepted first for this (user_id, user_bonus_id, status): this one is not sent', schema: conflictSchema },
};

/** The documentation of a relay route: its defaults are the catalogue row's (the mounted method and path may be configured). */
function relayDoc(route: EventRoute, row: CatalogueRow): RouteDoc {
  return {
    tag: 'events',
    summary: `Relay a ${route.kind.replaceAll('_', ' ')} event to the CRM (default ${row.method} ${row.path}${row.channel === 'push_webhook' ? ', Basic auth' : `, queue type ${row.type}`})`,
    description:
      'Validated against every rule of the CRM maker\'s schema of the kind, as the CRM\'s checker applies them (docs/events.md "Rules per kind"); other keys are passed through. Committed to the outbox before the answer, then delivered in order per user_id.' +
      (route.kind === 'bonus'
        ? ' credit_id (optional) names the credit whose crm_references to attach; without it the newest credit of the same user_id and bonus_code within relay.reference_window is used. A repeated (user_id, user_bonus_id, status) other than Ongoing with the same body (spacing and key order aside) answers the first event_id with Idempotent-Replayed: true; with another body it answers 409 naming the first event_id, and is not sent.'
        : ''),
    security: ['relayApiKey'],
    request: { schema: eventSchema(route.kind) },
    responses: {
      202: {
        description: 'Accepted: committed to the outbox',
        schema: acceptedSchema,
        ...(route.kind === 'bonus'
          ? {
              headers: {
                'Idempotent-Replayed': {
                  description: 'true when this body was accepted before for the same (user_id, user_bonus_id, status); nothing more is sent',
                  schema: z.literal('true'),
                },
              },
            }
          : {}),
      },
      ...relayRefusals,
      ...(route.kind === 'bonus' ? bonusConflict : {}),
    },
  };
}

export interface RelayRouteDeps {
  apiKeys: readonly string[];
  /** The catalogue with crm.integration.events applied (resolveCatalogue). */
  routes: readonly EventRoute[];
  transact: Transact;
  now: () => number;
  referenceWindowMs: number;
  maxEventBytes: number;
  maxDepth: number;
  /** Told after an event was committed, so the event outbox looks at once. */
  wake: Wake;
}

export function relayRoutes(deps: RelayRouteDeps) {
  const app = new Hono();
  app.use('*', requireApiKey(deps.apiKeys, { offWithoutKeys: 'the relay is off: set relay.api_keys to use it', codeInBody: true }));
  for (const route of deps.routes) {
    const schema = eventSchema(route.kind);
    const row = catalogueRow(route.kind);
    mountRoutes(app, [
      entry({
        method: route.method === 'POST' ? 'post' : 'put',
        path: route.path,
        doc: relayDoc(route, row),
        handlers: [
          async (c) => {
            const declared = Number(c.req.header('content-length') ?? 0);
            if (declared > deps.maxEventBytes)
              return c.json({ error: `body: ${declared} bytes is more than relay.max_event_bytes (${deps.maxEventBytes})`, code: 400 }, 400);
            // Numbers a double would change are read on their text (the rules compare exactly, as the CRM's checker).
            const body = await readJsonBody(c, { depthLimit: { maxDepth: deps.maxDepth, key: 'relay.max_depth' }, exactNumbers: true });
            if (!body.ok) return c.json({ error: body.error, code: body.status }, body.status);
            if (Buffer.byteLength(body.text) > deps.maxEventBytes)
              return c.json({ error: `body: more than relay.max_event_bytes (${deps.maxEventBytes}) bytes`, code: 400 }, 400);
            const guarded = guardPayload(body.value, deps.maxDepth);
            if (!guarded.ok) return c.json({ error: guarded.error, code: 400 }, 400);
            const parsed = schema.safeParse(body.value);
            if (!parsed.success) return c.json({ error: describeFirstIssue(parsed.error, body.value), code: 400 }, 400);
            const valid = parsed.data as Record<string, unknown>;
            const extra = extraCheck(route.kind, valid);
            if (extra) return c.json({ error: extra, code: 400 }, 400);
            const bonus =
              route.kind === 'bonus'
                ? (({ credit_id, bonus_code, user_bonus_id, status }: BonusFields) => ({
                    creditId: credit_id,
                    bonusCode: bonus_code,
                    userBonusId: user_bonus_id,
                    status,
                    text: body.text,
                  }))(parsed.data as BonusFields)
                : undefined;
            // The text as received is what is sent on: JSON.stringify of the parsed value would round 64-bit ids.
            const input = { route, received: body.text, userId: orderKeyOf(row, valid), bonus, traceparent: c.get('traceparent') };
            const result = await deps.transact((trx) => acceptEvent(trx, input, deps.now(), deps.referenceWindowMs));
            if (!result.ok && result.status === 409) return c.json({ error: result.error, code: 409, event_id: result.eventId }, 409);
            if (!result.ok) return c.json({ error: result.error, code: 400 }, 400);
            if (result.replayed) c.header('Idempotent-Replayed', 'true');
            else deps.wake('events');
            return c.json({ event_id: result.eventId }, 202);
          },
        ],
      }),
    ]);
  }
  return app;
}
