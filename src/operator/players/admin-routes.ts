/**
 * Operator-side admin API under /admin (Bearer admin.api_key): loading player data into the sql backend (users, their
 * consents, the bonus list). A user's credits and their replay are the credits outbox's (../credits/admin-routes.ts).
 */
import type { MiddlewareHandler } from 'hono';
import { route, type MountableRoute, type ResponseDoc, type RouteDoc } from '../../http/route-table.js';
import { consentsAnswerSchema } from '../../crm/shapes.js';
import { error, notJson, userParam } from '../route-docs.js';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { decideUserChange } from '../../events/user-changes.js';
import { originOfRecord, userConsentsEvent } from '../../crm/user-events.js';
import { enqueueEvent } from '../../ledger/events.js';
import { findConsents, findUser, replaceBonuses, userExists, writeConsents } from '../../ledger/operator-data.js';
import type { Database } from '../../ledger/schema.js';
import type { OperatorBackend } from '../backend.js';
import { consentRowOf } from './consent-rows.js';
import { saveLoadedUsers, toLoadedUser } from './load-players.js';
import { findHeldSmsOptOuts, keepHeldSmsOptOut, restoreHeldSmsOptOuts } from './sms-opt-out-holds.js';
import { adminBonusesSchema, adminConsentsSchema, adminUserSchema, readBody } from '../requests.js';
import { inTransaction } from '../../ledger/engine/db.js';

/** The answers of these routes, for the OpenAPI document. */
const userLoadedAnswerSchema = z.strictObject({ user_id: z.string(), created: z.boolean().describe('true (201) when the user was new') });
const bonusesLoadedAnswerSchema = z.strictObject({ count: z.number().int().describe('Bonuses in the list now') });
export interface PlayerAdminRouteDeps {
  db: Kysely<Database>;
  backend: OperatorBackend;
  now: () => number;
}

/** The player data's table of the /admin sub-app (src/auth/admin.ts guards it). */
export function playerAdminRoutes({ db, backend, now }: PlayerAdminRouteDeps): MountableRoute[] {
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
  ];
}
