/**
 * The credits outbox's routes in /admin (Bearer admin.api_key, src/auth/admin.ts): a user's latest credits with the CRM
 * references a bonus event needs, and the replay of dead credits.
 */
import { z } from 'zod';
import { referencesOfCredit } from '../../events/bonus-event.js';
import { stringifyExact } from '../../http/exact-json.js';
import { route, type MountableRoute, type ResponseDoc, type RouteDoc } from '../../http/route-table.js';
import { replayDeadCredits } from '../../ledger/credit-delivery.js';
import { findCreditsByUser } from '../../ledger/credits.js';
import type { KindAdminDeps } from '../../outbox/descriptor.js';
import { replayRoute } from '../../outbox/replay-route.js';
import { readBody } from '../requests.js';
import { error, notJson } from '../route-docs.js';
import { exactAmount } from './credit-rows.js';

const creditsAnswerSchema = z.strictObject({
  credits: z
    .array(
      z.strictObject({
        credit_id: z.string(),
        kind: z.enum(['bonus', 'funds']),
        user_id: z.string(),
        bonus_code: z.string(),
        amount: z.number().nullable().describe('null for a bonus credit'),
        currency: z.string().nullable().describe('null for a bonus credit'),
        state: z.enum(['pending', 'done', 'failed']),
        delivery: z.enum(['due', 'delivered', 'dead']).nullable().describe('Push to operator.credits.url (sql backend); null when not meant for it'),
        delivery_attempts: z.number().int(),
        delivery_error: z.string().nullable().describe('The last failed push, if any'),
        created_at: z.string().describe('RFC 3339'),
        crm_references: z
          .record(z.string(), z.union([z.string(), z.number()]))
          .describe('The X-Crm-* headers of the credit request, as a bonus event carries them'),
      }),
    )
    .describe('Newest first, at most 100'),
});

const creditReplaySchema = z.strictObject({
  credit_ids: z
    .array(z.string().regex(/^\d{1,15}$/, { error: 'must be a credit_id' }))
    .max(10_000)
    .optional()
    .describe('Absent: every dead credit'),
});
const creditReplayAnswerSchema = z.strictObject({ replayed: z.number().int().describe('Dead credits due again now') });

/** The credits outbox's routes in /admin (its descriptor's, credits.ts): a user's latest credits and the replay of dead ones. */
export function creditAdminRoutes({ db, readDb, now, wake }: KindAdminDeps): MountableRoute[] {
  const refusals: Record<number, ResponseDoc> = {
    401: error('Bearer token missing or not admin.api_key'),
    403: error('The admin API is disabled (admin.api_key is not set)'),
  };
  const doc = (d: Omit<RouteDoc, 'tag' | 'security'>): RouteDoc => ({ ...d, tag: 'operator admin', security: ['adminBearer'] });
  return [
    /** A user's latest credits, newest first, with crm_references typed as a bonus event carries them. */
    route({
      method: 'get',
      path: '/credits',
      doc: doc({
        summary: 'A user’s latest credits with their CRM references',
        parameters: [{ name: 'user_id', in: 'query', required: true, schema: z.string() }],
        responses: {
          200: { description: 'The credits', schema: creditsAnswerSchema },
          400: error('user_id is missing'),
          ...refusals,
        },
      }),
      handlers: [
        async (c) => {
          const userId = c.req.query('user_id');
          if (!userId) return c.json({ error: 'user_id: query parameter is required' }, 400);
          const rows = await findCreditsByUser(readDb, userId, 100);
          const credits = rows.map((r) => ({
            credit_id: String(r.id),
            kind: r.kind,
            user_id: r.user_id,
            bonus_code: r.bonus_code,
            amount: exactAmount(r),
            currency: r.currency,
            state: r.state,
            delivery: r.delivery,
            delivery_attempts: r.delivery_attempts,
            delivery_error: r.delivery_error,
            created_at: new Date(r.created_at).toISOString(),
            crm_references: referencesOfCredit(r),
          }));
          // stringifyExact: the amount and the X-Crm-* ids as written, as the push carries them (credit-outbox.ts).
          return c.body(stringifyExact({ credits }), 200, { 'content-type': 'application/json' });
        },
      ],
    }),
    /** Dead-lettered credits pushed again (all, or the listed credit_ids), with a fresh attempt count. */
    route({
      method: 'post',
      path: '/credits/replay',
      doc: doc({
        summary: 'Push dead-lettered credits to operator.credits.url again',
        request: { schema: creditReplaySchema },
        responses: {
          200: { description: 'How many are due again', schema: creditReplayAnswerSchema },
          400: error('The body is not JSON or a credit_id is not one'),
          ...refusals,
          ...notJson,
        },
      }),
      handlers: [
        replayRoute({
          read: async (c) => {
            const parsed = await readBody(c, creditReplaySchema);
            return parsed.ok ? { ok: true, value: parsed.value } : { ok: false, status: parsed.status, answer: { error: parsed.error } };
          },
          replay: (request) => replayDeadCredits(db, request.credit_ids?.map(Number), now()),
          kind: 'credits',
          wake,
        }),
      ],
    }),
  ];
}
