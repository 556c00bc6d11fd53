/**
 * `type: route` (docs/configuration.md "Providers"): a provider_name that stands for several configured providers, its members. A message
 * goes to one member; when that member provably did not take it (failover.ts) it goes on to the next within the
 * same request, and the ledger records the member that carried it (SendResult.carrier), so its receipts arrive at
 * /dlr/{member} and match there. Members keep their own rate limits and concurrency (each is throttled on its
 * own, src/provider-wrappers/throttle.ts) and their own sender rules (src/provider-wrappers/sender-rules.ts).
 * With `rules`, the send path has chosen the message's rule before its claim (src/provider-wrappers/route-rules.ts,
 * src/sms/routing-verdict.ts) and hands it to `sendChosen`; the members, weights and strategy are read at each send from
 * the configuration and the admin changes in force (routing-controls.ts), so a reload or a suspension applies to the
 * next message without rebuilding the route.
 */
import type { ReceiptParse, SendRequest, SendResult, SmsProvider } from '../../providers/types.js';
import type { FailoverRouteConfig } from '../config/failover-route-config.js';
import type { BreakerSettings } from './circuit-breaker.js';
import { judgeMemberAnswer, orderMembers } from './failover.js';
import type { FailoverHealth } from './breakers.js';
import type { DeliveryChoice } from './delivery-choice.js';
import { ruleKey, type RuleDecision } from './route-rules.js';
import { NO_CONTROLS as NO_STATE, planMembers, type ControlState } from './routing-controls.js';

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
  /** The route's configuration in force (a reload replaces it); the one it was built with when absent. */
  config?: () => FailoverRouteConfig;
  /** The admin changes in force (suspensions, weights, members); none when absent. */
  controls?: () => ControlState;
  /** Orders `strategy: cheapest_delivering` members by price and recent delivery; the configured order when absent. */
  delivery?: Pick<DeliveryChoice, 'order'> | undefined;
}

/** A route: any provider's send (its catch-all members), and the send of a message whose rule was chosen. */
export interface FailoverRoute extends SmsProvider {
  readonly type: 'route';
  sendChosen(choice: ChosenRule, request: SendRequest, signal: AbortSignal): Promise<SendResult>;
}

/** A message's rule, and the route's configuration it was chosen under (a reload since then does not renumber it). */
export type ChosenRule = Pick<RuleDecision, 'rule' | 'name'> & { config?: FailoverRouteConfig };

const CATCH_ALL_CHOICE = { rule: 0, name: undefined };

export function createFailoverRoute(name: string, built: FailoverRouteConfig, deps: FailoverRouteDeps): FailoverRoute {
  const random = deps.random ?? Math.random;
  const configOf = deps.config ?? (() => built);
  const controlsOf = deps.controls;
  deps.health.register(name, [...new Set([...built.members, ...(built.rules ?? []).flatMap((r) => r.members)])], breakerSettings(built));

  async function sendThrough(member: SmsProvider, request: SendRequest, signal: AbortSignal): Promise<SendResult> {
    try {
      return await member.send({ ...request, callbackUrl: deps.callbackUrl(member.name, request.smsId) }, signal);
    } catch (error) {
      // A plugin that throws may have sent it: keep the message with this member, uncertain.
      return { ok: false, kind: 'transient', error: `provider ${member.name} failed: ${(error as Error).message}`, ambiguous: true };
    }
  }

  async function sendChosen(choice: ChosenRule, request: SendRequest, signal: AbortSignal): Promise<SendResult> {
    const config = choice.config ?? configOf();
    const plan = planMembers(name, config, choice, controlsOf?.() ?? NO_STATE);
    if (plan.members.length === 0) {
      // Nothing was handed to any member: the CRM's retry may find one resumed.
      return {
        ok: false,
        kind: 'transient',
        error: `route ${name}: not sent, every member is suspended (${plan.suspended.join(', ')}); retry later`,
        code: 'no_usable_member',
      };
    }
    const passed: string[] = plan.suspended.map((m) => `${m}: suspended`);
    const order =
      plan.strategy === 'cheapest_delivering' && deps.delivery
        ? deps.delivery.order(name, config, ruleKey(choice), plan.members, request.country)
        : orderMembers(plan.members, plan.strategy, plan.weights, random());
    for (const [i, memberName] of order.entries()) {
      const member = deps.members.get(memberName);
      const last = i === order.length - 1;
      // A member named by a change made before a reload that removed its provider: passed over, never guessed.
      if (!member) {
        passed.push(`${memberName}: not a provider of this process`);
        continue;
      }
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
  }

  return {
    name,
    type: 'route',
    send: (request, signal) => sendChosen(CATCH_ALL_CHOICE, request, signal),
    sendChosen,
    parseReceipt(): ReceiptParse {
      return { ok: false, reason: `${name} is a route: receipts go to /dlr/{member}` };
    },
  };
}
