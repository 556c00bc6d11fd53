/**
 * The configuration of `type: route` (docs/configuration.md "Providers"): a provider_name that stands for several
 * configured providers. Its behaviour is src/provider-wrappers/failover-route.ts; the schema lives here because the
 * configuration composes it with the plugins' own schemas.
 */
import { z } from 'zod';
import { durationSchema } from '../kit/duration.js';

const duration = (fallback: string) => durationSchema(fallback);

const providerName = z.string().regex(/^[a-z0-9_-]+$/i, 'provider names are letters, digits, - and _');

export const routeConfigSchema = z.strictObject({
  type: z.literal('route'),
  aliases: z.array(z.string().min(1)).default([]),
  /** Config keys of other (non-route) providers, in failover order. */
  members: z.array(providerName).min(1),
  strategy: z.enum(['failover', 'weighted']).default('failover'),
  /** `weighted`: each member's share of first attempts (default 1; 0 = fallback only). */
  weights: z.record(providerName, z.number().min(0)).optional(),
  breaker: z
    .strictObject({
      /** Consecutive failed sends (refused, throttled, 5xx, timed out) that open a member's circuit. */
      failures: z.number().int().positive().default(5),
      /** How long an open circuit keeps traffic off the member before one probe is let through. */
      open_for: duration('30s'),
      /** Window of receipts over which the delivery rate is judged. */
      window: duration('10m'),
      /** Final receipts the window needs before the rate counts. */
      min_receipts: z.number().int().positive().default(20),
      /** Delivered share below which the circuit opens; 0 turns the check off. */
      min_delivery_rate: z.number().min(0).max(1).default(0.1),
    })
    .prefault({}),
});
export type RouteConfig = z.infer<typeof routeConfigSchema>;

/**
 * Cross-provider checks the route schema cannot make on its own: members exist, are not routes themselves, are
 * named once, and weights name only members.
 */
export function checkRouteMembers(providers: Readonly<Record<string, { type: string }>>, issue: (path: Array<string | number>, message: string) => void): void {
  for (const [name, p] of Object.entries(providers)) {
    if (p.type !== 'route') continue;
    const route = p as RouteConfig;
    const seen = new Set<string>();
    route.members.forEach((member, i) => {
      if (!Object.hasOwn(providers, member)) issue(['providers', name, 'members', i], `"${member}" is not a configured provider`);
      else if (providers[member]!.type === 'route') issue(['providers', name, 'members', i], `"${member}" is a route; members must be providers`);
      if (seen.has(member)) issue(['providers', name, 'members', i], `"${member}" is listed twice`);
      seen.add(member);
    });
    for (const key of Object.keys(route.weights ?? {})) {
      if (!seen.has(key)) issue(['providers', name, 'weights', key], `"${key}" is not a member of this route`);
    }
  }
}
