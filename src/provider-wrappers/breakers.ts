/**
 * The circuit breakers of every route member, kept in one place so the routes, the receipt path, /metrics and the
 * console read the same states. Breakers belong to (route, member): two routes sharing a member judge it apart,
 * each with its own settings. Each gateway process keeps its own.
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { MappedStatus } from '../../providers/types.js';
import {
  admitThrough,
  breakerAfter,
  breakerGaugeValue,
  CLOSED,
  deliveryCollapsed,
  deliveryRate,
  EMPTY_TALLY,
  tallyReceipt,
  type BreakerEvent,
  type BreakerSettings,
  type BreakerState,
  type DeliveryTally,
} from './circuit-breaker.js';

interface MemberHealth {
  state: BreakerState;
  tally: DeliveryTally;
}

export interface MemberHealthView {
  route: string;
  member: string;
  state: BreakerState['kind'];
  /** Epoch ms the circuit opened (open only). */
  since?: number;
  reason?: string;
  /** Delivered share of final receipts in the window, when there are enough of them. */
  deliveryRate: number | null;
}

export interface FailoverHealth {
  register(route: string, members: readonly string[], settings: BreakerSettings): void;
  /** Asks the member's breaker whether a send may go to it now (an open circuit past open_for lets one probe in). */
  admit(route: string, member: string): boolean;
  record(route: string, member: string, event: BreakerEvent): void;
  /** A receipt that arrived at /dlr/{member}: final ones feed the delivery-rate window of every route using it. */
  observeReceipt(member: string, status: MappedStatus): void;
  failedOver(route: string, from: string): void;
  snapshot(): MemberHealthView[];
  /** Adds the breaker gauge and the failover counter to `registry`. */
  registerMetrics(registry: Registry): void;
}

export function createFailoverHealth(now: () => number, logger?: Logger): FailoverHealth {
  const routes = new Map<string, { settings: BreakerSettings; members: Map<string, MemberHealth> }>();
  let failovers: Counter | undefined;

  const entry = (route: string, member: string) => {
    const r = routes.get(route);
    if (!r) throw new Error(`route ${route} has no member ${member}`);
    let m = r.members.get(member);
    // A member an admin change or a reload gave the route after it was built: a closed circuit of its own from now.
    if (!m) r.members.set(member, (m = { state: CLOSED, tally: EMPTY_TALLY }));
    return { settings: r.settings, health: m, route, member };
  };
  // A fresh window whenever the circuit changes: receipts of messages sent before it opened must not reopen it.
  const setState = ({ health, route, member }: { health: MemberHealth; route: string; member: string }, next: BreakerState) => {
    if (next.kind !== health.state.kind) {
      if (next.kind !== 'half_open') health.tally = EMPTY_TALLY;
      if (next.kind === 'open') logger?.warn({ route, member, reason: next.reason }, 'circuit opened: traffic kept off the route member');
      else
        logger?.info(
          { route, member, circuit: next.kind },
          next.kind === 'closed' ? 'circuit closed: the route member takes traffic again' : 'circuit half-open: probing the route member',
        );
    }
    health.state = next;
  };

  return {
    register(route, members, settings) {
      routes.set(route, { settings, members: new Map(members.map((m) => [m, { state: CLOSED, tally: EMPTY_TALLY }])) });
      // Each member's failover series shows 0 from the start, whether the route is built before or after the metrics.
      for (const member of members) failovers?.inc({ route, from: member }, 0);
    },
    admit(route, member) {
      const found = entry(route, member);
      const { admit, state } = admitThrough(found.health.state, now(), found.settings);
      setState(found, state);
      return admit;
    },
    record(route, member, event) {
      const found = entry(route, member);
      setState(found, breakerAfter(found.health.state, event, now(), found.settings));
    },
    observeReceipt(member, status) {
      if (status === 'intermediate' || status === 'delivery_unknown') return;
      const at = now();
      for (const [route, { settings, members }] of routes) {
        const health = members.get(member);
        if (!health || health.state.kind !== 'closed') continue;
        health.tally = tallyReceipt(health.tally, status === 'delivered', at, settings);
        const { collapsed, rate } = deliveryCollapsed(health.tally, at, settings);
        if (collapsed) setState({ health, route, member }, breakerAfter(health.state, { kind: 'delivery_collapse', rate: rate! }, at, settings));
      }
    },
    failedOver(route, from) {
      failovers?.inc({ route, from });
    },
    snapshot() {
      const at = now();
      const views: MemberHealthView[] = [];
      for (const [route, { settings, members }] of routes) {
        for (const [member, { state, tally }] of members) {
          views.push({
            route,
            member,
            state: state.kind,
            ...(state.kind === 'open' ? { since: state.since, reason: state.reason } : {}),
            deliveryRate: deliveryRate(tally, at, settings),
          });
        }
      }
      return views;
    },
    registerMetrics(registry) {
      const snapshot = () => this.snapshot();
      new Gauge({
        name: 'sms_gateway_route_member_circuit',
        help: 'Circuit breaker of each route member: 0 closed, 1 half-open (probing), 2 open (traffic kept off)',
        labelNames: ['route', 'member'],
        registers: [registry],
        collect() {
          for (const view of snapshot()) this.set({ route: view.route, member: view.member }, breakerGaugeValue(view.state));
        },
      });
      failovers = new Counter({
        name: 'sms_gateway_route_failovers_total',
        help: 'Messages a route moved on from a member that provably did not take them (refused, throttled, circuit open)',
        labelNames: ['route', 'from'],
        registers: [registry],
      });
      for (const [route, { members }] of routes) for (const member of members.keys()) failovers.inc({ route, from: member }, 0);
    },
  };
}
