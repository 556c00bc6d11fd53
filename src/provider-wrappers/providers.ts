/**
 * The configured providers, built and wrapped: each plugin (providers/index.ts) created with what it may push in,
 * wrapped in its throttle and sender rules, then the failover routes over them, and the router that finds one by
 * name or alias. `serve` starts them with startProviders (the instance heartbeat when a provider has limits to
 * share, the breakers' metrics, the close step); bench/dispatch.ts builds them alone with createProviders.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { buildCallbackUrl } from '../../providers/kit/callback-url.js';
import { providerPlugins } from '../../providers/index.js';
import type { InboundSms, ProviderPlugin, ReceiptEvent, SmsProvider } from '../../providers/types.js';
import type { Config } from '../config/schema.js';
import { systemClock, type Clock } from '../kit/clock.js';
import type { Shutdown } from '../kit/shutdown.js';
import type { Database } from '../ledger/schema.js';
import { createFailoverHealth, type FailoverHealth } from './breakers.js';
import { createFailoverRoute } from './failover-route.js';
import { createProviderRouter, type ProviderRouter } from './registry.js';
import { withSenderRules } from './sender-rules.js';
import { hasProviderLimits, registerInstanceMetric, startInstanceHeartbeat } from './shared-limits.js';
import { withThrottle } from './throttle.js';
import type { Routing } from './routing.js';
import type { ControlState } from './routing-controls.js';

export interface FailoverWiring {
  /** The circuit breakers of every route member (/metrics, the console and the receipt path read them). */
  health: FailoverHealth;
  /** The receipt URL for a message sent through a member: the one dispatch would build for it. */
  callbackUrl(member: string, smsId: string): string;
}

/** The intake behind ProviderDeps.deliverReceipts and deliverInbound, by provider name. */
export interface PushedIntake {
  receipts(provider: string, events: ReceiptEvent[], limits?: { maxParked?: number }): Promise<unknown>;
  inbound(provider: string, message: InboundSms): Promise<unknown>;
}

/** What the providers are built with; all but the logger and the time may be left out (bench/dispatch.ts does). */
export interface ProviderBuildOptions {
  logger: Logger;
  now: () => number;
  /** The throttles' clock: the system's over `now` unless given. */
  clock?: Clock | undefined;
  processSecret?: Buffer | undefined;
  /** The members' breakers and receipt URLs: fresh breakers and URLs without a public base unless given. */
  failover?: FailoverWiring | undefined;
  /** Where plugins that receive receipts or players' messages over their own connection (SMPP) hand them in. */
  pushed?: PushedIntake | undefined;
  /** The live instances on the database, which split each provider's limits (shared-limits.ts). */
  instances?: (() => number) | undefined;
  /** The routes' rules and the admin changes in force (routing.ts); the configuration as built, unchanged, when absent. */
  routing?: (Pick<Routing, 'snapshot' | 'controls'> & Partial<Pick<Routing, 'delivery'>>) | undefined;
}

/**
 * A provider an admin suspended takes nothing: a message sent to it by name answers transient (503, the CRM retries,
 * perhaps after the resume); routes pass over it before calling it (failover-route.ts).
 */
function withSuspension(provider: SmsProvider, controls: () => ControlState): SmsProvider {
  return {
    ...provider,
    send(request, signal) {
      if (controls().suspended.has(provider.name))
        return Promise.resolve({
          ok: false,
          kind: 'transient',
          error: `provider ${provider.name} is suspended by an admin; retry later`,
          code: 'provider_suspended',
        });
      return provider.send(request, signal);
    },
  };
}

export function createProviders(config: Readonly<Config>, options: ProviderBuildOptions): SmsProvider[] {
  const { logger, now, processSecret, pushed, instances } = options;
  const clock = options.clock ?? systemClock(now);
  const failover = options.failover ?? { health: createFailoverHealth(now), callbackUrl: (member, smsId) => buildCallbackUrl('', member, smsId) };
  const built = new Map<string, SmsProvider>();
  for (const [name, providerConfig] of Object.entries(config.providers)) {
    if (providerConfig.type === 'route') continue;
    const plugin = providerPlugins[providerConfig.type] as ProviderPlugin;
    const deps = {
      logger: logger.child({ provider: name }),
      now,
      processSecret,
      ...(pushed
        ? {
            deliverReceipts: async (events: ReceiptEvent[], limits?: { maxParked?: number }) => void (await pushed.receipts(name, events, limits)),
            deliverInbound: async (message: InboundSms) => void (await pushed.inbound(name, message)),
          }
        : {}),
    };
    const provider = plugin.create(name, providerConfig, deps);
    // One throttle per provider instance, shared by single and batch traffic (docs/configuration.md "Providers"); with instances
    // heartbeating on the database, a share of the live ones' (docs/shared-limits.md).
    const throttled = withThrottle(
      provider,
      { ratePerSecond: providerConfig.rate_per_second, maxConcurrency: providerConfig.max_concurrency },
      clock,
      instances,
    );
    const ruled = withSenderRules(throttled, providerConfig.senders, config.sms.sender_name_wins);
    built.set(name, options.routing ? withSuspension(ruled, options.routing.controls) : ruled);
  }
  // Failover routes over the members built above (a route's members are never routes: checkFailoverRouteMembers).
  for (const [name, providerConfig] of Object.entries(config.providers)) {
    if (providerConfig.type !== 'route') continue;
    const routing = options.routing;
    built.set(
      name,
      createFailoverRoute(name, providerConfig, {
        members: built,
        health: failover.health,
        callbackUrl: failover.callbackUrl,
        ...(routing ? { config: () => routing.snapshot().routes.get(name) ?? providerConfig, controls: routing.controls, delivery: routing.delivery } : {}),
      }),
    );
  }
  return Object.keys(config.providers).map((name) => built.get(name)!);
}

/** What the providers share before they are built: the route members' breakers, and the live instances' count. */
export interface ProviderHealth {
  failover: FailoverHealth;
  /** The live instances on the database, when a provider has limits to split among them (shared-limits.ts). */
  instances?: (() => number) | undefined;
}

/**
 * The breakers of the failover routes' members (their metrics registered), and, when a provider has a limit, this
 * instance's heartbeat on the database, so the limits are split among the live instances (docs/shared-limits.md); its
 * row is removed at shutdown.
 */
export async function startProviderHealth(
  config: Readonly<Config>,
  deps: { db: Kysely<Database>; logger: Logger; now: () => number; registry: Registry },
  shutdown: Shutdown,
): Promise<ProviderHealth> {
  const failover = createFailoverHealth(deps.now, deps.logger);
  failover.registerMetrics(deps.registry);
  // Only a provider with a limit needs to know how many instances share it.
  if (!hasProviderLimits(config)) return { failover };
  const heartbeat = await startInstanceHeartbeat({
    db: deps.db,
    now: deps.now,
    intervalMs: config.server.instance_heartbeat,
    expiryMs: config.server.instance_expiry,
    logger: deps.logger,
  });
  registerInstanceMetric(deps.registry, heartbeat.instances);
  shutdown.add('services', 'leaving the instance count', () => heartbeat.stop());
  return { failover, instances: heartbeat.instances };
}

export interface ProviderStartDeps {
  logger: Logger;
  now: () => number;
  clock?: Clock | undefined;
  processSecret: Buffer;
  health: ProviderHealth;
  /** The receipt URL dispatch builds for a message: a failover route's member builds the same. */
  callbackUrl(member: string, smsId: string): string;
  pushed: PushedIntake;
  routing: Routing;
}

export interface StartedProviders {
  providers: SmsProvider[];
  router: ProviderRouter;
}

/**
 * The providers of `serve`, wrapped, with the router that finds one by name or alias. They close early in the
 * shutdown, while the listener still answers: the sandbox posts its pending receipts on close.
 */
export function startProviders(config: Readonly<Config>, deps: ProviderStartDeps, shutdown: Shutdown): StartedProviders {
  const { logger, now, clock, processSecret, health, pushed, routing } = deps;
  const failover = { health: health.failover, callbackUrl: deps.callbackUrl };
  const providers = createProviders(config, { logger, now, clock, processSecret, failover, pushed, instances: health.instances, routing });
  shutdown.add('providers', 'closing the providers', () => Promise.allSettled(providers.map((p) => p.close?.())));
  const router = createProviderRouter(
    providers.map((provider) => ({ provider, aliases: config.providers[provider.name]!.aliases })),
    config.sms.default_provider,
  );
  return { providers, router };
}
