/**
 * `type: route` (docs/configuration.md "Providers"): a provider_name that stands for several configured providers, its members. A message
 * goes to one member; when that member provably did not take it (failover.ts) it goes on to the next within the
 * same request, and the ledger records the member that carried it (SendResult.carrier), so its receipts arrive at
 * /dlr/{member} and match there. Members keep their own rate limits and concurrency (each is throttled on its
 * own, src/provider-wrappers/throttle.ts) and their own sender rules (src/provider-wrappers/sender-rules.ts).
 */
import type { ReceiptParse, SendRequest, SendResult, SmsProvider } from '../../providers/types.js';
import type { FailoverRouteConfig } from '../config/failover-route-config.js';
import type { BreakerSettings } from './circuit-breaker.js';
import { judgeMemberAnswer, orderMembers } from './failover.js';
import type { FailoverHealth } from './breakers.js';

export function breakerSettings(config: FailoverRouteConfig): BreakerSettings {
  const b = config.breaker;
  return { failures: b.failures, openForMs: b.open_for, windowMs: b.window, minReceipts: b.min_receipts, minDeliveryRate: b.min_delivery_rate };
}

export interface FailoverRouteDeps {
  members: ReadonlyMap<string, SmsProvider>;
  health: FailoverHealth;
  /** The receipt URL for a message sent through `member` (the gateway's, as dispatch builds it). */
  callbackUrl(member: string, smsId: string): string;
  random?: () => number;
}

export function createFailoverRoute(name: string, config: FailoverRouteConfig, deps: FailoverRouteDeps): SmsProvider {
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
