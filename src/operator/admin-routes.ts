/**
 * Operator-side admin API under /admin (Bearer admin.api_key): loading player data into the sql backend, and reading
 * back a user's credits with the CRM references a bonus event needs.
 */
import type { MiddlewareHandler } from 'hono';
import { route, type MountableRoute, type ResponseDoc, type RouteDoc } from '../http/route-table.js';
import { consentsAnswerSchema } from '../crm/shapes.js';
import { error, notJson, userParam } from './routes.js';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { findCreditsByUser } from '../ledger/credits.js';
import { replayDeadCredits } from '../ledger/credit-delivery.js';
import { decideUserChange } from '../events/user-changes.js';
import { originOfRecord, userConsentsEvent } from '../crm/user-events.js';
import { enqueueEvent } from '../ledger/events.js';
import { findConsents, findUser, replaceBonuses, userExists, writeConsents } from '../ledger/operator-data.js';
import type { Database } from '../ledger/schema.js';
import type { OperatorBackend } from './backend.js';
import { referencesOfCredit } from '../events/bonus-event.js';
import { stringifyExact } from '../http/exact-json.js';
import { exactAmount } from './credit-rows.js';
import { consentRowOf } from './consent-rows.js';
import { saveLoadedUsers, toLoadedUser } from './load-players.js';
import { findHeldSmsOptOuts, keepHeldSmsOptOut, restoreHeldSmsOptOuts } from './sms-opt-out-holds.js';
import { adminBonusesSchema, adminConsentsSchema, adminUserSchema, readBody } from './requests.js';
import { inTransaction } from '../ledger/engine/db.js';
import { replayRoute } from '../outbox/replay-route.js';
import type { Wake } from '../outbox/wake.js';

/** The answers of these routes, for the OpenAPI document. */
const userLoadedAnswerSchema = z.strictObject({ user_id: z.string(), created: z.boolean().describe('true (201) when the user was new') });
const bonusesLoadedAnswerSchema = z.strictObject({ count: z.number().int().describe('Bonuses in the list now') });
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

export interface OperatorAdminRouteDeps {
  db: Kysely<Database>;
  /** Where the read-only views read (the ledger's read connection, src/ledger/engine/db.ts); `db` when absent. */
  readDb?: Kysely<Database>;
  backend: OperatorBackend;
  now: () => number;
  /** Wakes the credit outbox after dead credits were replayed. */
  wake?: Wake;
}

/** The operator area's table of the /admin sub-app (src/auth/admin.ts guards it). */
export function operatorAdminRoutes({ db, readDb = db, backend, now, wake }: OperatorAdminRouteDeps): MountableRoute[] {
  // With the http backend the CRM's reads go to the operator platform, so data loaded here would never be seen.
  const sqlOnly: MiddlewareHandler = async (c, next) => {
    if (backend.name !== 'sql') return c.json({ error: 'operator.backend is http: player data is read from the operator platform, not loaded here' }, 409);
    await next();
  };
  const refusals: Record<number, ResponseDoc> = {
    401: error('Bearer token missing or not admin.api_key'),
    403: error('The admin API is disabled (admin.api_key is not set)'),
  };
  // With the http backend the loading routes refuse: the CRM's reads would never see what they load.
  const sqlOnlyDoc: Record<number, ResponseDoc> = backend.name === 'http' ? { 409: error('operator.backend is http: player data is not loaded here') } : {};
  const doc = (d: Omit<RouteDoc, 'tag' | 'security'>): RouteDoc => ({ ...d, tag: 'operator admin', security: ['adminBearer'] });

  return [
    route({
      method: 'put',
      path: '/users/:userid',
      doc: doc({
        summary: 'Create or replace a user (sql backend)',
        parameters: [userParam],
        request: { schema: adminUserSchema },
        responses: {
          200: { description: 'Replaced', schema: userLoadedAnswerSchema },
          201: { description: 'Created', schema: userLoadedAnswerSchema },
          400: error('The body is not JSON or not a valid user, or its user_id differs from the path'),
          ...refusals,
          ...sqlOnlyDoc,
          ...notJson,
        },
      }),
      handlers: [
        sqlOnly,
        async (c) => {
          const userId = c.req.param('userid');
          const parsed = await readBody(c, adminUserSchema);
          if (!parsed.ok) return c.json({ error: parsed.error }, parsed.status);
          if (parsed.value.user_id !== undefined && parsed.value.user_id !== userId) {
            return c.json({ error: `user_id: "${parsed.value.user_id}" differs from the path's "${userId}"` }, 400);
          }
          const at = now();
          // Read before the transaction, which must begin with its write (see upsertUsers); a race only blurs 201 vs 200.
          const created = !(await userExists(db, userId));
          await saveLoadedUsers(db, [toLoadedUser({ ...parsed.value, user_id: userId }, at)], at);
          return c.json({ user_id: userId, created }, created ? 201 : 200);
        },
      ],
    }),
    route({
      method: 'put',
      path: '/users/:userid/consents',
      doc: doc({
        summary: 'Replace a user’s consents (types not listed are opted out)',
        parameters: [userParam],
        request: { schema: adminConsentsSchema },
        responses: {
          200: { description: 'The consents now', schema: consentsAnswerSchema },
          400: error('The body is not JSON or not a valid consents list'),
          ...refusals,
          404: error('No such user'),
          ...sqlOnlyDoc,
          ...notJson,
        },
      }),
      handlers: [
        sqlOnly,
        async (c) => {
          const userId = c.req.param('userid');
          const parsed = await readBody(c, adminConsentsSchema);
          if (!parsed.ok) return c.json({ error: parsed.error }, parsed.status);
          const rows = new Map(parsed.value.consents.map((e) => [e.type, consentRowOf(userId, e)]));
          // PUT replaces the set: a type not listed is opted out, like a type never set. A change writes its User
          // Consents event in the same transaction; the same set again changes nothing and sends nothing.
          const found = await inTransaction(db, async (trx) => {
            const user = await findUser(trx, userId);
            if (!user) return false;
            const at = now();
            // A player's own sms opt-out newer than consents_updated_at (or with none given) stays (sms-opt-out-holds.ts).
            const held = await findHeldSmsOptOuts(trx, [{ userId, asOf: parsed.value.consents_updated_at }]);
            const consents = keepHeldSmsOptOut(userId, [...rows.values()], held);
            const change = decideUserChange(user, user, await findConsents(trx, userId), consents);
            if (change.writeConsents) {
              await writeConsents(trx, consents, at, [userId]);
              await restoreHeldSmsOptOuts(trx, [userId], held);
              await enqueueEvent(trx, userConsentsEvent(userId, originOfRecord(user.record_json), at), at);
            }
            return true;
          });
          if (!found) return c.json({ error: `user_id: no user "${userId}" (PUT /admin/users/${userId} first)`, code: 404 }, 404);
          const current = await backend.userConsents(userId);
          return c.json(current.ok ? current.value : { error: current.error }, 200);
        },
      ],
    }),
    route({
      method: 'put',
      path: '/bonuses',
      doc: doc({
        summary: 'Replace the bonus list',
        request: { schema: adminBonusesSchema },
        responses: {
          200: { description: 'Stored', schema: bonusesLoadedAnswerSchema },
          400: error('The body is not JSON or not a valid bonus list (a value listed twice, say)'),
          ...refusals,
          ...sqlOnlyDoc,
          ...notJson,
        },
      }),
      handlers: [
        sqlOnly,
        async (c) => {
          const parsed = await readBody(c, adminBonusesSchema);
          if (!parsed.ok) return c.json({ error: parsed.error }, parsed.status);
          await inTransaction(db, (trx) => replaceBonuses(trx, parsed.value));
          return c.json({ count: parsed.value.length }, 200);
        },
      ],
    }),
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
