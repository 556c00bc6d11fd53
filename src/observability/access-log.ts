/**
 * The access log (log.access): one pino line per request answered, with the method, the route pattern (never the
 * path: ids and phone numbers stay out, and lines group by route), the status, the duration, the request id and,
 * when tracing is on, the trace id. Never a body, a header, a query string or a client address. Off by default;
 * when on, answers of 500 and above are always written and the others at log.access.sample_rate.
 */
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { routeLabel } from './request-context.js';

/** Whether one answer is written: every server error, and the rest when the draw (0 ≤ draw < 1) falls under the rate. */
export function shouldLogRequest(status: number, sampleRate: number, draw: number): boolean {
  return status >= 500 || draw < sampleRate;
}

/** The trace id inside a W3C traceparent (`00-<trace id>-<span id>-<flags>`), set by traceRequests when tracing is on. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  return traceparent?.split('-')[1];
}

export function accessLog(settings: Config['log']['access'], logger: Logger, draw: () => number = Math.random): MiddlewareHandler {
  const { sample_rate: sampleRate } = settings;
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const status = c.res.status;
      if (shouldLogRequest(status, sampleRate, draw())) {
        const traceId = traceIdOf(c.get('traceparent'));
        logger.info(
          {
            method: c.req.method,
            route: routeLabel(c),
            status,
            duration_ms: Math.round((performance.now() - started) * 100) / 100,
            request_id: c.get('requestId'),
            ...(traceId ? { trace_id: traceId } : {}),
          },
          'request',
        );
      }
    }
  };
}
