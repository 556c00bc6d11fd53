/** Wires the running gateway: ledger, providers, dispatcher, HTTP server. Used by `serve` and by the tests. */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Logger } from 'pino';
import { providerPlugins } from '../providers/index.js';
import type { ProviderPlugin, SmsProvider } from '../providers/types.js';
import { createApp } from './app.js';
import type { Config } from './config/schema.js';
import { migrateToLatest, openLedger, type Ledger } from './ledger/db.js';
import { createLogger } from './observability/logger.js';
import { createDispatcher } from './sms/dispatch.js';
import { createProviderRouter } from './sms/provider-router.js';
import { systemClock, withThrottle, type Clock } from './sms/throttle.js';

export interface GatewayOptions {
  logger?: Logger;
  now?: () => number;
  /** Clock for the provider throttles' waits (tests move time by hand); defaults to real timers over `now`. */
  clock?: Clock;
}

export interface Gateway {
  /** Where this process listens, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Base of the URLs handed to providers (server.public_url, or `url`). */
  publicUrl: string;
  ledger: Ledger;
  close(): Promise<void>;
}

export function createProviders(config: Readonly<Config>, logger: Logger, now: () => number, clock: Clock = systemClock(now)): SmsProvider[] {
  return Object.entries(config.providers).map(([name, providerConfig]) => {
    const plugin = providerPlugins[providerConfig.type] as ProviderPlugin;
    const provider = plugin.create(name, providerConfig, { logger: logger.child({ provider: name }), now });
    // One throttle per provider instance, shared by single and batch traffic (issue 5).
    return withThrottle(provider, { ratePerSecond: providerConfig.rate_per_second, maxConcurrency: providerConfig.max_concurrency }, clock);
  });
}

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config.log.level);
  const now = options.now ?? Date.now;
  const ledger = openLedger(config.database);
  await migrateToLatest(ledger.db);

  const providers = createProviders(config, logger, now, options.clock);
  const router = createProviderRouter(
    providers.map((provider) => ({ provider, aliases: config.providers[provider.name]!.aliases })),
    config.sms.default_provider,
  );
  let publicUrl = config.server.public_url?.replace(/\/$/, '') ?? '';
  const dispatcher = createDispatcher({
    db: ledger.db,
    logger,
    now,
    storeContent: config.ledger.store_content,
    dispatchLeaseMs: config.sms.dispatch_lease,
    sendTimeoutMs: config.sms.send_timeout,
    callbackUrl: (provider, smsId) => `${publicUrl}/dlr/${encodeURIComponent(provider)}?sms_id=${smsId}`,
  });
  const app = createApp({ config, db: ledger.db, router, dispatcher, logger, now });

  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: config.server.port, hostname: config.server.host }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const host = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  publicUrl ||= url;
  logger.info({ url, public_url: publicUrl, database: ledger.flags.kind, providers: providers.map((p) => p.name) }, 'gateway listening');

  return {
    url,
    publicUrl,
    ledger,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections would hold close() open for their idle timeout.
        (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      });
      await Promise.allSettled(providers.map((p) => p.close?.()));
      await ledger.close();
    },
  };
}
