/** Wires the running gateway: ledger, providers, dispatcher, the outboxes, HTTP server. Used by `serve` and tests. */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { buildCallbackUrl } from '../providers/kit/callback-url.js';
import { providerPlugins } from '../providers/index.js';
import type { InboundSms, ProviderPlugin, ReceiptEvent, SmsProvider } from '../providers/types.js';
import { createApp } from './app.js';
import type { Config } from './config/schema.js';
import { createReceiptIntake } from './delivery/intake.js';
import { createRetention, type RetentionResult } from './delivery/retention.js';
import { runSweep, type SweepResult } from './delivery/sweep.js';
import { createWebhookClient } from './delivery/webhook.js';
import { startConversionOutbox } from './delivery/conversion-outbox.js';
import { createEventTransport } from './events/create-transport.js';
import { createDestinations } from './events/destination.js';
import { registerEventMetrics } from './events/metrics.js';
import { startEventOutbox } from './events/event-outbox.js';
import { countEventBacklog } from './ledger/events.js';
import { countOutboxBacklog, oldestPendingConversion, oldestUnpostedConversion } from './ledger/conversions.js';
import type { Ledger } from './ledger/db.js';
import { openCheckedLedger } from './commands/schema-check.js';
import { listenFailure } from './commands/command-error.js';
import { createTransactionQueue } from './ledger/transaction-queue.js';
import { createLogger } from './observability/logger.js';
import { createOperatorBackend } from './operator/create-backend.js';
import { startCreditOutbox } from './operator/credit-outbox.js';
import { registerCreditMetrics } from './operator/credit-metrics.js';
import { countCreditBacklog } from './ledger/credit-delivery.js';
import { countParkedReceiptsByProvider } from './ledger/receipts.js';
import { readBuildInfo } from './observability/build-info.js';
import { metricsRoutes } from './observability/metrics-routes.js';
import { createGatewayMetrics, type GatewayMetrics } from './observability/metrics.js';
import { createTracing } from './observability/tracing.js';
import { createDispatcher } from './sms/dispatch.js';
import { createProviderRouter } from './provider-wrappers/registry.js';
import { createFailoverRoute } from './provider-wrappers/failover-route.js';
import { createFailoverHealth, type FailoverHealth } from './provider-wrappers/breakers.js';
import { withSenderRules } from './provider-wrappers/sender-rules.js';
import { createRecipientCheck } from './consents/suppression.js';
import { systemClock, type Clock } from './kit/clock.js';
import { withThrottle } from './provider-wrappers/throttle.js';
import { hasProviderLimits, registerInstanceMetric, startInstanceHeartbeat } from './provider-wrappers/shared-limits.js';
import { createProviderOptOuts } from './consents/opt-outs.js';
import { receiveInbound } from './consents/inbound.js';

export interface GatewayOptions {
  logger?: Logger;
  now?: () => number;
  /** Clock for the provider throttles' waits (tests move time by hand); defaults to real timers over `now`. */
  clock?: Clock;
  /**
   * false (`serve --no-migrate`): the schema must already be current (a `migrate` Job ran first); start-up fails,
   * naming the pending migrations, instead of running them under a liveness probe.
   */
  migrate?: boolean;
}

export interface Gateway {
  /** Where this process listens, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Base of the URLs handed to providers (server.public_url, or `url`). */
  publicUrl: string;
  /** Where /metrics is served when metrics.port is set (a listener of its own), e.g. http://127.0.0.1:9464. */
  metricsUrl?: string;
  ledger: Ledger;
  /** The API port's mounted routes (method, path, handlers): test/route-docs.test.ts holds them to the OpenAPI document. */
  routes: Hono['routes'];
  /** This gateway's Prometheus registry and counters (served at /metrics). */
  metrics: GatewayMetrics;
  /** Runs the unknown-timeout sweep and parked-receipt matching now (it also runs every delivery.sweep_interval). */
  sweep(): Promise<SweepResult>;
  /** Runs one retention pass now (it also runs every retention.interval). */
  retention(): Promise<RetentionResult>;
  close(): Promise<void>;
}

export interface FailoverWiring {
  /** The circuit breakers of every route member (/metrics, the console and the receipt path read them). */
  health: FailoverHealth;
  /** The receipt URL for a message sent through a member: the one dispatch would build for it. */
  callbackUrl(member: string, smsId: string): string;
}

/** The intake behind ProviderDeps.deliverReceipts and deliverInbound, by provider name. */
export interface PushedIntake {
  receipts(provider: string, events: ReceiptEvent[], limits?: { maxParked?: number }): Promise<void>;
  inbound(provider: string, message: InboundSms): Promise<void>;
}

export function createProviders(
  config: Readonly<Config>,
  logger: Logger,
  now: () => number,
  clock: Clock = systemClock(now),
  processSecret?: Buffer,
  failover: FailoverWiring = { health: createFailoverHealth(now), callbackUrl: (member, smsId) => buildCallbackUrl('', member, smsId) },
  /** Where plugins that receive receipts or players' messages over their own connection (SMPP) hand them in. */
  pushed?: PushedIntake,
  /** The live instances on the database, which split each provider's limits (src/provider-wrappers/shared-limits.ts). */
  instances?: () => number,
): SmsProvider[] {
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
            deliverReceipts: (events: ReceiptEvent[], limits?: { maxParked?: number }) => pushed.receipts(name, events, limits),
            deliverInbound: (message: InboundSms) => pushed.inbound(name, message),
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
    built.set(name, withSenderRules(throttled, providerConfig.senders, config.sms.sender_name_wins));
  }
  // Failover routes over the members built above (a route's members are never routes: checkFailoverRouteMembers).
  for (const [name, providerConfig] of Object.entries(config.providers)) {
    if (providerConfig.type !== 'route') continue;
    built.set(name, createFailoverRoute(name, providerConfig, { members: built, health: failover.health, callbackUrl: failover.callbackUrl }));
  }
  return Object.keys(config.providers).map((name) => built.get(name)!);
}

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config.log.level);
  const now = options.now ?? Date.now;
  // The schema as serve needs it (src/commands/schema-check.ts): migrated, or checked with --no-migrate.
  const noMigrate = options.migrate === false;
  const checked = await openCheckedLedger(config.database, noMigrate ? 'no-migrate' : 'migrate', noMigrate ? 'serve --no-migrate' : 'serve', {
    logger,
    backgroundCheckpoints: { logger },
  });
  if (checked.notice) logger.warn(checked.notice);
  const { ledger } = checked;
  const { db } = ledger;
  // Loaded only when observability.tracing.enabled: otherwise no OpenTelemetry module is imported (docs/tracing.md).
  const tracing = await createTracing(config, logger);

  // Keys drawn at random when none is configured (sandbox receipts, OAuth tokens): one per process.
  const processSecret = randomBytes(32);
  let publicUrl = config.server.public_url?.replace(/\/$/, '') ?? '';
  const callbackUrl = (provider: string, smsId: string) => buildCallbackUrl(publicUrl, provider, smsId);
  const failoverHealth = createFailoverHealth(now, logger);
  // Receipts pushed by a plugin (SMPP deliver_sm) join the same batched intake as /dlr, wired below; one that
  // arrives before then is refused, and the SMSC offers it again.
  let pushedIntake: PushedIntake | undefined;
  const pushed: PushedIntake = {
    async receipts(provider, events, limits) {
      if (!pushedIntake) throw new Error('the receipt intake is not ready yet');
      await pushedIntake.receipts(provider, events, limits);
    },
    async inbound(provider, message) {
      if (!pushedIntake) throw new Error('the inbound intake is not ready yet');
      await pushedIntake.inbound(provider, message);
    },
  };
  // Only a provider with a limit needs to know how many instances share it.
  const heartbeat = hasProviderLimits(config)
    ? await startInstanceHeartbeat({
        db,
        now,
        intervalMs: config.server.instance_heartbeat,
        expiryMs: config.server.instance_expiry,
        logger,
      })
    : undefined;
  const providers = createProviders(config, logger, now, options.clock, processSecret, { health: failoverHealth, callbackUrl }, pushed, heartbeat?.instances);
  // Scrape-time reads: on the read connection, so a scrape never waits behind a write (src/ledger/db.ts).
  const metrics = createGatewayMetrics(
    Object.keys(config.providers),
    {
      countOutboxBacklog: () => countOutboxBacklog(ledger.readDb),
      countParkedReceipts: () => countParkedReceiptsByProvider(ledger.readDb),
      oldestUnpostedConversion: () => oldestUnpostedConversion(ledger.readDb),
      oldestPendingConversion: () => oldestPendingConversion(ledger.readDb),
      now,
    },
    readBuildInfo(),
  );
  failoverHealth.registerMetrics(metrics.registry);
  if (heartbeat) registerInstanceMetric(metrics.registry, heartbeat.instances);
  const observers = { metrics, logger };
  const router = createProviderRouter(
    providers.map((provider) => ({ provider, aliases: config.providers[provider.name]!.aliases })),
    config.sms.default_provider,
  );

  // The ledger's one grouping layer: sends, receipts, the conversion outbox's claims and marks and accepted CRM
  // events share its commits.
  const ledgerWrites = createTransactionQueue(db);
  const webhook = createWebhookClient(config.crm);
  const conversionOutbox =
    config.delivery.worker && webhook.url
      ? startConversionOutbox({ db, flags: ledger.flags, webhook, delivery: config.delivery, logger, now, metrics, tracing })
      : undefined;
  if (config.delivery.worker && !webhook.url) logger.warn('crm.webhook_url is not set: conversions wait in the outbox');
  const reported = (count: number) => count > 0 && conversionOutbox?.wake();

  // Real-time events to the CRM (docs/relay.md): delivered like conversions; claims keep instances apart.
  const eventMetrics = registerEventMetrics(metrics.registry, () => countEventBacklog(ledger.readDb), now);
  const eventTransport = config.relay.worker ? createEventTransport(config.crm.integration, tracing) : undefined;
  const eventDestinations = createDestinations(config.crm.integration);
  const untyped = [...eventDestinations.byStoredType.values()].filter((r) => r.channel === 'integration' && !r.typeKnown).map((r) => r.kind);
  if (eventTransport && eventDestinations.queue && untyped.length > 0) {
    logger.warn(
      { kinds: untyped },
      'no queue type name is documented for these events: set crm.integration.events.<kind>.type, or they are dead-lettered (docs/events.md)',
    );
  }
  const eventOutbox = eventTransport
    ? startEventOutbox({
        db,
        flags: ledger.flags,
        transport: eventTransport,
        destinations: eventDestinations,
        relay: config.relay,
        logger,
        now,
        onSent: eventMetrics.eventsSent,
        onDead: eventMetrics.eventsDead,
        onNotRouted: eventMetrics.eventsNotRouted,
      })
    : undefined;
  if (config.relay.worker && !eventTransport && config.relay.api_keys.length > 0) {
    logger.warn('crm.integration has no url (or rabbitmq, kafka): relayed events wait in the outbox');
  }

  // Credits of the sql backend pushed to the operator's bonus engine or wallet (docs/operator-api.md).
  const creditMetrics = registerCreditMetrics(metrics.registry, () => countCreditBacklog(ledger.readDb));
  const creditsUrl = config.operator.credits.url;
  const creditOutbox =
    config.operator.backend === 'sql' && creditsUrl
      ? startCreditOutbox({
          db,
          flags: ledger.flags,
          credits: { ...config.operator.credits, url: creditsUrl },
          logger,
          now,
          onDelivered: creditMetrics.delivered,
          onDead: creditMetrics.dead,
        })
      : undefined;

  const receipts = createReceiptIntake({
    queue: ledgerWrites,
    now,
    logger,
    metrics,
    maxReceiptsPerMessage: config.delivery.max_receipts_per_message,
    observeReceipt: failoverHealth.observeReceipt,
    onReported: reported,
    tracing,
  });
  const operatorBackend = createOperatorBackend(config.operator, db, now, config.database, ledger.readDb);
  const recipients = createRecipientCheck(config, operatorBackend, now, logger);
  const dispatcher = createDispatcher({
    db,
    queue: ledgerWrites,
    logger,
    now,
    storeContent: config.ledger.store_content,
    repeatTimings: { dispatchLeaseMs: config.sms.dispatch_lease, ambiguousRetryAfterMs: config.sms.ambiguous_retry_after },
    sendTimeoutMs: config.sms.send_timeout,
    callbackUrl,
    metrics,
    recipients,
    onRecipientOptedOut: createProviderOptOuts({ db, backend: operatorBackend, recipients, now, logger }),
    onRecorded: (trx, tally, records) => receipts.rematchAfterSend(trx, tally, records),
    tracing,
  });

  // The same inbound handling as /mo/{provider} (src/consents/routes.ts), for messages a plugin receives itself.
  const inboundDeps = {
    db,
    backend: config.operator.backend,
    storeContent: config.ledger.store_content,
    keywords: { optOut: config.sms.opt_out_keywords, optIn: config.sms.opt_in_keywords },
    recipients,
    now,
    logger,
  };
  const receiveInboundSms = (provider: string, sms: InboundSms) => receiveInbound(inboundDeps, provider, sms);
  pushedIntake = {
    receipts: async (provider, events, limits) => void (await receipts.storePushed(provider, events, limits)),
    inbound: async (provider, message) => void (await receiveInboundSms(provider, message)),
  };

  const app = createApp({
    config,
    db,
    readDb: ledger.readDb,
    operatorBackend,
    router,
    dispatcher,
    logger,
    now,
    publicUrl: () => publicUrl,
    processSecret,
    storeReceipts: receipts.store,
    receiveInbound: receiveInboundSms,
    onReplay: () => conversionOutbox?.wake(),
    transact: ledgerWrites.transact,
    onEventsQueued: () => eventOutbox?.wake(),
    onCreditsReplay: () => creditOutbox?.wake(),
    metrics,
    recipients,
    circuits: () => failoverHealth.snapshot(),
    tracing,
  });

  const metricsServer = config.metrics.port === undefined ? undefined : await startMetricsServer(config, metrics);
  const { request_timeout: requestTimeout, headers_timeout: headersTimeout, keep_alive_timeout: keepAliveTimeout } = config.server;
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve(
      {
        fetch: app.fetch,
        port: config.server.port,
        hostname: config.server.host,
        // A client that sends slower than this is cut off (408), so a trickle cannot hold a connection for minutes.
        // node:http checks the deadlines every connectionsCheckingInterval (its default 30 s): half the shorter one.
        serverOptions: {
          requestTimeout,
          headersTimeout,
          keepAliveTimeout,
          connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(Math.min(requestTimeout, headersTimeout) / 2))),
        },
      },
      () => resolve(s),
    );
    // A port in use or not allowed: one line naming the key (src/commands/command-error.ts), not an unhandled 'error'.
    s.once('error', (error) => reject(listenFailure({ port: 'server.port', host: 'server.host' }, config.server.host, config.server.port, error)));
    (s as { maxConnections?: number }).maxConnections = config.server.max_connections;
  });
  const url = listenerUrl(server, config.server.host);
  const metricsUrl = metricsServer && listenerUrl(metricsServer, config.metrics.host ?? config.server.host);
  publicUrl ||= url;

  const lookupOptions = { providers: new Map(providers.map((p) => [p.name, p])), timeoutMs: config.sms.send_timeout, batch: 200 };
  const sweep = async () => {
    const result = await runSweep(db, now(), config.delivery, observers, config.sms.dispatch_lease, lookupOptions);
    reported(result.unknown + result.rematched);
    return result;
  };
  const sweepTimer = setInterval(() => {
    sweep().catch((error: unknown) => logger.error({ err: error }, 'sweep failed'));
  }, config.delivery.sweep_interval);
  sweepTimer.unref();
  // Old rows go off the request path, a small transaction at a time (src/delivery/retention.ts).
  const retention = createRetention({ db, settings: config.retention, now, metrics, logger });
  const retentionTimer = setInterval(() => {
    retention.runPass().catch((error: unknown) => logger.error({ err: error }, 'retention pass failed'));
  }, config.retention.interval);
  retentionTimer.unref();

  logger.info(
    {
      url,
      ...(metricsUrl ? { metrics_url: metricsUrl } : {}),
      public_url: publicUrl,
      database: ledger.flags.kind,
      providers: providers.map((p) => p.name),
      worker: Boolean(conversionOutbox),
    },
    'gateway listening',
  );

  return {
    url,
    publicUrl,
    ...(metricsUrl ? { metricsUrl } : {}),
    ledger,
    routes: app.routes,
    metrics,
    sweep,
    retention: () => retention.runPass(),
    async close() {
      clearInterval(sweepTimer);
      clearInterval(retentionTimer);
      // Requests in flight answer now: what was sent is successful, the rest transient for the CRM to retry.
      dispatcher.stopSending();
      // Provider calls still under way at half the budget (a provider that hangs) are abandoned, their messages
      // left uncertain, so the requests waiting for them are answered before the connections are closed.
      const abandonTimer = setTimeout(() => dispatcher.abandonInFlight(), config.server.shutdown_timeout / 2);
      let step = 'closing the providers';
      const steps = (async () => {
        // Providers first, while the server still listens: the sandbox posts its pending receipts on close.
        await Promise.allSettled([...providers.map((p) => p.close?.()), operatorBackend.close()]);
        step = 'finishing open requests';
        await new Promise<void>((resolve) => {
          // Keep-alive connections would hold close() open for their idle timeout (server.keep_alive_timeout): close
          // the idle ones now, and each busy one as soon as its answer is out.
          const closeIdle = () => (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
          const sweep = setInterval(closeIdle, 50);
          server.close(() => {
            clearInterval(sweep);
            resolve();
          });
          closeIdle();
        });
        // A scrape reads the ledger: the metrics listener stops before the ledger closes.
        if (metricsServer) {
          (metricsServer as { closeAllConnections?: () => void }).closeAllConnections?.();
          await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
        }
        step = 'stopping the conversion outbox';
        await conversionOutbox?.stop();
        step = 'stopping the credit outbox';
        await creditOutbox?.stop();
        step = 'stopping the event outbox';
        // A round waits for its sends; past a quarter of the shutdown budget they are cut off (and retried later).
        const cutOff = setTimeout(() => eventTransport?.abort(), config.server.shutdown_timeout / 4);
        await eventOutbox?.stop();
        clearTimeout(cutOff);
        await eventTransport?.close();
        step = 'closing the webhook client';
        await webhook.close();
        step = 'exporting the last spans';
        await tracing.shutdown();
        step = 'leaving the instance count';
        await heartbeat?.stop();
        step = 'closing the ledger';
        await ledger.close();
      })();
      // Whatever hangs (a provider that never answers, a client that never finishes), the process must still stop:
      // every accepted message is already committed, so giving up loses nothing the ledger holds.
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          reject(new Error(`shutdown still ${step} after server.shutdown_timeout (${config.server.shutdown_timeout} ms)`));
        }, config.server.shutdown_timeout);
      });
      try {
        await Promise.race([steps, deadline]);
      } finally {
        clearTimeout(timer);
        clearTimeout(abandonTimer);
      }
    },
  };
}

/** The URL a listener answers on; a wildcard address is reached through loopback. */
function listenerUrl(server: ServerType, configuredHost: string): string {
  const { port } = server.address() as AddressInfo;
  const host = configuredHost === '0.0.0.0' || configuredHost === '::' ? '127.0.0.1' : configuredHost;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** metrics.port: /metrics (same auth rule as on the API port) on a listener that answers nothing else. */
async function startMetricsServer(config: Readonly<Config>, metrics: GatewayMetrics): Promise<ServerType> {
  const app = metricsRoutes({ registry: metrics.registry, adminKey: config.admin.api_key, public: config.metrics.public });
  const host = config.metrics.host ?? config.server.host;
  return new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: config.metrics.port!, hostname: host }, () => resolve(s));
    const keys = { port: 'metrics.port', host: config.metrics.host === undefined ? 'server.host' : 'metrics.host' };
    s.once('error', (error) => reject(listenFailure(keys, host, config.metrics.port!, error)));
  });
}
