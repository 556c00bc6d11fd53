/**
 * Wires the running gateway: a list of parts, each made by a builder in its own area, which registers its stop step
 * beside its start (src/kit/shutdown.ts: the named steps under the one server.shutdown_timeout). Used by `serve` and
 * tests.
 */
import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { buildCallbackUrl } from '../providers/kit/callback-url.js';
import { createApp } from './app.js';
import type { Config } from './config/schema.js';
import { createInboundReceiver } from './consents/inbound.js';
import { createRecipientCheck } from './consents/suppression.js';
import { createReceiptIntake } from './delivery/intake.js';
import type { RetentionResult } from './delivery/retention.js';
import type { SweepResult } from './delivery/sweep.js';
import { startDeliveryTimers } from './delivery/timers.js';
import { startListeners } from './http/listeners.js';
import type { Clock } from './kit/clock.js';
import { createShutdown } from './kit/shutdown.js';
import type { Ledger } from './ledger/engine/ledger.js';
import { openCurrentLedger } from './ledger/engine/open-current.js';
import { createTransactionQueue } from './ledger/engine/transaction-queue.js';
import { createLogger } from './observability/logger.js';
import { metricsRoutes } from './observability/metrics-routes.js';
import { createLedgerMetrics } from './observability/ledger-metrics.js';
import type { GatewayMetrics } from './observability/metrics.js';
import { createTracing } from './observability/tracing.js';
import { startOperatorBackend } from './operator/create-backend.js';
import { startOutboxes } from './outboxes.js';
import { startProviderHealth, startProviders } from './provider-wrappers/providers.js';
import { startDispatcher } from './sms/dispatch.js';

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

export async function startGateway(config: Readonly<Config>, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? createLogger(config.log.level);
  const now = options.now ?? Date.now;
  const shutdown = createShutdown(config.server.shutdown_timeout, 'server.shutdown_timeout');
  const ledger = await openCurrentLedger(config.database, { logger, migrate: options.migrate !== false }, shutdown);
  const { db, readDb } = ledger;
  // Loaded only when observability.tracing.enabled: otherwise no OpenTelemetry module is imported (docs/tracing.md).
  const tracing = await createTracing(config, logger);
  shutdown.add('services', 'exporting the last spans', () => tracing.shutdown());
  const metrics = createLedgerMetrics(config, readDb, now);
  const providerHealth = await startProviderHealth(config, { db, logger, now, registry: metrics.registry }, shutdown);
  const outboxes = startOutboxes(config, { db, readDb, logger, now, metrics, tracing }, shutdown);
  const { wake } = outboxes;

  // Keys drawn at random when none is configured (sandbox receipts, OAuth tokens): one per process.
  const processSecret = randomBytes(32);
  // The base of the providers' receipt URLs: server.public_url, or the listener's address once it listens.
  let publicUrl = '';
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
  });
  const operatorBackend = startOperatorBackend(config, ledger, now, shutdown);
  const recipients = createRecipientCheck(config, operatorBackend, now, logger);
  const receiveInbound = createInboundReceiver(config, { db, recipients, now, logger });
  // What a plugin receives over its own connection (SMPP deliver_sm) joins the same intakes as /dlr and /mo.
  const pushed = { receipts: receipts.storePushed, inbound: receiveInbound };
  const providerDeps = { logger, now, clock: options.clock, processSecret, health: providerHealth, callbackUrl, pushed };
  const { providers, router } = startProviders(config, providerDeps, shutdown);
  const onRecorded = receipts.rematchAfterSend;
  const dispatcher = startDispatcher(
    config,
    { db, queue: ledgerWrites, logger, now, callbackUrl, metrics, recipients, tracing, backend: operatorBackend, onRecorded, providers },
    shutdown,
  );

  const metricsApp = metricsRoutes({ registry: metrics.registry, adminKey: config.admin.api_key, public: config.metrics.public });
  const app = createApp({
    config,
    db,
    readDb,
    operatorBackend,
    router,
    dispatcher,
    logger,
    now,
    processSecret,
    metrics,
    metricsApp,
    recipients,
    tracing,
    wake,
    publicUrl: () => publicUrl,
    storeReceipts: receipts.store,
    receiveInbound,
    transact: ledgerWrites.transact,
    circuits: () => providerHealth.failover.snapshot(),
  });
  const timers = startDeliveryTimers(
    config,
    { db, spaceCheckpoints: ledger.spaceCheckpoints, writesWaiting: ledgerWrites.busy, now, logger, metrics, providers, wake },
    shutdown,
  );
  const { logFields, ...urls } = await startListeners(config, { api: app.fetch, metrics: metricsApp.fetch }, shutdown);
  publicUrl = urls.publicUrl;

  const worker = outboxes.running('conversions');
  logger.info({ ...logFields, database: ledger.flags.kind, providers: providers.map((p) => p.name), worker }, 'gateway listening');
  return { ...urls, ledger, routes: app.routes, metrics, sweep: timers.sweep, retention: timers.retention, close: () => shutdown.run() };
}
