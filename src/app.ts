/** Builds the Hono app from its parts. No I/O here: the caller opens the ledger, creates providers and listens. */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { receiveInbound } from './consents/inbound.js';
import { inboundAdminRouteDocs, inboundRouteDocs } from './consents/route-docs.js';
import { inboundAdminRoutes, inboundRoutes } from './consents/routes.js';
import { consoleRouteDocs } from './console/route-docs.js';
import { consoleRoutes } from './console/routes.js';
import { eventAdminRoutes } from './events/admin-routes.js';
import { eventRouteDocs } from './events/route-docs.js';
import { relayRoutes } from './events/routes.js';
import { adminRoutes } from './delivery/admin-routes.js';
import { describeReceiptChecks } from './delivery/receipt-checks.js';
import type { IngestSummary, ReceiptInput } from './delivery/ingest.js';
import { adminRouteDocs, receiptRouteDocs } from './delivery/route-docs.js';
import { receiptRoutes } from './delivery/routes.js';
import type { Database } from './ledger/schema.js';
import { createAllowedMethods } from './http/method-not-allowed.js';
import { createTransactionQueue, type Transact } from './ledger/transaction-queue.js';
import { apiDocsRoutes } from './observability/api-docs-routes.js';
import { healthRoutes } from './observability/health.js';
import { createFailureLimiter, limitFailedAuthentications } from './auth/failure-limit.js';
import { createOperatorAuth } from './auth/operator-auth.js';
import type { OperatorBackend } from './operator/backend.js';
import { operatorAdminRoutes } from './operator/admin-routes.js';
import { createOperatorBackend } from './operator/create-backend.js';
import { operatorAdminRouteDocs, operatorRouteDocs, oauthRouteDocs } from './operator/route-docs.js';
import { operatorRoutes } from './operator/routes.js';
import type { GatewayMetrics } from './observability/metrics.js';
import { metricsRoutes } from './observability/metrics-routes.js';
import { buildOpenApiDocument, readPackageVersion } from './observability/openapi.js';
import { requestContext, requestLogger } from './observability/request-context.js';
import type { Tracing } from './observability/tracing.js';
import { opsRouteDocs } from './observability/route-docs.js';
import type { Dispatcher } from './sms/dispatch.js';
import type { ProviderRouter } from './sms/provider-router.js';
import type { MemberHealthView } from './sms/route-health.js';
import type { RecipientCheck } from './sms/suppression.js';
import { smsRouteDocs } from './sms/route-docs.js';
import { smsRoutes } from './sms/routes.js';

export interface AppParts {
  config: Readonly<Config>;
  db: Kysely<Database>;
  router: ProviderRouter;
  dispatcher: Dispatcher;
  logger: Logger;
  now: () => number;
  publicUrl: () => string;
  /** Random bytes of this process (or cluster), the key of what is signed without a configured secret. */
  processSecret: Buffer;
  ingestReceipts: (inputs: ReceiptInput[]) => Promise<IngestSummary>;
  /** Called when dead conversions were replayed, so the worker looks at once. */
  onReplay: () => void;
  /** The operator endpoints' data source; built from config.operator when absent (the caller then cannot close it). */
  operatorBackend?: OperatorBackend;
  /** Without it there is no /metrics. */
  metrics?: GatewayMetrics;
  /** What /metrics answers, when not `metrics.registry` alone (a cluster worker serves every worker's). */
  renderMetrics?: () => Promise<string>;
  /** Route members' circuit breakers, for the console. */
  circuits?: () => MemberHealthView[];
  /** sms.suppression's player lookups, told when an inbound STOP or START changes a player. */
  recipients?: RecipientCheck;
  /** Shared commits for accepted relay events; a queue of its own when absent. */
  transact?: Transact;
  /** Called when events were queued or replayed, so the event worker looks at once. */
  onEventsQueued?: () => void;
  /** Request spans on the SMS and relay routes when tracing is on (docs/tracing.md). */
  tracing?: Tracing;
}

export function createApp(parts: AppParts): Hono {
  const { config, logger } = parts;
  const app = new Hono();
  // First, so that every answer (413s and 404s too) carries a request id and is counted.
  app.use('*', requestContext(parts.metrics));

  // Hono's bodyLimit wraps every body in a web stream (a Request object, an AbortController and a stream per
  // request); checking Content-Length first keeps that cost for the rare request sent without one.
  const limit = config.server.body_limit_bytes;
  const streamingLimit = bodyLimit({ maxSize: limit, onError: (c) => c.json({ error: `body is larger than ${limit} bytes (server.body_limit_bytes)` }, 413) });
  app.use('*', async (c, next) => {
    c.set('maxJsonDepth', config.server.max_json_depth);
    const declared = c.req.header('content-length');
    if (declared === undefined) return streamingLimit(c, next);
    if (Number(declared) > limit) return c.json({ error: `body is larger than ${limit} bytes (server.body_limit_bytes)` }, 413);
    await next();
  });

  // Before every credential check: an address that failed too often is answered 429 without trying again.
  app.use('*', limitFailedAuthentications(createFailureLimiter(config.auth.failure_budget, config.auth.failure_window), parts.now));

  app.route('/', healthRoutes(parts.db, logger));
  app.route(
    '/channels/sms',
    smsRoutes({
      sms: config.sms,
      apiKeys: config.sms.api_keys ?? config.auth.api_keys,
      router: parts.router,
      dispatcher: parts.dispatcher,
      now: parts.now,
      tracing: parts.tracing,
    }),
  );

  app.route('/dlr', receiptRoutes({ router: parts.router, publicUrl: parts.publicUrl, ingest: parts.ingestReceipts, maxEvents: config.delivery.max_receipt_events, logger }));
  const receiptCheck = describeReceiptChecks(config.providers);
  const inbound = { db: parts.db, backend: config.operator.backend, storeContent: config.ledger.store_content, recipients: parts.recipients, now: parts.now, logger };
  const keywords = { optOut: config.sms.opt_out_keywords, optIn: config.sms.opt_in_keywords };
  app.route('/admin', inboundAdminRoutes({ db: parts.db, adminKey: config.admin.api_key }));
  app.route('/mo', inboundRoutes({ router: parts.router, publicUrl: parts.publicUrl, logger, receive: (provider, sms) => receiveInbound({ ...inbound, keywords }, provider, sms) }));
  app.route('/admin', adminRoutes({ db: parts.db, adminKey: config.admin.api_key, now: parts.now, onReplay: parts.onReplay, defaultRegion: config.sms.default_region, receiptCheck }));
  // Operator API (README "Player data"): its own auth.mode; the SMS routes above keep X-Api-Key in every mode.
  const operatorBackend = parts.operatorBackend ?? createOperatorBackend(config.operator, parts.db, parts.now);
  const operatorAuth = createOperatorAuth(config.auth, parts.now, parts.processSecret);
  if (operatorAuth.tokenRoutes) app.route('/oauth', operatorAuth.tokenRoutes);
  app.route('/', operatorRoutes({ backend: operatorBackend, auth: operatorAuth.middleware, logger }));
  app.route('/admin', operatorAdminRoutes({ db: parts.db, backend: operatorBackend, adminKey: config.admin.api_key, now: parts.now }));
  // Real-time events to the CRM (README "Sending events to the CRM"): the relay for the operator's platform, and their admin view.
  const onEventsQueued = parts.onEventsQueued ?? (() => {});
  app.route(
    '/relay',
    relayRoutes({
      apiKeys: config.relay.api_keys,
      transact: parts.transact ?? createTransactionQueue(parts.db).transact,
      now: parts.now,
      referenceWindowMs: config.relay.reference_window,
      maxEventBytes: config.relay.max_event_bytes,
      maxDepth: config.relay.max_depth,
      onAccepted: onEventsQueued,
      tracing: parts.tracing,
    }),
  );
  app.route('/admin', eventAdminRoutes({ db: parts.db, adminKey: config.admin.api_key, now: parts.now, onReplay: onEventsQueued }));
  if (parts.metrics) {
    app.route('/', metricsRoutes({ registry: parts.metrics.registry, render: parts.renderMetrics, adminKey: config.admin.api_key, public: config.metrics.public }));
  }
  const providerNames = Object.keys(config.providers);
  app.route(
    '/console',
    consoleRoutes({
      db: parts.db,
      adminKey: config.admin.api_key,
      secureCookie: config.server.environment === 'production',
      providers: providerNames,
      now: parts.now,
      onReplay: parts.onReplay,
      onEventsReplay: onEventsQueued,
      circuits: parts.circuits,
      defaultRegion: config.sms.default_region,
      receiptCheck,
    }),
  );

  // Each area describes its routes beside them; a new area adds its list here.
  const routeDocs = [
    ...smsRouteDocs,
    ...receiptRouteDocs(),
    ...inboundRouteDocs(),
    ...inboundAdminRouteDocs,
    ...adminRouteDocs,
    ...opsRouteDocs({ metricsPublic: config.metrics.public }),
    ...consoleRouteDocs,
    ...(operatorAuth.tokenRoutes ? oauthRouteDocs() : []),
    ...operatorRouteDocs({ mode: config.auth.mode, backend: config.operator.backend }),
    ...operatorAdminRouteDocs({ backend: config.operator.backend }),
    ...eventRouteDocs,
  ];
  const description = 'Operator-side SMS gateway for a gaming CRM: SMS sends, delivery receipts, conversions, the operator API and operations.';
  app.route('/', apiDocsRoutes(() => buildOpenApiDocument(routeDocs, { title: 'crm-sms-gateway', version: readPackageVersion(), description })));

  // Read on first use, when every route above is in the table.
  let allowedMethods: ((path: string) => string[]) | undefined;
  app.notFound((c) => {
    allowedMethods ??= createAllowedMethods(app.routes);
    const allow = allowedMethods(c.req.path);
    if (allow.length > 0 && !allow.includes(c.req.method)) {
      c.header('Allow', allow.join(', '));
      return c.json({ error: `method ${c.req.method} is not allowed on ${c.req.path} (use ${allow.join(', ')})` }, 405);
    }
    return c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404);
  });
  app.onError((error, c) => {
    requestLogger(c, logger).error({ err: error, method: c.req.method, path: c.req.path }, 'unhandled error');
    return c.json({ error: 'internal error; the request can be retried' }, 500);
  });
  return app;
}
