/** Wires the running gateway: ledger, providers, dispatcher, delivery worker, HTTP server. Used by `serve` and tests. */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Logger } from 'pino';
import { buildCallbackUrl } from '../providers/callback-url.js';
import { providerPlugins } from '../providers/index.js';
import type { ProviderPlugin, ReceiptEvent, SmsProvider } from '../providers/types.js';
import { createApp } from './app.js';
import { clusterMetricsRenderer, shareOfLimit, type ClusterRole } from './cluster.js';
import type { Config } from './config/schema.js';
import type { ReceiptInput } from './delivery/ingest.js';
import { createReceiptIntake } from './delivery/intake.js';
import { runSweep, type SweepResult } from './delivery/sweep.js';
import { createWebhookClient } from './delivery/webhook.js';
import { startConversionWorker } from './delivery/worker.js';
import { createEventTransport } from './events/create-transport.js';
import { registerEventMetrics } from './events/metrics.js';
import { startEventWorker } from './events/worker.js';
import { countEventBacklog } from './ledger/events.js';
import { countOutboxBacklog } from './ledger/conversions.js';
import { migrateToLatest, openLedger, type Ledger } from './ledger/db.js';
import { createTransactionQueue } from './ledger/transaction-queue.js';
import { createLogger } from './observability/logger.js';
import { createOperatorBackend } from './operator/create-backend.js';
import { countParkedReceiptsByProvider } from './ledger/receipts.js';
import { createGatewayMetrics, type GatewayMetrics } from './observability/metrics.js';
import { createTracing } from './observability/tracing.js';
import { createDispatcher } from './sms/dispatch.js';
import { createProviderRouter } from './sms/provider-router.js';
import { createRoute } from './sms/provider-route.js';
import { createRouteHealth, type RouteHealth } from './sms/route-health.js';
import { withSenderRules } from './sms/sender-rules.js';
import { createRecipientCheck } from './sms/suppression.js';
import { systemClock, type Clock } from './clock.js';
import { withThrottle } from './sms/throttle.js';
import { hasProviderLimits, registerInstanceMetric, startInstanceHeartbeat } from './sms/shared-limits.js';
import { createProviderOptOuts } from './consents/opt-outs.js';

export interface GatewayOptions {
  logger?: Logger;
  now?: () => number;
  /** Clock for the provider throttles' waits (tests move time by hand); defaults to real timers over `now`. */
  clock?: Clock;
  /** Set in a `server.workers` cluster (src/cluster.ts): worker 0 runs the host's once-only jobs. */
  cluster?: ClusterRole;
}

export interface Gateway {
  /** Where this process listens, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Base of the URLs handed to providers (server.public_url, or `url`). */
  publicUrl: string;
  ledger: Ledger;
  /** This gateway's Prometheus registry and counters (served at /metrics). */
  metrics: GatewayMetrics;
  /** Runs the unknown-timeout sweep and parked-receipt matching now (it also runs every delivery.sweep_interval). */
  sweep(): Promise<SweepResult>;
  close(): Promise<void>;
}

export interface RouteWiring {
  /** The circuit breakers of every route member (/metrics, the console and the receipt path read them). */
  health: RouteHealth;
  /** The receipt URL for a message sent through a member: the one dispatch would build for it. */
  callbackUrl(member: string, smsId: string): string;
}

export function createProviders(
  config: Readonly<Config>,
  logger: Logger,
  now: () => number,
  clock: Clock = systemClock(now),
  role?: ClusterRole,
  processSecret?: Buffer,
  routes: RouteWiring = { health: createRouteHealth(now), callbackUrl: (member, smsId) => buildCallbackUrl('', member, smsId) },
  /** Where plugins that receive receipts over their own connection (SMPP) hand them in. */
  deliverReceipts?: (provider: string, events: ReceiptEvent[]) => Promise<void>,
  /** The live instances on the database, which split each provider's limits (src/sms/shared-limits.ts). */
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
      ...(deliverReceipts ? { deliverReceipts: (events: ReceiptEvent[]) => deliverReceipts(name, events) } : {}),
    };
    const provider = plugin.create(name, providerConfig, deps);
    // One throttle per provider instance, shared by single and batch traffic (README "Providers"); with instances
    // heartbeating on the database, a share of the live ones' (docs/shared-limits.md); else a share per cluster worker.
    const maxConcurrency = instances ? providerConfig.max_concurrency : shareOfLimit(providerConfig.max_concurrency, role);
    const throttled = withThrottle(
      provider,
      {
        ratePerSecond: instances ? providerConfig.rate_per_second : shareOfLimit(providerConfig.rate_per_second, role),
        maxConcurrency: maxConcurrency && Math.ceil(maxConcurrency),
      },
      clock,
      instances,
    );
    built.set(name, withSenderRules(throttled, providerConfig.senders, config.sms.sender_name_wins));
  }
  // Routes over the members built above (a route's members are never routes: checkRouteMembers).
  for (const [name, providerConfig] of Object.entries(config.providers)) {
    if (providerConfig.type !== 'route') continue;
    built.set(name, createRoute(name, providerConfig, { members: built, health: routes.health, callbackUrl: routes.callbackUrl }));
  }
  return Object.keys(config.providers).map((name) => built.get(name)!);
}

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config.log.level);
  const now = options.now ?? Date.now;
  // Jobs a host needs once: in a cluster only worker 0 runs them (src/cluster.ts).
  const leader = !options.cluster || options.cluster.index === 0;
  const ledger = openLedger(config.database, { logger, backgroundCheckpoints: { logger, thread: leader } });
  const { db } = ledger;
  await migrateToLatest(db);
  // Loaded only when observability.tracing.enabled: otherwise no OpenTelemetry module is imported (docs/tracing.md).
  const tracing = await createTracing(config.observability.tracing, logger);

  // Keys drawn at random when none is configured (sandbox receipts, OAuth tokens): one per process, or per cluster.
  const processSecret = options.cluster?.secret ?? randomBytes(32);
  let publicUrl = config.server.public_url?.replace(/\/$/, '') ?? '';
  const callbackUrl = (provider: string, smsId: string) => buildCallbackUrl(publicUrl, provider, smsId);
  const routeHealth = createRouteHealth(now, logger);
  // Receipts pushed by a plugin (SMPP deliver_sm) join the same batched ingestion as /dlr, wired below; one that
  // arrives before then is refused, and the SMSC offers it again.
  let ingestPushed: ((inputs: ReceiptInput[]) => Promise<unknown>) | undefined;
  // Only a provider with a limit needs to know how many instances share it.
  const heartbeat = hasProviderLimits(config)
    ? await startInstanceHeartbeat({
        db,
        now,
        intervalMs: config.server.instance_heartbeat,
        expiryMs: config.server.instance_expiry,
        logger,
        atLeast: options.cluster?.count,
      })
    : undefined;
  const providers = createProviders(
    config,
    logger,
    now,
    options.clock,
    options.cluster,
    processSecret,
    { health: routeHealth, callbackUrl },
    async (provider, events) => {
      if (!ingestPushed) throw new Error('receipt ingestion is not ready yet');
      await ingestPushed(events.map((event) => ({ provider, event })));
    },
    heartbeat?.instances,
  );
  const metrics = createGatewayMetrics(Object.keys(config.providers), {
    countOutboxBacklog: () => countOutboxBacklog(db),
    countParkedReceipts: () => countParkedReceiptsByProvider(db),
  });
  routeHealth.registerMetrics(metrics.registry);
  if (heartbeat) registerInstanceMetric(metrics.registry, heartbeat.instances);
  const observers = { metrics, logger };
  const router = createProviderRouter(
    providers.map((provider) => ({ provider, aliases: config.providers[provider.name]!.aliases })),
    config.sms.default_provider,
  );

  // The ledger's one grouping layer: sends, receipts, the conversion worker's claims and marks and accepted CRM
  // events share its commits.
  const ledgerWrites = createTransactionQueue(db);
  const webhook = createWebhookClient(config.crm);
  const worker =
    leader && config.delivery.worker && webhook.url
      ? startConversionWorker({ db, flags: ledger.flags, webhook, delivery: config.delivery, logger, now, metrics, tracing })
      : undefined;
  if (leader && config.delivery.worker && !webhook.url) logger.warn('crm.webhook_url is not set: conversions wait in the outbox');
  const reported = (count: number) => count > 0 && worker?.wake();

  // Real-time events to the CRM (README "Sending events to the CRM"): delivered by the leader, like conversions; claims are safe anyway.
  const eventMetrics = registerEventMetrics(metrics.registry, () => countEventBacklog(db), now);
  const eventTransport = leader && config.relay.worker ? createEventTransport(config.crm.integration) : undefined;
  const eventWorker = eventTransport
    ? startEventWorker({ db, flags: ledger.flags, transport: eventTransport, relay: config.relay, logger, now, onSent: eventMetrics.eventsSent, onDead: eventMetrics.eventsDead })
    : undefined;
  if (leader && config.relay.worker && !eventTransport && config.relay.api_keys.length > 0) {
    logger.warn('crm.integration has no url (or rabbitmq): relayed events wait in the outbox');
  }

  const receipts = createReceiptIntake({ queue: ledgerWrites, now, logger, metrics, observeReceipt: routeHealth.observeReceipt, onReported: reported, tracing });
  const operatorBackend = createOperatorBackend(config.operator, db, now, config.database);
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
    onRecorded: (trx, records) => receipts.rematchAfterSend(trx, records),
    tracing,
  });

  ingestPushed = receipts.store;

  const app = createApp({
    config,
    db,
    operatorBackend,
    router,
    dispatcher,
    logger,
    now,
    publicUrl: () => publicUrl,
    processSecret,
    ingestReceipts: receipts.store,
    onReplay: () => worker?.wake(),
    transact: ledgerWrites.transact,
    onEventsQueued: () => eventWorker?.wake(),
    metrics,
    recipients,
    renderMetrics: options.cluster ? clusterMetricsRenderer(metrics.registry) : undefined,
    circuits: () => routeHealth.snapshot(),
    tracing,
  });

  const { request_timeout: requestTimeout, headers_timeout: headersTimeout, keep_alive_timeout: keepAliveTimeout } = config.server;
  const server: ServerType = await new Promise((resolve) => {
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
    (s as { maxConnections?: number }).maxConnections = config.server.max_connections;
  });
  const { port } = server.address() as AddressInfo;
  const host = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  publicUrl ||= url;

  const sweep = async () => {
    const result = await runSweep(db, now(), config.delivery, observers, config.sms.dispatch_lease);
    reported(result.unknown + result.rematched);
    return result;
  };
  const sweepTimer = leader
    ? setInterval(() => {
        sweep().catch((error: unknown) => logger.error({ err: error }, 'sweep failed'));
      }, config.delivery.sweep_interval)
    : undefined;
  sweepTimer?.unref();

  logger.info(
    { url, public_url: publicUrl, database: ledger.flags.kind, providers: providers.map((p) => p.name), worker: Boolean(worker) },
    'gateway listening',
  );

  return {
    url,
    publicUrl,
    ledger,
    metrics,
    sweep,
    async close() {
      clearInterval(sweepTimer);
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
        step = 'stopping the conversion worker';
        await worker?.stop();
        step = 'stopping the event worker';
        // A round waits for its sends; past a quarter of the shutdown budget they are cut off (and retried later).
        const cutOff = setTimeout(() => eventTransport?.abort(), config.server.shutdown_timeout / 4);
        await eventWorker?.stop();
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
