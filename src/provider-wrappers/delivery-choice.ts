/**
 * `strategy: cheapest_delivering` in this process (docs/routing.md "Cheapest member that delivers"): the members'
 * recent delivery figures, read from the ledger every routing.delivery_refresh for every route that uses the strategy
 * (one statement per window and deadline, never one per message), each route's standings by country and member, the
 * last decision per route and country, and the count of decisions. Each instance computes its figures from the
 * ledger every instance shares, so they agree on them; the ordering itself is cheapest-delivering.ts.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { FailoverRouteConfig } from '../config/failover-route-config.js';
import { listRecentDelivery } from '../ledger/route-delivery.js';
import type { Database } from '../ledger/schema.js';
import { formatMicros } from '../kit/money.js';
import {
  decideCheapestDelivering,
  IN,
  type Decision,
  type DecisionReason,
  type DeliveryFigures,
  type DeliverySettings,
  type MemberPrice,
  type MemberView,
  type Standing,
} from './cheapest-delivering.js';

export function deliverySettingsOf(route: FailoverRouteConfig): DeliverySettings {
  const d = route.recent_delivery;
  return {
    windowMs: d.window,
    deadlineMs: d.deadline,
    floor: d.floor,
    minSample: d.min_sample,
    recoverMargin: d.recover_margin,
    coolDownMs: d.cool_down,
  };
}

/** Whether the route or any of its rules orders its members by price and delivery. */
export const usesCheapestDelivering = (route: FailoverRouteConfig): boolean =>
  route.strategy === 'cheapest_delivering' || (route.rules ?? []).some((r) => (r.strategy ?? route.strategy) === 'cheapest_delivering');

/** Every member a cheapest_delivering part of the route may send through. */
function cheapestMembers(route: FailoverRouteConfig): string[] {
  const members = new Set<string>();
  if (route.strategy === 'cheapest_delivering') for (const m of route.members) members.add(m);
  for (const rule of route.rules ?? []) if ((rule.strategy ?? route.strategy) === 'cheapest_delivering') for (const m of rule.members) members.add(m);
  return [...members];
}

/** The last decision of a route for one country, with the figures it used. */
export interface LastDecision {
  at: number;
  rule: string;
  order: string[];
  reason: DecisionReason;
  members: MemberView[];
}

/** One route's figures and standings now, per country (the console's panel, GET /admin/routing). */
export interface RouteDeliveryView {
  route: string;
  settings: DeliverySettings;
  /** When the figures were last read from the ledger; null before the first read. */
  figuresAt: number | null;
  countries: Array<{ country: string; members: MemberView[]; last: LastDecision | null }>;
}

export interface DeliveryChoice {
  /** Reads the figures of every cheapest_delivering route of `routes` (serve does it every routing.delivery_refresh). */
  refresh(routes: ReadonlyMap<string, FailoverRouteConfig>): Promise<void>;
  /** The order one message to `country` tries `members` in, counted and kept as the route's last decision there. */
  order(route: string, config: FailoverRouteConfig, rule: string, members: readonly string[], country: string | undefined): string[];
  view(routes: ReadonlyMap<string, FailoverRouteConfig>): RouteDeliveryView[];
}

export interface DeliveryChoiceDeps {
  readDb: Kysely<Database>;
  now: () => number;
  logger: Logger;
  registry?: Registry | undefined;
  /** A member's price of one segment to a country (costs.rates, its `*` rate for an unknown country); null when none. */
  priceOf?: ((provider: string, country: string | null) => MemberPrice | null) | undefined;
}

const figuresKey = (s: Pick<DeliverySettings, 'windowMs' | 'deadlineMs'>) => `${s.windowMs}/${s.deadlineMs}`;

export function createDeliveryChoice(deps: DeliveryChoiceDeps): DeliveryChoice {
  const priceOf = deps.priceOf ?? (() => null);
  /** Per window/deadline: when read, and each `provider|country`'s figures. */
  const figures = new Map<string, { at: number; byMember: Map<string, DeliveryFigures> }>();
  /** Members asked of order() that no configuration named (an admin's set_members): read at the next refresh. */
  const asked = new Map<string, Set<string>>();
  /** Per route: `country|member` → standing. */
  const standings = new Map<string, Map<string, Standing>>();
  /** Per route: country → its last decision. */
  const decisions = new Map<string, Map<string, LastDecision>>();
  const registers = deps.registry ? [deps.registry] : [];
  const counted = new Counter({
    name: 'sms_gateway_route_decisions_total',
    help: 'Messages a cheapest_delivering route ordered, by route, country, the member tried first and why it was (cheapest, cheaper_stepped_down, all_stepped_down, no_price)',
    labelNames: ['route', 'country', 'member', 'reason'],
    registers,
  });
  new Gauge({
    name: 'sms_gateway_route_member_stepped_down',
    help: "Route members stepped down for delivering below their route's recent_delivery.floor, by route, country and member (1 stepped down, 0 delivering), as this instance last decided",
    labelNames: ['route', 'country', 'member'],
    registers,
    collect() {
      this.reset();
      for (const [route, byKey] of standings)
        for (const [key, standing] of byKey) {
          const [country, member] = key.split('|') as [string, string];
          this.set({ route, country: country || 'unknown', member }, standing.kind === 'in' ? 0 : 1);
        }
    },
  });

  const figuresOf = (s: DeliverySettings, member: string, country: string): DeliveryFigures | undefined =>
    figures.get(figuresKey(s))?.byMember.get(`${member}|${country}`);

  const memberInputs = (s: DeliverySettings, members: readonly string[], country: string) =>
    members.map((member) => ({ member, price: priceOf(member, country || null), figures: figuresOf(s, member, country) }));

  const logChanges = (route: string, country: string, before: ReadonlyMap<string, Standing>, decision: Decision) => {
    for (const view of decision.members) {
      const was = before.get(`${country}|${view.member}`) ?? IN;
      if (was.kind === view.standing.kind) continue;
      const fields = { route, country: country || 'unknown', member: view.member, on_time: view.onTime, judged: view.judged, share: view.share };
      // `why` starts with what happened: "stepped down: 70 of 100 on time …", "back: …".
      if (view.standing.kind === 'stepped_down') deps.logger.warn(fields, `route member ${view.why}`);
      else deps.logger.info(fields, `route member ${view.why}`);
    }
  };

  return {
    async refresh(routes) {
      const wanted = new Map<string, { settings: DeliverySettings; members: Set<string> }>();
      for (const route of routes.values()) {
        if (!usesCheapestDelivering(route)) continue;
        const settings = deliverySettingsOf(route);
        const key = figuresKey(settings);
        const entry = wanted.get(key) ?? { settings, members: new Set(asked.get(key)) };
        for (const m of cheapestMembers(route)) entry.members.add(m);
        wanted.set(key, entry);
      }
      for (const key of figures.keys()) if (!wanted.has(key)) figures.delete(key);
      for (const [key, { settings, members }] of wanted) {
        const now = deps.now();
        const rows = await listRecentDelivery(deps.readDb, {
          providers: [...members].sort(),
          since: now - settings.windowMs,
          deadlineMs: settings.deadlineMs,
          now,
        });
        figures.set(key, { at: now, byMember: new Map(rows.map((r) => [`${r.provider}|${r.country}`, { sent: r.sent, judged: r.judged, onTime: r.onTime }])) });
      }
    },
    order(route, config, rule, members, country) {
      const settings = deliverySettingsOf(config);
      const key = figuresKey(settings);
      const configured = cheapestMembers(config);
      for (const m of members) {
        if (configured.includes(m)) continue;
        const set = asked.get(key) ?? new Set<string>();
        set.add(m);
        asked.set(key, set);
      }
      const place = country ?? '';
      const byKey = standings.get(route) ?? new Map<string, Standing>();
      standings.set(route, byKey);
      const before = new Map(members.map((m) => [m, byKey.get(`${place}|${m}`) ?? IN]));
      const at = deps.now();
      const decision = decideCheapestDelivering(memberInputs(settings, members, place), before, at, settings);
      logChanges(route, place, byKey, decision);
      for (const [m, standing] of decision.standings) byKey.set(`${place}|${m}`, standing);
      const lasts = decisions.get(route) ?? new Map<string, LastDecision>();
      decisions.set(route, lasts);
      lasts.set(place, { at, rule, order: decision.order, reason: decision.reason, members: decision.members });
      counted.inc({ route, country: place || 'unknown', member: decision.order[0] ?? 'none', reason: decision.reason });
      return decision.order;
    },
    view(routes) {
      const views: RouteDeliveryView[] = [];
      const at = deps.now();
      for (const [name, route] of routes) {
        if (!usesCheapestDelivering(route)) continue;
        const settings = deliverySettingsOf(route);
        const read = figures.get(figuresKey(settings));
        const members = cheapestMembers(route);
        const countries = new Set<string>(decisions.get(name)?.keys());
        for (const key of read?.byMember.keys() ?? []) {
          const [member, country] = key.split('|') as [string, string];
          if (members.includes(member)) countries.add(country);
        }
        const byKey = standings.get(name) ?? new Map<string, Standing>();
        views.push({
          route: name,
          settings,
          figuresAt: read?.at ?? null,
          countries: [...countries].sort().map((country) => {
            const last = decisions.get(name)?.get(country) ?? null;
            const shown = last ? last.members.map((m) => m.member) : members;
            // What a message would see now, without changing any standing: the panel only reads.
            const before = new Map(shown.map((m) => [m, byKey.get(`${country}|${m}`) ?? IN]));
            const now = decideCheapestDelivering(memberInputs(settings, shown, country), before, at, settings);
            return { country, members: now.members, last };
          }),
        });
      }
      return views;
    },
  };
}

/** One member's figures as GET /admin/routing shows them: the price as decimal text, the share as a number. */
function memberJson(m: MemberView) {
  return {
    member: m.member,
    price: m.price ? formatMicros(m.price.micros, m.price.currency) : null,
    currency: m.price?.currency ?? null,
    sent: m.sent,
    judged: m.judged,
    on_time: m.onTime,
    share: m.share,
    counted: m.judgedEnough,
    state: m.standing.kind,
    since: m.standing.kind === 'stepped_down' ? m.standing.since : null,
    why: m.why,
  };
}

/** The views as JSON (GET /admin/routing `delivery`). */
export function deliveryViewsJson(views: readonly RouteDeliveryView[]) {
  return views.map((v) => ({
    route: v.route,
    settings: {
      window_ms: v.settings.windowMs,
      deadline_ms: v.settings.deadlineMs,
      floor: v.settings.floor,
      min_sample: v.settings.minSample,
      recover_margin: v.settings.recoverMargin,
      cool_down_ms: v.settings.coolDownMs,
    },
    figures_at: v.figuresAt,
    countries: v.countries.map((c) => ({
      country: c.country || 'unknown',
      members: c.members.map(memberJson),
      last_decision: c.last && { at: c.last.at, rule: c.last.rule, order: c.last.order, reason: c.last.reason, members: c.last.members.map(memberJson) },
    })),
  }));
}
