/**
 * Routing in force in this process (docs/routing.md): the routes' rules and the `routing` section as last loaded
 * (a SIGHUP reload replaces them between two messages: each send reads them once), and the admin changes stored in
 * the ledger (routing-controls.ts), read again every routing.control_poll so that every instance on the database
 * follows a change made through any of them, and at once in the process that made it.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import type { FailoverRouteConfig } from '../config/failover-route-config.js';
import type { RoutingConfig } from '../config/route-rules-config.js';
import type { Config } from '../config/schema.js';
import type { Shutdown } from '../kit/shutdown.js';
import { changeRoutingControl, listRoutingAudit, listRoutingControls, type RoutingAuditRow, type RoutingControlRow } from '../ledger/routing-controls.js';
import type { Database } from '../ledger/schema.js';
import type { RuleCalendar } from './route-rules.js';
import { createDeliveryChoice, type DeliveryChoice, type DeliveryChoiceDeps } from './delivery-choice.js';
import { controlStateOf, NO_CONTROLS, readControlChange, type ControlState, type ProvidersConfig } from './routing-controls.js';

/** The part of the configuration a reload may change without a restart. */
export interface RoutingSnapshot {
  routes: ReadonlyMap<string, FailoverRouteConfig>;
  section: RoutingConfig;
  calendar: RuleCalendar;
  providers: ProvidersConfig;
  /** Whether any country list is configured: then number types are checked too. */
  guarded: boolean;
}

export function routingSnapshotOf(config: Readonly<Config>): RoutingSnapshot {
  const routes = new Map<string, FailoverRouteConfig>();
  for (const [name, p] of Object.entries(config.providers)) if (p.type === 'route') routes.set(name, p);
  const section = config.routing;
  return {
    routes,
    section,
    calendar: {
      holidays: new Map(Object.entries(section.holidays).map(([country, dates]) => [country, new Set(dates)])),
      zones: new Map(Object.entries(section.zones)),
    },
    providers: config.providers as ProvidersConfig,
    guarded: section.countries !== undefined || Object.keys(section.brands).length > 0,
  };
}

export type ReloadResult = { ok: true; changed: boolean } | { ok: false; error: string };
export type ChangeResult =
  | { ok: true; target: string; before: unknown; after: unknown; unchanged?: true }
  | { ok: false; status: 400; error: string; code: string };

export interface Routing {
  snapshot(): RoutingSnapshot;
  controls(): ControlState;
  /**
   * Takes a new configuration's routes and `routing` section. Refused, the old kept, when it changes anything else
   * about the providers (a provider added, removed or reconfigured needs a restart: its connection is built once).
   */
  reload(config: Readonly<Config>): ReloadResult;
  /** An admin change: checked against the configuration in force, stored with its audit, applied here at once. */
  change(body: unknown, actor: string): Promise<ChangeResult>;
  /** Reads the stored changes now (the poll does it every routing.control_poll). */
  refresh(): Promise<void>;
  storedControls(): Promise<RoutingControlRow[]>;
  audit(limit: number): Promise<RoutingAuditRow[]>;
  /** A message refused for where it goes: counted by country and reason (sms_gateway_destination_refusals_total). */
  countRefusal(country: string | undefined, code: string): void;
  /** This process's refusal counts since start, for the console. */
  refusalCounts(): Promise<Array<{ country: string; code: string; count: number }>>;
  /** `strategy: cheapest_delivering`: the figures, standings and decisions of this process (delivery-choice.ts). */
  delivery: DeliveryChoice;
}

/** The non-route providers' blocks, and every provider's name and aliases, as JSON: a reload may not change them. */
const pluginBlocks = (config: Readonly<Config>) =>
  JSON.stringify(
    Object.entries(config.providers)
      .map(([name, p]) => (p.type === 'route' ? [name, p.aliases] : [name, p]))
      .sort(([a], [b]) => String(a).localeCompare(String(b))),
  );

export interface RoutingDeps {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  logger: Logger;
  now: () => number;
  registry?: Registry;
  /** A member's price of one segment to a country (costs.rates), for `strategy: cheapest_delivering`. */
  priceOf?: DeliveryChoiceDeps['priceOf'];
}

export function createRouting(config: Readonly<Config>, deps: RoutingDeps): Routing {
  let current = routingSnapshotOf(config);
  let plugins = pluginBlocks(config);
  let controls: ControlState = NO_CONTROLS;
  let lastRows = '';
  const refusals = new Counter({
    name: 'sms_gateway_destination_refusals_total',
    help: 'Requests for a message refused for where it goes (routing.countries, routing.brands, routing.number_types; a CRM retry counts again), by country and reason',
    labelNames: ['country', 'reason'],
    registers: deps.registry ? [deps.registry] : [],
  });

  const apply = (rows: RoutingControlRow[]) => {
    const text = JSON.stringify(rows.map((r) => [r.target, r.value]));
    if (text === lastRows) return;
    const { state, unreadable } = controlStateOf(rows);
    if (unreadable.length > 0) deps.logger.warn({ targets: unreadable }, 'routing changes this version cannot read: passed over');
    if (lastRows !== '' || rows.length > 0) deps.logger.info({ controls: rows.map((r) => r.target) }, 'routing changes in force');
    lastRows = text;
    controls = state;
  };

  // Two reads can end out of order: a poll's read begun before an admin's change commits may end after the change's own
  // read, and applying it would undo the change here until the next poll (a send in between went by the old state).
  // Only a read begun after the last one applied is applied.
  let readsBegun = 0;
  let lastApplied = 0;
  const readAndApply = async (db: Kysely<Database>) => {
    const read = ++readsBegun;
    const rows = await listRoutingControls(db);
    if (read < lastApplied) return;
    lastApplied = read;
    apply(rows);
  };

  const delivery = createDeliveryChoice({ readDb: deps.readDb, now: deps.now, logger: deps.logger, registry: deps.registry, priceOf: deps.priceOf });

  return {
    delivery,
    snapshot: () => current,
    controls: () => controls,
    reload(next) {
      if (pluginBlocks(next) !== plugins)
        return {
          ok: false,
          error: 'providers (other than the members, weights, rules and validity of routes) or their names were changed: that needs a restart',
        };
      const before = JSON.stringify([...current.routes, current.section]);
      current = routingSnapshotOf(next);
      plugins = pluginBlocks(next);
      return { ok: true, changed: before !== JSON.stringify([...current.routes, current.section]) };
    },
    async change(body, actor) {
      const change = readControlChange(body, current.providers);
      if (!change.ok) return { ok: false, status: 400, error: change.error, code: change.code };
      const result = await changeRoutingControl(deps.db, { target: change.target, value: change.value, actor, at: deps.now() });
      const after = change.value === null ? null : JSON.parse(change.value);
      deps.logger.info({ target: change.target, actor, change: change.text }, 'routing changed by an admin');
      await readAndApply(deps.db);
      if (result === 'unchanged') return { ok: true, target: change.target, before: after, after, unchanged: true };
      return { ok: true, target: change.target, before: result.before === null ? null : JSON.parse(result.before), after };
    },
    async refresh() {
      await readAndApply(deps.readDb);
    },
    storedControls: () => listRoutingControls(deps.readDb),
    audit: (limit) => listRoutingAudit(deps.readDb, limit),
    countRefusal(country, code) {
      refusals.inc({ country: country ?? 'unknown', reason: code });
    },
    async refusalCounts() {
      const metric = await refusals.get();
      return metric.values.map((v) => ({ country: String(v.labels.country), code: String(v.labels.reason), count: v.value }));
    },
  };
}

/**
 * `serve`'s routing: the stored changes read before the first message, then every routing.control_poll (a read that
 * fails is logged and tried again at the next poll: the changes in force stay). Says once at start when every
 * country is allowed.
 */
export async function startRouting(config: Readonly<Config>, deps: RoutingDeps, shutdown: Shutdown): Promise<Routing> {
  const routing = createRouting(config, deps);
  await routing.refresh();
  if (!routing.snapshot().guarded)
    deps.logger.info('routing.countries is not set: messages may go to every country and every number type (docs/routing.md "Countries allowed")');
  let failing = false;
  const timer = setInterval(() => {
    routing.refresh().then(
      () => {
        if (failing) deps.logger.info('routing changes read again');
        failing = false;
      },
      (error: unknown) => {
        if (!failing) deps.logger.error({ err: error }, 'routing changes could not be read: the ones in force stay');
        failing = true;
      },
    );
  }, config.routing.control_poll);
  timer.unref();
  shutdown.add('services', 'stopping the routing poll', () => clearInterval(timer));
  await startDeliveryRefresh(routing, config, deps, shutdown);
  return routing;
}

/**
 * The delivery figures of the routes that use `strategy: cheapest_delivering`, read before the first message and then
 * every routing.delivery_refresh (a reload that adds such a route is read at the next tick). A read that fails is
 * logged and tried again at the next tick: the figures read last stay.
 */
async function startDeliveryRefresh(routing: Routing, config: Readonly<Config>, deps: RoutingDeps, shutdown: Shutdown): Promise<void> {
  let failing = false;
  const tick = () =>
    routing.delivery.refresh(routing.snapshot().routes).then(
      () => {
        if (failing) deps.logger.info('route delivery figures read again');
        failing = false;
      },
      (error: unknown) => {
        if (!failing) deps.logger.error({ err: error }, 'route delivery figures could not be read: the last ones read stay');
        failing = true;
      },
    );
  await tick();
  let busy = false;
  const timer = setInterval(() => {
    // A slow ledger never stacks reads: a tick that finds the last still running skips.
    if (busy) return;
    busy = true;
    void tick().finally(() => {
      busy = false;
    });
  }, config.routing.delivery_refresh);
  timer.unref();
  shutdown.add('services', 'stopping the route delivery figures', () => clearInterval(timer));
}
