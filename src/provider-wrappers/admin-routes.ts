/**
 * /admin/routing: the routes' rules and the admin changes in force, their audit, and the change itself (suspend or
 * resume a provider or a route's member, a route's or rule's weights, a rule's members). Guarded with the rest of
 * /admin (src/auth/admin.ts); the console's routing page makes the same changes (src/console/routing-page.ts).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { readJsonBody } from '../http/json-body.js';
import { route, type MountableRoute, type ResponseDoc } from '../http/route-table.js';
import { deliveryViewsJson } from './delivery-choice.js';
import type { Routing } from './routing.js';

/** The actor of a change made with the admin key: a hash of the key, so a rotation shows in the audit. */
export function adminKeyActor(key: string | undefined): string {
  return `admin-key:${createHash('sha256')
    .update(key ?? '')
    .digest('hex')
    .slice(0, 8)}`;
}

const adminRefusals: Record<number, ResponseDoc> = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'admin.api_key is not set', schema: errorAnswerSchema },
};

export const controlRequestSchema = z
  .strictObject({
    action: z.enum(['suspend', 'resume', 'set_weights', 'clear_weights', 'set_members', 'clear_members']),
    provider: z.string().optional().describe('suspend / resume: a provider (not a route), for every message and route'),
    route: z.string().optional().describe('A `type: route` provider'),
    member: z.string().optional().describe('suspend / resume: one member of `route`, for that route only'),
    rule: z
      .union([z.string(), z.number().int()])
      .optional()
      .describe("A rule of `route`: its number (1 first), its name, or `catch-all` (the route's own members); weights without it are the route's"),
    weights: z.record(z.string(), z.number().min(0)).optional().describe('set_weights: member → weight'),
    members: z.array(z.string()).optional().describe('set_members: providers, in failover order'),
  })
  .describe('One change; it lasts across restarts until cleared (resume, clear_weights, clear_members)');

const deliveryMemberSchema = z.strictObject({
  member: z.string(),
  price: z.string().nullable().describe("One segment's price to the country (costs.rates), decimal text; null: no rate, ranked last"),
  currency: z.string().nullable(),
  sent: z.number().int().describe('Messages the member took, created in the window'),
  judged: z.number().int().describe('Of those, with a final status or without a receipt past the deadline'),
  on_time: z.number().int().describe('Of those, delivered within the deadline by a receipt'),
  share: z.number().nullable().describe('on_time / judged; null with none judged'),
  counted: z.boolean().describe('judged reached min_sample: the share counts'),
  state: z.enum(['in', 'stepped_down']),
  since: z.number().int().nullable().describe('stepped_down: epoch ms it stepped down'),
  why: z.string(),
});
const deliverySchema = z
  .strictObject({
    route: z.string(),
    settings: z.strictObject({
      window_ms: z.number().int(),
      deadline_ms: z.number().int(),
      floor: z.number(),
      min_sample: z.number().int(),
      recover_margin: z.number(),
      cool_down_ms: z.number().int(),
    }),
    figures_at: z.number().int().nullable().describe('When this instance last read the figures from the ledger'),
    countries: z.array(
      z.strictObject({
        country: z.string(),
        members: z.array(deliveryMemberSchema).describe('Each member now, as the next message would see it'),
        last_decision: z
          .strictObject({
            at: z.number().int(),
            rule: z.string(),
            order: z.array(z.string()),
            reason: z.enum(['cheapest', 'cheaper_stepped_down', 'all_stepped_down', 'no_price']),
            members: z.array(deliveryMemberSchema).describe('The figures the decision used'),
          })
          .nullable(),
      }),
    ),
  })
  .describe("A `strategy: cheapest_delivering` route on this instance: per country, its members' prices and recent delivery, and its last decision");

const controlSchema = z.strictObject({ target: z.string(), value: z.unknown(), set_by: z.string(), set_at: z.number().int() });
const auditSchema = z.strictObject({
  id: z.number().int(),
  at: z.number().int().describe('epoch milliseconds'),
  actor: z.string().describe('`admin-key:<hash>` or `console:<session>`'),
  target: z.string(),
  from: z.unknown().describe('The value in force before; null when none was'),
  to: z.unknown().describe('The value after; null when cleared'),
});

export interface RoutingAdminDeps {
  routing: Routing;
  adminKey: string | undefined;
}

export function routingAdminRoutes(deps: RoutingAdminDeps): MountableRoute[] {
  const { routing } = deps;
  return [
    route({
      method: 'get',
      path: '/routing',
      doc: {
        tag: 'admin',
        summary: "The routes and their rules in force, the admin changes in force, the last 100 changes, and this instance's refusals by country",
        security: ['adminBearer'],
        responses: {
          200: {
            description: 'Routing now',
            schema: z.strictObject({
              routes: z.record(z.string(), z.unknown()),
              countries: z.array(z.string()).nullable(),
              brands: z.record(z.string(), z.unknown()),
              controls: z.array(controlSchema),
              audit: z.array(auditSchema),
              refusals: z.array(z.strictObject({ country: z.string(), code: z.string(), count: z.number() })),
              delivery: z.array(deliverySchema),
            }),
          },
          ...adminRefusals,
        },
      },
      handlers: [
        async (c) => {
          const snapshot = routing.snapshot();
          const [controls, audit, refusals] = await Promise.all([routing.storedControls(), routing.audit(100), routing.refusalCounts()]);
          return c.json({
            routes: Object.fromEntries(snapshot.routes),
            countries: snapshot.section.countries ?? null,
            brands: snapshot.section.brands,
            controls: controls.map((r) => ({ target: r.target, value: JSON.parse(r.value) as unknown, set_by: r.set_by, set_at: r.set_at })),
            audit: audit.map((a) => ({
              id: a.id,
              at: a.at,
              actor: a.actor,
              target: a.target,
              from: a.from_value === null ? null : (JSON.parse(a.from_value) as unknown),
              to: a.to_value === null ? null : (JSON.parse(a.to_value) as unknown),
            })),
            refusals,
            delivery: deliveryViewsJson(routing.delivery.view(snapshot.routes)),
          });
        },
      ],
    }),
    route({
      method: 'post',
      path: '/routing/controls',
      doc: {
        tag: 'admin',
        summary: "Change routing on every instance without a restart: suspend or resume, weights, a rule's members",
        description: 'Stored in the ledger with its audit; this instance applies it at once, the others within routing.control_poll.',
        security: ['adminBearer'],
        request: { schema: controlRequestSchema },
        responses: {
          200: {
            description: 'In force (unchanged: it already was)',
            schema: z.strictObject({ target: z.string(), from: z.unknown(), to: z.unknown(), unchanged: z.boolean().optional() }),
          },
          400: {
            description: 'The change names no configured provider, route, member or rule, or a field is not valid (named, with a code)',
            schema: z.strictObject({
              error: z.string(),
              code: z.union([z.enum(['invalid_control', 'unknown_route', 'unknown_provider', 'unknown_rule', 'not_weighted']), z.number().int()]).optional(),
            }),
          },
          ...adminRefusals,
        },
      },
      handlers: [
        async (c) => {
          // A key every object inherits names no control: refused by name rather than handed to the change's reader.
          const body = await readJsonBody(c, { refusePrototypeKeys: true });
          if (!body.ok) return c.json({ error: body.error, code: body.status }, body.status);
          const result = await routing.change(body.value, adminKeyActor(deps.adminKey));
          if (!result.ok) return c.json({ error: result.error, code: result.code }, 400);
          return c.json({ target: result.target, from: result.before, to: result.after, ...(result.unchanged ? { unchanged: true } : {}) }, 200);
        },
      ],
    }),
  ];
}
