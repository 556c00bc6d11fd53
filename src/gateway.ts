/**
 * Wires the running gateway, and is the only place that does: a list of parts in the order they need each other,
 * each made by a builder in its own area, which registers its stop step beside its start (src/kit/shutdown.ts: the
 * named steps under the one server.shutdown_timeout), then every sub-app, built once and handed to src/app.ts to
 * mount. A builder that throws releases what the ones before it started: the stop steps registered so far run, as at
 * shutdown, and the error goes on to the caller (the CLI's one line). Used by `serve` and tests.
 */
import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { buildCallbackUrl } from '../providers/kit/callback-url.js';
import { createApp } from './app.js';
import { adminRoutes } from './auth/admin.js';
import { createCallbackGuard } from './auth/callback-guard.js';
import { type AddressTrust, createFailureLimiter, limitRefusedSessions } from './auth/failure-limit.js';
import { createOperatorAuth } from './auth/operator-auth.js';
import type { Config } from './config/schema.js';
import { createInboundReceiver } from './consents/inbound.js';
import { inboundAdminRoutes, inboundRoutes } from './consents/routes.js';
import { createRecipientCheck } from './consents/suppression.js';
import { costAdminRoutes } from './costs/admin-routes.js';
import { createCostBook } from './costs/cost-book.js';
import { priceFetches } from './costs/price-fetches-outbox.js';
import { consoleRoutes } from './console/routes.js';
import { resolveCatalogue } from './crm/event-catalogue.js';
import { deliveryAdminRoutes } from './delivery/admin-routes.js';
import { createReceiptIntake } from './delivery/intake.js';
import { describeReceiptChecks } from './delivery/receipt-checks.js';
import type { RetentionResult } from './delivery/retention.js';
import { receiptRoutes } from './delivery/routes.js';
import type { SweepResult } from './delivery/sweep.js';
import { startDeliveryTimers } from './delivery/timers.js';
import { relayRoutes } from './events/routes.js';
import { openListeners } from './http/listeners.js';
import { createAddressSet } from './kit/address-blocks.js';
import type { Clock } from './kit/clock.js';
import { createShutdown } from './kit/shutdown.js';
import type { Ledger } from './ledger/engine/ledger.js';
import { openCurrentLedger } from './ledger/engine/open-current.js';
import { createTransactionQueue } from './ledger/engine/transaction-queue.js';
import { healthRoutes } from './observability/health.js';
import { createLedgerMetrics } from './observability/ledger-metrics.js';
import { createLogger } from './observability/logger.js';
import { metricsRoutes } from './observability/metrics-routes.js';
import type { GatewayMetrics } from './observability/metrics.js';
import { createTracing } from './observability/tracing.js';
import { playerAdminRoutes } from './operator/players/admin-routes.js';
import { startOperatorBackend } from './operator/api/create-backend.js';
import { operatorRoutes } from './operator/api/routes.js';
import { createSessionCheck } from './operator/api/session-check.js';
import type { OutboxDescriptor } from './outbox/descriptor.js';
import { OUTBOXES, startOutboxes } from './outboxes.js';
import { startProviderHealth, startProviders } from './provider-wrappers/providers.js';
import { routingAdminRoutes } from './provider-wrappers/admin-routes.js';
import { startRouting, type ReloadResult } from './provider-wrappers/routing.js';
import { startDispatcher } from './sms/dispatch.js';
import { createIntakeNotices } from './sms/intake-notices.js';
import { smsAdminRoutes } from './sms/admin-routes.js';
import { heldSends } from './sms/held-sends-outbox.js';
import { smsRoutes } from './sms/routes.js';

/** The parts `serve` starts, in order: what GatewayOptions.afterStart is told. */
export type GatewayPart =
  | 'ledger'
  | 'tracing'
  | 'metrics'
  | 'listeners'
  | 'provider health'
  | 'outboxes'
  | 'receipt intake'
  | 'operator backend'
  | 'providers'
  | 'dispatcher'
  | 'timers'
  | 'app';

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
  /** The outbox kinds (src/outboxes.ts OUTBOXES); a test adds a kind of its own beside them. */
  outboxes?: readonly OutboxDescriptor[];
  /**
   * Told after each part started; what it throws fails the start-up there, as a builder's own error would (the test of
   * test/system/failed-start.test.ts makes each part fail in turn).
   */
  afterStart?: (part: GatewayPart) => void | Promise<void>;
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
  /** Takes a new configuration's routes and `routing` section (SIGHUP, src/cli.ts); refused, the old kept, when more changed. */
  reloadRouting(config: Readonly<Config>): ReloadResult;
  close(): Promise<void>;
}

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config.log.level);
  const shutdown = createShutdown(config.server.shutdown_timeout, 'server.shutdown_timeout');
  try {
    return await startParts(config, options, logger, shutdown);
  } catch (error) {
    // What started is released as at shutdown, each stop step beside its start; the start-up's error is the one told.
    await shutdown.run().catch((release: unknown) => logger.error({ err: release }, 'releasing a failed start-up'));
    throw error;
  }
}

async function startParts(config: Readonly<Config>, options: GatewayOptions, logger: Logger, shutdown: ReturnType<typeof createShutdown>): Promise<Gateway> {
  const now = options.now ?? Date.now;
  const started = async (part: GatewayPart) => options.afterStart?.(part);
  const outboxKinds = options.outboxes ?? OUTBOXES;

  const ledger = await openCurrentLedger(config.database, { logger, migrate: options.migrate !== false }, shutdown);
  await started('ledger');
  const { db, readDb } = ledger;
  // Loaded only when observability.tracing.enabled: otherwise no OpenTelemetry module is imported (docs/tracing.md).
  const tracing = await createTracing(config, logger);
  // A quarter of the shutdown's budget: the stages before it may have spent the rest, and spans are worth less than
  // the ledger closing cleanly after them.
  shutdown.add('services', 'exporting the last spans', () => tracing.shutdown(shutdown.budgetMs / 4));
  await started('tracing');
  const metrics = createLedgerMetrics(config, readDb);
  const metricsApp = metricsRoutes({ registry: metrics.registry, adminKey: config.admin.api_key, public: config.metrics.public });
  // Rate tables, budgets and their metrics: the claim, the record and the receipts keep each message's cost.
  const costs = createCostBook(config, metrics.registry, now);
  await started('metrics');
  // Listening before the parts that hand out its address (receipt URLs, the callbacks' signature checks); a request
  // that arrives before the app is built waits for it.
  const listeners = await openListeners(config, shutdown);
  const { publicUrl } = listeners;
  await started('listeners');
  const providerHealth = await startProviderHealth(config, { db, logger, now, registry: metrics.registry }, shutdown);
  await started('provider health');
  const outboxes = startOutboxes(config, { db, readDb, logger, now, tracing, registry: metrics.registry }, shutdown, outboxKinds);
  const { wake } = outboxes;
  await started('outboxes');

  // Keys drawn at random when none is configured (sandbox receipts, OAuth tokens): one per process.
  const processSecret = randomBytes(32);
  const callbackUrl = (provider: string, smsId: string) => buildCallbackUrl(publicUrl, provider, smsId);
  // The ledger's one grouping layer: sends, receipts and accepted CRM events share its commits.
  const ledgerWrites = createTransactionQueue(db);
  const receipts = createReceiptIntake({
    queue: ledgerWrites,
    now,
    logger,
    metrics,
    maxReceiptsPerMessage: config.delivery.max_receipts_per_message,
    observeReceipt: providerHealth.failover.observeReceipt,
    wake,
    tracing,
    costs,
  });
  await started('receipt intake');
  const operatorBackend = startOperatorBackend(config, { ledger, now }, shutdown);
  const recipients = createRecipientCheck(config, { backend: operatorBackend, now, logger });
  const receiveInbound = createInboundReceiver(config, { db, recipients, now, logger });
  await started('operator backend');
  // What a plugin receives over its own connection (SMPP deliver_sm) joins the same intakes as /dlr and /mo.
  const pushed = { receipts: receipts.storePushed, inbound: receiveInbound };
  const routing = await startRouting(
    config,
    { db, readDb, logger, now, registry: metrics.registry, priceOf: (provider, country) => costs.rates.perSegment(provider, country) },
    shutdown,
  );
  const providerDeps = { logger, now, clock: options.clock, processSecret, health: providerHealth, callbackUrl, pushed, routing };
  const { providers, router } = startProviders(config, providerDeps, shutdown);
  await started('providers');
  const dispatcher = startDispatcher(
    config,
    {
      db,
      queue: ledgerWrites,
      logger,
      now,
      callbackUrl,
      metrics,
      recipients,
      tracing,
      backend: operatorBackend,
      rematchAfterSend: receipts.rematchAfterSend,
      providers,
      costs,
      routing,
      router,
      wake,
      heldSends: outboxes.client(heldSends),
    },
    shutdown,
  );
  await started('dispatcher');
  // The price fetches' receiver: the providers' asks, now that they are built. Its asks end with the sends, before the
  // providers close (the outboxes' stage, which stops its loop, comes after theirs); the rest are asked next time.
  const priceAsks = outboxes.client(priceFetches);
  if (priceAsks) {
    priceAsks.bind({ providers, book: costs });
    shutdown.add('sends', "ending the price fetches' asks", () => priceAsks.abort());
  }
  const timers = startDeliveryTimers(
    config,
    { db, spaceCheckpoints: ledger.spaceCheckpoints, writesWaiting: ledgerWrites.busy, now, logger, metrics, providers, wake, costs },
    shutdown,
  );
  await started('timers');

  // The sub-apps, each built once, in the order they are mounted.
  const trust: AddressTrust = {
    isTrustedProxy: createAddressSet(config.server.trusted_proxies),
    isTrustedClient: createAddressSet(config.auth.trusted_addresses),
  };
  // The provider callbacks' forged signatures have a window of their own (src/auth/callback-guard.ts).
  const guard = createCallbackGuard({ limiter: createFailureLimiter(config.auth.failure_budget, config.auth.failure_window), now, trust, logger });
  const receiptCheck = describeReceiptChecks(config.providers);
  // Operator API (docs/connecting-the-crm.md "Player data"): its own auth.mode; the SMS routes keep X-Api-Key in every mode.
  const operatorAuth = createOperatorAuth(config.auth, now, processSecret);
  const providerNames = Object.keys(config.providers);
  const listDeps = { db, readDb, now, providers: providerNames };
  // What POST /admin/sms/preview and the console's preview page price a text with.
  const preview = { sms: config.sms, rates: costs.rates, providerNames };
  // With metrics.port set, src/http/listeners.ts serves /metrics on that port only.
  const metricsHere = config.metrics.port === undefined;
  const mounts: Array<readonly [string, Hono]> = [
    ['/', healthRoutes(readDb, logger)],
    [
      '/channels/sms',
      smsRoutes({
        sms: config.sms,
        apiKeys: config.sms.api_keys ?? config.auth.api_keys,
        router,
        dispatcher,
        now,
        notices: createIntakeNotices(metrics, logger),
      }),
    ],
    ['/dlr', receiptRoutes({ router, publicUrl, store: receipts.store, maxEvents: config.delivery.max_receipt_events, guard })],
    ['/mo', inboundRoutes({ router, publicUrl, receive: receiveInbound, guard })],
    ...(operatorAuth.tokenRoutes ? [['/oauth', operatorAuth.tokenRoutes] as const] : []),
    [
      '/',
      operatorRoutes({
        backend: operatorBackend,
        mode: config.auth.mode,
        sessionCheck: createSessionCheck(config.operator, now),
        sessionLimit: limitRefusedSessions(createFailureLimiter(config.operator.session_failure_budget, config.operator.session_failure_window), now, trust),
        auth: operatorAuth.middleware,
        logger,
        sendDeletedAt: config.operator.send_deleted_at,
      }),
    ],
    // Real-time events to the CRM (docs/relay.md) from the operator's platform.
    [
      '/relay',
      relayRoutes({
        apiKeys: config.relay.api_keys,
        routes: resolveCatalogue(config.crm.integration.events),
        transact: ledgerWrites.transact,
        now,
        referenceWindowMs: config.relay.reference_window,
        maxEventBytes: config.relay.max_event_bytes,
        maxDepth: config.relay.max_depth,
        wake,
      }),
    ],
    // One /admin sub-app behind one guard (admin.api_key): each area's table, then each outbox kind's.
    [
      '/admin',
      adminRoutes(config.admin.api_key, [
        inboundAdminRoutes({ db, readDb }),
        deliveryAdminRoutes({ db, readDb, defaultRegion: config.sms.default_region, receiptCheck }),
        playerAdminRoutes({ db, backend: operatorBackend, now }),
        costAdminRoutes({ readDb, now }),
        smsAdminRoutes(preview),
        routingAdminRoutes({ routing, adminKey: config.admin.api_key }),
        ...outboxKinds.map((outbox) => outbox.adminRoutes({ db, readDb, now, wake })),
      ]),
    ],
    ...(metricsHere ? [['/', metricsApp] as const] : []),
    [
      '/console',
      consoleRoutes({
        db,
        readDb,
        adminKey: config.admin.api_key,
        secureCookie: config.server.environment === 'production',
        providers: providerNames,
        now,
        wake,
        outboxes: outboxKinds.map((outbox) => ({ deadList: outbox.deadList(listDeps), panel: outbox.panel(config) })),
        circuits: () => providerHealth.failover.snapshot(),
        defaultRegion: config.sms.default_region,
        receiptCheck,
        preview,
        routing,
      }),
    ],
  ];
  const app = createApp({ config, logger, now, trust, metrics, tracing, mounts, servedElsewhere: metricsHere ? [] : metricsApp.routes });
  listeners.serve({ api: app.fetch, metrics: metricsApp.fetch });
  await started('app');

  const worker = outboxes.running('conversions');
  logger.info({ ...listeners.logFields, database: ledger.flags.kind, providers: providers.map((p) => p.name), worker }, 'gateway listening');
  const { url, metricsUrl } = listeners;
  return {
    url,
    publicUrl,
    ...(metricsUrl ? { metricsUrl } : {}),
    ledger,
    routes: app.routes,
    metrics,
    sweep: timers.sweep,
    retention: timers.retention,
    reloadRouting: (next) => routing.reload(next),
    close: () => shutdown.run(),
  };
}
