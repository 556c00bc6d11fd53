/**
 * The configuration of `type: route` (docs/configuration.md "Providers"): a provider_name that stands for several
 * configured providers. Its behaviour is src/provider-wrappers/failover-route.ts; the schema lives here because the
 * configuration composes it with the plugins' own schemas.
 */
import { z } from 'zod';
import { durationSchema } from '../kit/duration.js';
import { routeRuleSchema, routeStrategySchema, validitySchema } from './route-rules-config.js';

const duration = (fallback: string) => durationSchema(fallback);

const providerName = z.string().regex(/^[a-z0-9_-]+$/i, 'provider names are letters, digits, - and _');

/**
 * `strategy: cheapest_delivering` (docs/routing.md "Cheapest member that delivers"): how a member's recent delivery is
 * judged, and when it steps down and comes back. Read by src/provider-wrappers/cheapest-delivering.ts.
 */
export const deliverySettingsSchema = z
  .strictObject({
    window: durationSchema('15m', { positive: true }).describe('The recent messages judged: those of each member and country created this long ago or since.'),
    deadline: durationSchema('5m', { positive: true }).describe(
      'A message counts as delivered on time when its delivered receipt came this soon after the member took it; one still without a receipt past it counts as late.',
    ),
    floor: z
      .number()
      .min(0)
      .max(1)
      .default(0.85)
      .describe('The share of judged messages delivered on time below which a member steps down (in that country) behind the members above it.'),
    min_sample: z
      .number()
      .int()
      .positive()
      .default(20)
      .describe('Judged messages a member needs in the window before its share counts; with fewer it is taken as delivering.'),
    recover_margin: z
      .number()
      .min(0)
      .max(1)
      .default(0.05)
      .describe('A stepped-down member comes back when its share reaches floor + recover_margin (or when it has too few judged messages left in the window).'),
    cool_down: durationSchema('5m').describe('The least time a member stays stepped down before it may come back.'),
  })
  .prefault({})
  .describe('`strategy: cheapest_delivering`: the recent delivery figures and the floor a member must keep (docs/routing.md).');

export const failoverRouteConfigSchema = z.strictObject({
  type: z.literal('route'),
  aliases: z.array(z.string().min(1)).default([]).describe('Other provider_name values that pick this route (any case).'),
  members: z
    .array(providerName)
    .min(1)
    .describe('Names of other (non-route) providers, in failover order; with `rules`, the members of a message no rule matches (the catch-all).'),
  rules: z
    .array(routeRuleSchema)
    .optional()
    .describe(
      'Ordered rules choosing the members by country, prefix, brand, provider_name, sender, number type and local time; the first that matches wins (docs/routing.md).',
    ),
  validity: validitySchema.optional(),
  strategy: routeStrategySchema
    .default('failover')
    .describe(
      '`failover`: members in order; `weighted`: the first member drawn by `weights`, then the others by weight; `cheapest_delivering`: per country, the cheapest member (costs.rates) whose recent delivery is above `recent_delivery.floor`.',
    ),
  weights: z
    .record(providerName, z.number().min(0))
    .optional()
    .describe("`weighted`: each member's share of first attempts (1 each when unset; 0: only a fallback)."),
  recent_delivery: deliverySettingsSchema,
  breaker: z
    .strictObject({
      failures: z.number().int().positive().default(5).describe("Consecutive failed sends (refused, throttled, 5xx, timed out) that open a member's circuit."),
      open_for: duration('30s').describe(
        'How long an open circuit keeps traffic off the member; then one probe at a time is let through, and its answer closes or reopens it.',
      ),
      window: duration('10m').describe('The window of receipts over which the delivery rate is judged.'),
      min_receipts: z.number().int().positive().default(20).describe('Final receipts the window needs before the rate counts.'),
      min_delivery_rate: z.number().min(0).max(1).default(0.1).describe('Delivered share below which the circuit opens; 0 turns the check off.'),
    })
    .prefault({})
    .describe('A circuit breaker per member: it keeps traffic off a member that fails or stops delivering.'),
});
export type FailoverRouteConfig = z.infer<typeof failoverRouteConfigSchema>;

/**
 * Cross-provider checks the route schema cannot make on its own: members exist, are not routes themselves, are
 * named once, and weights name only members.
 */
export function checkFailoverRouteMembers(
  providers: Readonly<Record<string, { type: string }>>,
  issue: (path: Array<string | number>, message: string) => void,
): void {
  for (const [name, p] of Object.entries(providers)) {
    if (p.type !== 'route') continue;
    const route = p as FailoverRouteConfig;
    const seen = new Set<string>();
    route.members.forEach((member, i) => {
      if (!Object.hasOwn(providers, member)) issue(['providers', name, 'members', i], `"${member}" is not a configured provider`);
      else if (providers[member]!.type === 'route') issue(['providers', name, 'members', i], `"${member}" is a route; members must be providers`);
      if (seen.has(member)) issue(['providers', name, 'members', i], `"${member}" is listed twice`);
      seen.add(member);
    });
    // With rules, route-level weights may name any rule's member (a rule without weights of its own takes them).
    const members = new Set([...seen, ...(route.rules ?? []).flatMap((r) => r.members)]);
    for (const key of Object.keys(route.weights ?? {})) {
      if (!members.has(key)) issue(['providers', name, 'weights', key], `"${key}" is not a member of this route`);
    }
  }
}

/**
 * Checks of `strategy: cheapest_delivering`: prices to compare (its members' costs.rates, in one currency, since no
 * exchange rate is known), a deadline inside the window, and a recovery the figures can reach.
 */
export function checkCheapestDelivering(
  providers: Readonly<Record<string, { type: string }>>,
  rates: Readonly<Record<string, { currency: string }>>,
  issue: (path: Array<string | number>, message: string) => void,
): void {
  for (const [name, p] of Object.entries(providers)) {
    if (p.type !== 'route') continue;
    const route = p as FailoverRouteConfig;
    const uses: Array<{ path: Array<string | number>; members: readonly string[] }> = [];
    if (route.strategy === 'cheapest_delivering') uses.push({ path: ['providers', name, 'strategy'], members: route.members });
    (route.rules ?? []).forEach((rule, i) => {
      if ((rule.strategy ?? route.strategy) === 'cheapest_delivering')
        uses.push({ path: ['providers', name, 'rules', i, rule.strategy ? 'strategy' : 'members'], members: rule.members });
    });
    if (uses.length === 0) continue;
    const d = route.recent_delivery;
    if (d.deadline >= d.window)
      issue(['providers', name, 'recent_delivery', 'deadline'], 'must be shorter than recent_delivery.window: no message of the window could be judged late');
    if (d.floor + d.recover_margin > 1)
      issue(
        ['providers', name, 'recent_delivery', 'recover_margin'],
        `floor ${d.floor} + recover_margin ${d.recover_margin} is above 1: a stepped-down member could never come back by its figures`,
      );
    for (const use of uses) {
      const priced = use.members.filter((m) => Object.hasOwn(rates, m));
      if (priced.length === 0) {
        issue(use.path, `cheapest_delivering needs prices: none of ${use.members.join(', ')} has a rate table in costs.rates`);
        continue;
      }
      const currencies = [...new Set(priced.map((m) => rates[m]!.currency))];
      if (currencies.length > 1)
        issue(
          use.path,
          `cheapest_delivering compares prices in one currency: ${priced.map((m) => `${m} ${rates[m]!.currency}`).join(', ')} (costs.rates); no exchange rate is known`,
        );
    }
  }
}
