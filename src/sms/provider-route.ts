/**
 * `type: route` (README "Providers"): a provider_name that stands for several configured providers, its members. A message
 * goes to one member; when that member provably did not take it (failover.ts) it goes on to the next within the
 * same request, and the ledger records the member that carried it (SendResult.carrier), so its receipts arrive at
 * /dlr/{member} and match there. Members keep their own rate limits and concurrency (each is throttled on its
 * own, src/sms/throttle.ts) and their own sender rules (src/sms/sender-rules.ts).
 */
import { z } from 'zod';
import type { ReceiptParse, SendRequest, SendResult, SmsProvider } from '../../providers/types.js';
import { durationSchema } from '../config/duration.js';
import type { BreakerSettings } from './circuit-breaker.js';
import { judgeMemberAnswer, orderMembers } from './failover.js';
import type { RouteHealth } from './route-health.js';

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

export function breakerSettings(config: RouteConfig): BreakerSettings {
  const b = config.breaker;
  return { failures: b.failures, openForMs: b.open_for, windowMs: b.window, minReceipts: b.min_receipts, minDeliveryRate: b.min_delivery_rate };
}

export interface RouteDeps {
  members: ReadonlyMap<string, SmsProvider>;
  health: RouteHealth;
  /** The receipt URL for a message sent through `member` (the gateway's, as dispatch builds it). */
  callbackUrl(member: string, smsId: string): string;
  random?: () => number;
}

export function createRoute(name: string, config: RouteConfig, deps: RouteDeps): SmsProvider {
  const weights = new Map(Object.entries(config.weights ?? {}));
  const random = deps.random ?? Math.random;
  deps.health.register(name, config.members, breakerSettings(config));

  async function sendThrough(member: SmsProvider, request: SendRequest, signal: AbortSignal): Promise<SendResult> {
    try {
      return await member.send({ ...request, callbackUrl: deps.callbackUrl(member.name, request.smsId) }, signal);
    } catch (error) {
      // A plugin that throws may have sent it: keep the message with this member, uncertain.
      return { ok: false, kind: 'transient', error: `provider ${member.name} failed: ${(error as Error).message}`, ambiguous: true };
    }
  }

  return {
    name,
    type: 'route',
    async send(request, signal) {
      const passed: string[] = [];
      const order = orderMembers(config.members, config.strategy, weights, random());
      for (const [i, memberName] of order.entries()) {
        const member = deps.members.get(memberName)!;
        const last = i === order.length - 1;
        if (!deps.health.admit(name, memberName)) {
          passed.push(`${memberName}: circuit open`);
          if (!last) deps.health.failedOver(name, memberName);
          continue;
        }
        // A member at its own rate or concurrency limit passes the message on at once; only the last one waits.
        const answer = await sendThrough(member, last ? request : { ...request, waitForCapacity: false }, signal);
        const verdict = judgeMemberAnswer(answer, signal.aborted);
        deps.health.record(name, memberName, verdict.breaker);
        if (!verdict.tryNext) return { ...answer, carrier: memberName };
        passed.push(answer.ok ? memberName : answer.error);
        if (!last) deps.health.failedOver(name, memberName);
      }
      // Nothing was handed to any member: free to send again at once.
      return { ok: false, kind: 'transient', error: `route ${name}: not sent, no member took it (${passed.join('; ')})`, code: 'route_exhausted' };
    },
    parseReceipt(): ReceiptParse {
      return { ok: false, reason: `${name} is a route: receipts go to /dlr/{member}` };
    },
  };
}
