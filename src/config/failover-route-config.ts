/**
 * The configuration of `type: route` (docs/configuration.md "Providers"): a provider_name that stands for several
 * configured providers. Its behaviour is src/provider-wrappers/failover-route.ts; the schema lives here because the
 * configuration composes it with the plugins' own schemas.
 */
import { z } from 'zod';
import { durationSchema } from '../kit/duration.js';
import { routeRuleSchema, validitySchema } from './route-rules-config.js';

const duration = (fallback: string) => durationSchema(fallback);

const providerName = z.string().regex(/^[a-z0-9_-]+$/i, 'provider names are letters, digits, - and _');

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
  strategy: z
    .enum(['failover', 'weighted'])
    .default('failover')
    .describe('`failover`: members in order; `weighted`: the first member drawn by `weights`, then the others by weight.'),
  weights: z
    .record(providerName, z.number().min(0))
    .optional()
    .describe("`weighted`: each member's share of first attempts (1 each when unset; 0: only a fallback)."),
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
