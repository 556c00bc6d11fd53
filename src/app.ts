/**
 * The Hono app: the middleware every request passes (a span, the request id and counts, the access log, the CRM's
 * error shape, the body limits, the failed-authentication limit), the sub-apps src/gateway.ts built, mounted in the
 * order given, and what answers around them (/openapi.json and /docs, 404, 405, 500). No I/O and no decision here.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Logger } from 'pino';
import type { AddressTrust } from './auth/failure-limit.js';
import { createFailureLimiter, limitFailedAuthentications } from './auth/failure-limit.js';
import type { Config } from './config/schema.js';
import { createAllowedMethods } from './http/method-not-allowed.js';
import { operatorErrorShape } from './http/operator-errors.js';
import { isOpenDoor } from './http/public-doors.js';
import { documentedRoutes } from './http/route-table.js';
import { accessLog } from './observability/access-log.js';
import { apiDocsRoutes } from './observability/api-docs-routes.js';
import type { GatewayMetrics } from './observability/metrics.js';
import { buildOpenApiDocument, readPackageVersion } from './observability/openapi.js';
import { requestContext, requestLogger } from './observability/request-context.js';
import type { Tracing } from './observability/tracing.js';

export interface AppParts {
  config: Readonly<Config>;
  logger: Logger;
  now: () => number;
  /** Which proxies and clients are trusted with the caller's address (server.trusted_proxies, auth.trusted_addresses). */
  trust: AddressTrust;
  /** The request counters. */
  metrics?: GatewayMetrics | undefined;
  /** A SERVER span for every request when tracing is on (docs/tracing.md). */
  tracing?: Tracing | undefined;
  /** Each sub-app and where it is mounted, in this order. */
  mounts: ReadonlyArray<readonly [path: string, app: Hono]>;
  /** Routes served on another listener (/metrics on metrics.port), documented here with the others. */
  servedElsewhere?: Hono['routes'];
}

/**
 * The reference's sections in this order: Swagger UI (/docs) and its <noscript> rendering group the operations by
 * tag, in the order the document lists the tags. Mounting order decides only the order within a section.
 */
const REFERENCE_ORDER = ['operations', 'sms', 'receipts', 'admin', 'operator', 'operator admin', 'events', 'console'];
const sectionOf = (tag: string) => (REFERENCE_ORDER.includes(tag) ? REFERENCE_ORDER.indexOf(tag) : REFERENCE_ORDER.length);
const inReferenceOrder = <R extends { tag: string }>(routes: R[]): R[] => routes.sort((a, b) => sectionOf(a.tag) - sectionOf(b.tag));

export function createApp(parts: AppParts): Hono {
  const { config, logger, trust } = parts;
  const app = new Hono();
  // Outermost when tracing is on: a SERVER span for every request, whoever answers it (docs/tracing.md).
  if (parts.tracing?.enabled) app.use('*', parts.tracing.requests(trust.isTrustedProxy));
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
  app.use('*', limitFailedAuthentications(createFailureLimiter(config.auth.failure_budget, config.auth.failure_window), parts.now, trust));

  for (const [path, sub] of parts.mounts) app.route(path, sub);

  // Every area's routes carry their documentation (src/http/route-table.ts); the document is built from what is
  // mounted, on its first request, when every route is in the table. /metrics on its own port (metrics.port) is
  // documented from the same routes as served there.
  const routeDocs = () => inReferenceOrder(documentedRoutes([...app.routes, ...(parts.servedElsewhere ?? [])]));
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
