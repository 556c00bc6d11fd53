/** Builds the Hono app from its parts. No I/O here: the caller opens the ledger, creates providers and listens. */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { InboundSms } from '../providers/types.js';
import type { Config } from './config/schema.js';
import { inboundAdminRoutes, inboundRoutes } from './consents/routes.js';
import { consoleRoutes } from './console/routes.js';
import { eventAdminRoutes } from './events/admin-routes.js';
import { relayRoutes } from './events/routes.js';
import { resolveCatalogue } from './crm/event-catalogue.js';
import { deliveryAdminRoutes } from './delivery/admin-routes.js';
import { describeReceiptChecks } from './delivery/receipt-checks.js';
import type { ReceiptSummary, ReceiptInput } from './delivery/apply-receipts.js';
import { receiptRoutes } from './delivery/routes.js';
import type { Database } from './ledger/schema.js';
import { createAllowedMethods } from './http/method-not-allowed.js';
import { documentedRoutes } from './http/route-table.js';
import { isOpenDoor } from './http/public-doors.js';
import { operatorErrorShape } from './http/operator-errors.js';
import type { Transact } from './ledger/engine/transaction-queue.js';
import { accessLog } from './observability/access-log.js';
import { apiDocsRoutes } from './observability/api-docs-routes.js';
import { healthRoutes } from './observability/health.js';
import { adminRoutes } from './auth/admin.js';
import { createCallbackGuard } from './auth/callback-guard.js';
import { createFailureLimiter, limitFailedAuthentications, limitRefusedSessions } from './auth/failure-limit.js';
import { createOperatorAuth } from './auth/operator-auth.js';
import { createAddressSet } from './kit/address-blocks.js';
import type { OperatorBackend } from './operator/backend.js';
import { operatorAdminRoutes } from './operator/admin-routes.js';
import { operatorRoutes } from './operator/routes.js';
import { createSessionCheck } from './operator/session-check.js';
import type { GatewayMetrics } from './observability/metrics.js';
import { buildOpenApiDocument, readPackageVersion } from './observability/openapi.js';
import { requestContext, requestLogger } from './observability/request-context.js';
import type { Tracing } from './observability/tracing.js';
import type { Wake } from './outbox/wake.js';
import type { Dispatcher } from './sms/dispatch.js';
import type { ProviderRouter } from './provider-wrappers/registry.js';
import type { MemberHealthView } from './provider-wrappers/breakers.js';
import type { RecipientCheck } from './consents/suppression.js';
import { smsRoutes } from './sms/routes.js';
import { createIntakeNotices } from './sms/intake-notices.js';

export interface AppParts {
  config: Readonly<Config>;
  db: Kysely<Database>;
  /** The ledger's read connection (src/ledger/engine/db.ts): readiness and read-only views use it. */
  readDb: Kysely<Database>;
  router: ProviderRouter;
  dispatcher: Dispatcher;
  logger: Logger;
  now: () => number;
  publicUrl: () => string;
  /** Random bytes of this process, the key of what is signed without a configured secret. */
  processSecret: Buffer;
  storeReceipts: (inputs: ReceiptInput[]) => Promise<ReceiptSummary>;
  /** Inbound handling for /mo (STOP/START). */
  receiveInbound: (provider: string, sms: InboundSms) => Promise<unknown>;
  /** Tells a kind's outbox to look at once: rows were queued (accepted events) or replayed (src/outbox/wake.ts). */
  wake: Wake;
  /** The operator endpoints' data source; built from config.operator when absent (the caller then cannot close it). */
  operatorBackend: OperatorBackend;
  /** The request counters and the intake notices' metrics. */
  metrics?: GatewayMetrics;
  /**
   * GET /metrics (src/observability/metrics-routes.ts), built once by src/gateway.ts: mounted here, or served on its
   * own listener when metrics.port is set and documented here either way. Without it there is no /metrics.
   */
  metricsApp?: Hono;
  /** Route members' circuit breakers, for the console. */
  circuits?: () => MemberHealthView[];
  /** sms.suppression's player lookups, told when an inbound STOP or START changes a player. */
  recipients?: RecipientCheck;
  /** Shared commits for accepted relay events; a queue of its own when absent. */
  transact: Transact;
  /** A SERVER span for every request when tracing is on (docs/tracing.md). */
  tracing?: Tracing;
}

/**
 * The reference's sections in this order: Swagger UI (/docs) and its <noscript> rendering group the operations by
 * tag, in the order the document lists the tags. Mounting order decides only the order within a section.
 */
const REFERENCE_ORDER = ['operations', 'sms', 'receipts', 'admin', 'operator', 'operator admin', 'events', 'console'];
const sectionOf = (tag: string) => (REFERENCE_ORDER.includes(tag) ? REFERENCE_ORDER.indexOf(tag) : REFERENCE_ORDER.length);
const inReferenceOrder = <R extends { tag: string }>(routes: R[]): R[] => routes.sort((a, b) => sectionOf(a.tag) - sectionOf(b.tag));

export function createApp(parts: AppParts): Hono {
  const { config, logger } = parts;
  const app = new Hono();
  const { readDb } = parts;
  // Outermost when tracing is on: a SERVER span for every request, whoever answers it (docs/tracing.md).
  if (parts.tracing?.enabled) app.use('*', parts.tracing.requests(createAddressSet(config.server.trusted_proxies)));
  // First, so that every answer (413s and 404s too) carries a request id and is counted.
  app.use('*', requestContext(parts.metrics));
  // Next, so that its duration covers everything else; not mounted at all when off (log.access).
  if (config.log.access.enabled) app.use('*', accessLog(config.log.access, logger));
  // Next, so that every error of the operator API, whoever answers it, has the CRM's {error, code} shape.
  app.use('*', operatorErrorShape());

  // Hono's bodyLimit wraps every body in a web stream (a Request object, an AbortController and a stream per
  // request); checking Content-Length first keeps that cost for the rare request sent without one. The open doors
  // (isOpenDoor, src/http/public-doors.ts) face the internet, and their honest bodies are small (a 4 MB form there
  // cost seconds of parsing, docs/public-doors.md), so theirs is server.callback_body_limit: far below any other.
  const bodyLimits = [
    { limit: config.server.callback_body_limit, key: 'server.callback_body_limit' },
    { limit: config.server.body_limit_bytes, key: 'server.body_limit_bytes' },
  ].map(({ limit, key }) => {
    const tooLarge = (c: Context) => c.json({ error: `body is larger than ${limit} bytes (${key})`, code: 413 }, 413);
    return { limit, tooLarge, streaming: bodyLimit({ maxSize: limit, onError: tooLarge }) };
  });
  app.use('*', async (c, next) => {
    c.set('maxJsonDepth', config.server.max_json_depth);
    const { limit, tooLarge, streaming } = bodyLimits[isOpenDoor(c.req.path) ? 0 : 1]!;
    const declared = c.req.header('content-length');
    if (declared === undefined) return streaming(c, next);
    if (Number(declared) > limit) return tooLarge(c);
    await next();
  });

  // Before every credential check: an address that failed too often is answered 429 without trying again.
  const trust = { isTrustedProxy: createAddressSet(config.server.trusted_proxies), isTrustedClient: createAddressSet(config.auth.trusted_addresses) };
  app.use('*', limitFailedAuthentications(createFailureLimiter(config.auth.failure_budget, config.auth.failure_window), parts.now, trust));

  app.route('/', healthRoutes(readDb, logger));
  app.route(
    '/channels/sms',
    smsRoutes({
      sms: config.sms,
      apiKeys: config.sms.api_keys ?? config.auth.api_keys,
      router: parts.router,
      dispatcher: parts.dispatcher,
      now: parts.now,
      notices: createIntakeNotices(parts.metrics, logger),
    }),
  );

  // The provider callbacks' forged signatures have a window of their own (src/auth/callback-guard.ts).
  const guard = createCallbackGuard({
    limiter: createFailureLimiter(config.auth.failure_budget, config.auth.failure_window),
    now: parts.now,
    trust,
    logger,
  });
  app.route(
    '/dlr',
    receiptRoutes({ router: parts.router, publicUrl: parts.publicUrl, store: parts.storeReceipts, maxEvents: config.delivery.max_receipt_events, guard }),
  );
  const receiptCheck = describeReceiptChecks(config.providers);
  const operatorBackend = parts.operatorBackend;
  app.route('/mo', inboundRoutes({ router: parts.router, publicUrl: parts.publicUrl, receive: parts.receiveInbound, guard }));
  // Operator API (docs/connecting-the-crm.md "Player data"): its own auth.mode; the SMS routes above keep X-Api-Key in every mode.
  const operatorAuth = createOperatorAuth(config.auth, parts.now, parts.processSecret);
  if (operatorAuth.tokenRoutes) app.route('/oauth', operatorAuth.tokenRoutes);
  app.route(
    '/',
    operatorRoutes({
      backend: operatorBackend,
      mode: config.auth.mode,
      sessionCheck: createSessionCheck(config.operator, parts.now),
      sessionLimit: limitRefusedSessions(
        createFailureLimiter(config.operator.session_failure_budget, config.operator.session_failure_window),
        parts.now,
        trust,
      ),
      auth: operatorAuth.middleware,
      logger,
      sendDeletedAt: config.operator.send_deleted_at,
    }),
  );
  // Real-time events to the CRM (docs/relay.md) from the operator's platform.
  app.route(
    '/relay',
    relayRoutes({
      apiKeys: config.relay.api_keys,
      routes: resolveCatalogue(config.crm.integration.events),
      transact: parts.transact,
      now: parts.now,
      referenceWindowMs: config.relay.reference_window,
      maxEventBytes: config.relay.max_event_bytes,
      maxDepth: config.relay.max_depth,
      wake: parts.wake,
    }),
  );
  // One /admin sub-app behind one guard (admin.api_key); each area (consents, delivery, operator, events) hands in its table.
  app.route(
    '/admin',
    adminRoutes(config.admin.api_key, [
      inboundAdminRoutes({ db: parts.db, readDb }),
      deliveryAdminRoutes({ db: parts.db, readDb, now: parts.now, wake: parts.wake, defaultRegion: config.sms.default_region, receiptCheck }),
      operatorAdminRoutes({ db: parts.db, readDb, backend: operatorBackend, now: parts.now, wake: parts.wake }),
      eventAdminRoutes({ db: parts.db, readDb, now: parts.now, wake: parts.wake }),
    ]),
  );
  // With metrics.port set, src/http/listeners.ts serves /metrics on that port only.
  if (parts.metricsApp && config.metrics.port === undefined) app.route('/', parts.metricsApp);
  const providerNames = Object.keys(config.providers);
  app.route(
    '/console',
    consoleRoutes({
      db: parts.db,
      readDb,
      adminKey: config.admin.api_key,
      secureCookie: config.server.environment === 'production',
      providers: providerNames,
      now: parts.now,
      wake: parts.wake,
      creditsOutbox: config.operator.credits.url !== undefined,
      circuits: parts.circuits,
      defaultRegion: config.sms.default_region,
      receiptCheck,
    }),
  );

  // Every area's routes carry their documentation (src/http/route-table.ts); the document is built from what is
  // mounted, on its first request, when every route is in the table. /metrics on its own port (metrics.port) is
  // documented from the same routes as served there.
  const metricsElsewhere = parts.metricsApp && config.metrics.port !== undefined ? parts.metricsApp.routes : [];
  const routeDocs = () => inReferenceOrder(documentedRoutes([...app.routes, ...metricsElsewhere]));
  const description = 'Operator-side SMS gateway for a gaming CRM: SMS sends, delivery receipts, conversions, the operator API and operations.';
  app.route(
    '/',
    apiDocsRoutes(() => buildOpenApiDocument(routeDocs(), { title: 'crm-sms-gateway', version: readPackageVersion(), description })),
  );

  // Read on first use, when every route above is in the table.
  let allowedMethods: ((path: string) => string[]) | undefined;
  app.notFound((c) => {
    allowedMethods ??= createAllowedMethods(app.routes);
    const allow = allowedMethods(c.req.path);
    if (allow.length > 0 && !allow.includes(c.req.method)) {
      c.header('Allow', allow.join(', '));
      return c.json({ error: `method ${c.req.method} is not allowed on ${c.req.path} (use ${allow.join(', ')})`, code: 405 }, 405);
    }
    return c.json({ error: `no route for ${c.req.method} ${c.req.path}`, code: 404 }, 404);
  });
  app.onError((error, c) => {
    requestLogger(c, logger).error({ err: error, method: c.req.method, path: c.req.path }, 'unhandled error');
    return c.json({ error: 'internal error; the request can be retried', code: 500 }, 500);
  });
  return app;
}
