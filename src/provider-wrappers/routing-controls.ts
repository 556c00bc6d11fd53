/**
 * Admin changes to routing (docs/routing.md "Changes without a restart"): suspend or resume a provider or one member
 * of a route, change a route's (or one rule's) weights, switch a rule's members. Each is a target and a value stored
 * in the ledger (src/ledger/routing-controls.ts); here are the pure parts: reading an admin request into a change,
 * reading the stored rows into the state in force, and the members a message's rule sends through under that state.
 */
import type { FailoverRouteConfig } from '../config/failover-route-config.js';
import type { RouteStrategy } from './failover.js';
import { CATCH_ALL, ruleKey, type RuleDecision } from './route-rules.js';

/** The changes in force, as the send path reads them. */
export interface ControlState {
  /** Providers no message is handed to (directly or as any route's member). */
  suspended: ReadonlySet<string>;
  /** `route/member`: members one route passes over. */
  suspendedMembers: ReadonlySet<string>;
  /** `route` or `route/rule` → weights replacing the configured ones. */
  weights: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** `route/rule` → members replacing the rule's. */
  members: ReadonlyMap<string, readonly string[]>;
}

export const NO_CONTROLS: ControlState = { suspended: new Set(), suspendedMembers: new Set(), weights: new Map(), members: new Map() };

/** The configuration a change is checked against: every provider's type, and each route. */
export type ProvidersConfig = Readonly<Record<string, { type: string } | (FailoverRouteConfig & { type: 'route' })>>;

export type ControlChange = { ok: true; target: string; value: string | null; text: string } | { ok: false; error: string; code: string };

const ACTIONS = ['suspend', 'resume', 'set_weights', 'clear_weights', 'set_members', 'clear_members'] as const;

const refuse = (error: string, code = 'invalid_control'): ControlChange => ({ ok: false, error, code });
const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 100;

/** The rule keys of a route: `catch-all`, each rule's number and each rule's name. */
function ruleOf(route: FailoverRouteConfig, key: string): { key: string; members: readonly string[]; weighted: boolean } | undefined {
  if (key === CATCH_ALL) return { key, members: route.members, weighted: route.strategy === 'weighted' };
  const rules = route.rules ?? [];
  const index = /^\d+$/.test(key) ? Number(key) - 1 : rules.findIndex((r) => r.name === key);
  const rule = rules[index];
  if (!rule) return undefined;
  return { key: ruleKey({ rule: index + 1, name: rule.name }), members: rule.members, weighted: (rule.strategy ?? route.strategy) === 'weighted' };
}

/** The strategy a rule (by its key) sets of its own, if any. */
const ruleStrategy = (route: FailoverRouteConfig, key: string) => (route.rules ?? []).find((r, i) => ruleKey({ rule: i + 1, name: r.name }) === key)?.strategy;

/**
 * Reads an admin request (`{action, provider | route, member, rule, weights, members}`) into the change it asks for,
 * checked against the configuration, or a refusal naming the field. Pure.
 */
export function readControlChange(body: unknown, providers: ProvidersConfig): ControlChange {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return refuse('body: must be a JSON object');
  const b = body as Record<string, unknown>;
  const action = b.action;
  if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action)) return refuse(`action: must be one of ${ACTIONS.join(', ')}`);
  const routeOf = (): { name: string; route: FailoverRouteConfig } | ControlChange => {
    if (!isText(b.route)) return refuse('route: required, the name of a `type: route` provider');
    const route = Object.hasOwn(providers, b.route) ? providers[b.route] : undefined;
    if (!route || route.type !== 'route') return refuse(`route: ${JSON.stringify(b.route)} is not a configured route`, 'unknown_route');
    return { name: b.route, route: route as FailoverRouteConfig };
  };
  const isProvider = (name: unknown): name is string => isText(name) && Object.hasOwn(providers, name) && providers[name]!.type !== 'route';

  if (action === 'suspend' || action === 'resume') {
    const value = action === 'suspend' ? JSON.stringify({ suspended: true }) : null;
    if (b.provider !== undefined) {
      if (b.route !== undefined) return refuse('provider: give either provider, or route and member');
      if (!isProvider(b.provider))
        return refuse(`provider: ${JSON.stringify(b.provider)} is not a configured provider (routes are suspended member by member)`, 'unknown_provider');
      return { ok: true, target: `provider:${b.provider}`, value, text: `${action} provider ${b.provider}` };
    }
    const found = routeOf();
    if ('ok' in found) return found;
    if (!isProvider(b.member)) return refuse(`member: ${JSON.stringify(b.member)} is not a configured provider`, 'unknown_provider');
    return { ok: true, target: `member:${found.name}/${b.member}`, value, text: `${action} member ${b.member} of route ${found.name}` };
  }

  const found = routeOf();
  if ('ok' in found) return found;
  const ruleText = b.rule === undefined ? undefined : String(b.rule);
  const rule = ruleText === undefined ? undefined : ruleOf(found.route, ruleText);
  if (ruleText !== undefined && !rule)
    return refuse(`rule: ${JSON.stringify(ruleText)} is not a rule of route ${found.name} (its number, its name, or ${CATCH_ALL})`, 'unknown_rule');

  if (action === 'set_weights' || action === 'clear_weights') {
    const target = `weights:${found.name}${rule ? `/${rule.key}` : ''}`;
    const where = rule ? `rule ${rule.key} of route ${found.name}` : `route ${found.name}`;
    if (action === 'clear_weights') return { ok: true, target, value: null, text: `clear the weights of ${where}` };
    // Weights only order a weighted rule's members: on a failover one they would be stored and never read.
    const weighted = rule ? rule.weighted : found.route.strategy === 'weighted' || (found.route.rules ?? []).some((r) => r.strategy === 'weighted');
    if (!weighted) {
      const strategy = rule && rule.key !== CATCH_ALL ? (ruleStrategy(found.route, rule.key) ?? found.route.strategy) : found.route.strategy;
      const means = strategy === 'cheapest_delivering' ? 'members by price and delivery' : 'members in order';
      return refuse(`weights: ${where} uses strategy ${strategy} (${means}); weights apply to strategy weighted`, 'not_weighted');
    }
    const w = b.weights;
    if (w === null || typeof w !== 'object' || Array.isArray(w) || Object.keys(w).length === 0)
      return refuse('weights: required, an object of member names to weights (numbers, 0 or more)');
    const entries = Object.entries(w as Record<string, unknown>);
    for (const [member, weight] of entries) {
      if (!isProvider(member)) return refuse(`weights.${member}: not a configured provider`, 'unknown_provider');
      if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0 || weight > 1e6)
        return refuse(`weights.${member}: must be a number from 0 to 1000000`);
    }
    return { ok: true, target, value: JSON.stringify(Object.fromEntries(entries)), text: `set the weights of ${where}` };
  }

  if (!rule) return refuse(`rule: required (a rule's number, its name, or ${CATCH_ALL})`);
  const target = `members:${found.name}/${rule.key}`;
  if (action === 'clear_members') return { ok: true, target, value: null, text: `restore the configured members of rule ${rule.key} of route ${found.name}` };
  const m = b.members;
  if (!Array.isArray(m) || m.length === 0 || m.length > 20) return refuse('members: required, a list of 1 to 20 provider names');
  for (const [i, member] of m.entries())
    if (!isProvider(member)) return refuse(`members[${i}]: ${JSON.stringify(member)} is not a configured provider (not a route)`, 'unknown_provider');
  if (new Set(m).size !== m.length) return refuse('members: a provider is listed twice');
  return { ok: true, target, value: JSON.stringify(m), text: `switch the members of rule ${rule.key} of route ${found.name}` };
}

/** The state in force from the stored rows; a row this version cannot read is passed over (logged by the caller). */
export function controlStateOf(rows: ReadonlyArray<{ target: string; value: string }>): { state: ControlState; unreadable: string[] } {
  const suspended = new Set<string>();
  const suspendedMembers = new Set<string>();
  const weights = new Map<string, Map<string, number>>();
  const members = new Map<string, string[]>();
  const unreadable: string[] = [];
  for (const row of rows) {
    const colon = row.target.indexOf(':');
    const kind = row.target.slice(0, colon);
    const key = row.target.slice(colon + 1);
    let value: unknown;
    try {
      value = JSON.parse(row.value);
    } catch {
      unreadable.push(row.target);
      continue;
    }
    if (kind === 'provider') suspended.add(key);
    else if (kind === 'member') suspendedMembers.add(key);
    else if (kind === 'weights' && value && typeof value === 'object' && !Array.isArray(value))
      weights.set(key, new Map(Object.entries(value as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number')));
    else if (kind === 'members' && Array.isArray(value) && value.every((v) => typeof v === 'string')) members.set(key, value);
    else unreadable.push(row.target);
  }
  return { state: { suspended, suspendedMembers, weights, members }, unreadable };
}

/** The members one message's rule sends through, in the state in force. */
export interface MemberPlan {
  members: readonly string[];
  strategy: RouteStrategy;
  weights: ReadonlyMap<string, number>;
  /** Members left out as suspended, for the error when none is left. */
  suspended: readonly string[];
}

/** Pure: the rule's members (or their replacement), less the suspended ones, with the weights and strategy in force. */
export function planMembers(routeName: string, route: FailoverRouteConfig, decision: Pick<RuleDecision, 'rule' | 'name'>, state: ControlState): MemberPlan {
  const rule = decision.rule === 0 ? undefined : route.rules?.[decision.rule - 1];
  const key = `${routeName}/${ruleKey(decision)}`;
  const configured = state.members.get(key) ?? rule?.members ?? route.members;
  const members: string[] = [];
  const suspended: string[] = [];
  for (const m of configured) {
    if (state.suspended.has(m) || state.suspendedMembers.has(`${routeName}/${m}`)) suspended.push(m);
    else members.push(m);
  }
  const weights = state.weights.get(key) ?? state.weights.get(routeName) ?? new Map(Object.entries(rule?.weights ?? route.weights ?? {}));
  return { members, strategy: rule?.strategy ?? route.strategy, weights, suspended };
}
