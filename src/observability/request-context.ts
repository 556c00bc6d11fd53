/**
 * Runs first on every request: gives it an id (the caller's X-Request-Id when it is a sane token, else a new
 * UUID), returns that id in the response header, and counts the answer by route pattern and status class.
 * Handlers read the id with `c.get('requestId')` and log through `requestLogger(c)`.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { Logger } from 'pino';
import type { HttpMetrics } from './metrics.js';

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
    /** Set on first use by requestLogger(): most requests never log, and a pino child costs a microsecond. */
    requestLogger: Logger;
    /** This request's SERVER span as a W3C traceparent, set only when tracing is on (Tracing.requests, otel.ts). */
    traceparent: string | undefined;
  }
}

/** Ids are echoed into headers and logs: refuse anything that could forge a log field or split a header. */
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export function chooseRequestId(given: string | undefined): string {
  return given && ACCEPTABLE_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * The pattern of the handler that answered (`/dlr/:provider`), never the path itself: ids in paths would make
 * one series per message. Middleware is registered for every method, handlers for theirs.
 */
export function routeLabel(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i]!.method !== 'ALL') return routes[i]!.path;
  }
  return 'unmatched';
}

export function requestLogger(c: Context, base: Logger): Logger {
  let logger = c.get('requestLogger');
  if (!logger) {
    logger = base.child({ request_id: c.get('requestId') });
    c.set('requestLogger', logger);
  }
  return logger;
}

export function requestContext(metrics?: HttpMetrics): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    const requestId = chooseRequestId(c.req.header('x-request-id'));
    c.set('requestId', requestId);
    // Served by node:http (@hono/node-server hands its ServerResponse in c.env): the header goes straight onto it,
    // and node merges it into whatever head the answer is written with. Through c.header() every answer would carry
    // a web Headers object that the adapter then copies back into a plain one (a few µs a request). Setting it on
    // c.res after the handler would be worse: the adapter then turns its cheap response into a full web Response.
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (outgoing && typeof outgoing.setHeader === 'function') outgoing.setHeader('X-Request-Id', requestId);
    else c.header('X-Request-Id', requestId);
    await next();
    const seconds = (performance.now() - started) / 1000;
    metrics?.httpRequest(c.req.method, routeLabel(c), c.res.status, seconds, c.get('authFailureLimited') === true, c.get('sessionRefused') === true);
  };
}
