/**
 * Where a message may go and which rule of its route takes it (docs/routing.md), decided after its recipient is read
 * for good (player-records.ts) and before its claim, so the claim stores the decision with the row: a refusal
 * (`country_not_allowed`, `number_type_not_allowed`: stored rejected, 400 with its code, nothing sent) or the rule
 * (shown on the message as "route BR-promo, rule 2, member sinch"). Pure but for the number's type, asked of
 * libphonenumber-js only where a country list or a rule on number types needs it.
 */
import type { SmsProvider } from '../../providers/types.js';
import type { FailoverRouteConfig } from '../config/failover-route-config.js';
import { mainCountryOfNumber, numberTypeOf } from '../kit/phone-number.js';
import type { LocalTime } from '../kit/time-zones.js';
import { chooseRule, type MessageFacts } from '../provider-wrappers/route-rules.js';
import type { RoutingSnapshot } from '../provider-wrappers/routing.js';
import type { PreparedMessage } from './prepare.js';

export type RoutingRefusalCode = 'country_not_allowed' | 'number_type_not_allowed';
export const ROUTING_REFUSAL_CODES: readonly RoutingRefusalCode[] = ['country_not_allowed', 'number_type_not_allowed'];

/** The rule of a route that a message takes, and what it asks of the send. */
export interface RouteChoice {
  route: string;
  /** 1-based position in the route's rules; 0 for its own members (the catch-all). */
  rule: number;
  name: string | undefined;
  /** Minutes the provider keeps trying (the rule's `validity`, else the route's). */
  validity: number | undefined;
  /** The recipient's local time when the rule was chosen, if a rule read it (null: no zone known for the number). */
  local: LocalTime | null;
  /** The route's configuration the rule was chosen under: its send reads the rule there, whatever a reload did since. */
  config: FailoverRouteConfig;
}

export type RoutingVerdict =
  | { ok: true; choice: RouteChoice | undefined }
  | { ok: false; code: RoutingRefusalCode; error: string; country: string | undefined };

/** Whether a route's rules look at the number's type (then it is asked even without a country list). */
const readsTypes = (snapshot: RoutingSnapshot, provider: Pick<SmsProvider, 'name' | 'type'>) =>
  provider.type === 'route' && (snapshot.routes.get(provider.name)?.rules ?? []).some((r) => r.match.number_types !== undefined);

/** Pure: the routing verdict of a message with these facts, sent to `provider`, under the routing in force. */
export function decideRoutingVerdict(facts: MessageFacts, provider: Pick<SmsProvider, 'name' | 'type'>, snapshot: RoutingSnapshot): RoutingVerdict {
  const { section } = snapshot;
  const brandList = facts.brand !== null && Object.hasOwn(section.brands, facts.brand) ? section.brands[facts.brand]!.countries : undefined;
  const allowed = brandList ?? section.countries;
  if (allowed && (facts.country === undefined || !allowed.includes(facts.country))) {
    const key = brandList ? `routing.brands.${facts.brand}.countries` : 'routing.countries';
    const place = facts.country ? `lies in ${facts.country}` : 'lies in no known country';
    return {
      ok: false,
      code: 'country_not_allowed',
      country: facts.country,
      error: `recipient: ${place}, not a country ${brandList ? `brand ${facts.brand}` : 'this gateway'} may send to (${key}: ${allowed.join(', ')})`,
    };
  }
  const route = provider.type === 'route' ? snapshot.routes.get(provider.name) : undefined;
  const decision = route ? chooseRule(route.rules, facts, snapshot.calendar) : undefined;
  if (snapshot.guarded && facts.numberType !== undefined && !(section.number_types as readonly string[]).includes(facts.numberType)) {
    const rule = decision && decision.rule > 0 ? route!.rules![decision.rule - 1] : undefined;
    if (!rule?.match.number_types?.includes(facts.numberType as never))
      return {
        ok: false,
        code: 'number_type_not_allowed',
        country: facts.country,
        error: `recipient: a ${facts.numberType.toLowerCase().replaceAll('_', ' ')} number, not a type sent without a rule that lists it (routing.number_types: ${section.number_types.join(', ')})`,
      };
  }
  if (!route || !decision) return { ok: true, choice: undefined };
  const rule = decision.rule > 0 ? route.rules![decision.rule - 1] : undefined;
  return {
    ok: true,
    choice: {
      route: provider.name,
      rule: decision.rule,
      name: decision.name,
      validity: rule?.validity ?? route.validity,
      local: decision.local,
      config: route,
    },
  };
}

/**
 * The facts a rule reads from a prepared message, judged at `at`. A number the metadata places in no country (a range
 * newer than it) is taken for its calling code's main country, so a country list neither refuses nor lets through
 * every such number.
 */
export function factsOf(message: PreparedMessage, at: number, numberType: string | undefined): MessageFacts {
  return {
    e164: message.recipient,
    country: message.country ?? mainCountryOfNumber(message.recipient),
    brand: message.brand,
    providerName: message.providerName,
    sender: message.sender,
    numberType,
    at,
  };
}

/**
 * Each message with its routing verdict (a message whose recipient is already refused keeps that refusal), and
 * the refusals counted by country. The same array when no message goes to a route and no list is configured.
 */
/** Whether any of `messages` has a routing verdict to decide: a country list is set, or one goes to a route. */
export function routingApplies(messages: readonly PreparedMessage[], snapshot: RoutingSnapshot): boolean {
  return snapshot.guarded || messages.some((m) => m.provider.type === 'route');
}

export function withRoutingVerdicts(
  messages: PreparedMessage[],
  snapshot: RoutingSnapshot,
  at: number,
  countRefusal: (country: string | undefined, code: string) => void,
): PreparedMessage[] {
  if (!routingApplies(messages, snapshot)) return messages;
  return messages.map((m) => {
    if (m.reading?.outcome === 'refused') return m;
    const numberType = snapshot.guarded || readsTypes(snapshot, m.provider) ? numberTypeOf(m.recipient) : undefined;
    const verdict = decideRoutingVerdict(factsOf(m, at, numberType), m.provider, snapshot);
    if (!verdict.ok) countRefusal(verdict.country, verdict.code);
    return { ...m, verdict };
  });
}
