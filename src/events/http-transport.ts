/**
 * Sends events over HTTP: to the CRM's Integration API ({crm.integration.url}{path}, the headers of
 * crm.integration.headers) or, for push conversions, to its webhook with Basic auth (create-transport.ts). A pooled
 * keep-alive client with at most max_connections in flight.
 */
import { Agent, request } from 'undici';
import { isDelivered, parseRetryAfter, type EventTransport, type SendOutcome } from './transport.js';

export interface HttpTransportOptions {
  url: string;
  headers: Record<string, string>;
  timeout: number;
  max_connections: number;
  now?: () => number;
}

/** How much of a refusal's body is kept with the event (its last_error is cut at 500 characters). */
const ANSWER_CHARS = 300;

export function createHttpTransport(options: HttpTransportOptions): EventTransport {
  const base = options.url.replace(/\/+$/, '');
  const { timeout } = options;
  const now = options.now ?? Date.now;
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: options.max_connections, headersTimeout: timeout, bodyTimeout: timeout });
  const headers = { ...options.headers, 'content-type': 'application/json' };
  return {
    target: base,
    async send(event): Promise<SendOutcome> {
      try {
        // Idempotency-Key: the event's id, the same on every attempt, for a receiver that wants to drop repeats.
        const res = await request(base + event.path, {
          method: event.method,
          dispatcher,
          // traceparent: the span of the request that queued the event, when tracing was on (docs/tracing.md).
          headers: event.traceparent
            ? { ...headers, 'idempotency-key': event.event_id, traceparent: event.traceparent }
            : { ...headers, 'idempotency-key': event.event_id },
          body: event.payload_json,
          signal: AbortSignal.timeout(timeout),
        });
        const text = await res.body.text();
        if (isDelivered(res.statusCode)) return { ok: true, status: res.statusCode };
        const retryAfter = res.headers['retry-after'];
        const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, now());
        const shown = text.length > ANSWER_CHARS ? `${text.slice(0, ANSWER_CHARS)}…` : text;
        return {
          ok: false,
          status: res.statusCode,
          error: `CRM answered ${res.statusCode}: ${shown}`,
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        };
      } catch (error) {
        const e = error as Error & { code?: string };
        return { ok: false, status: null, error: `CRM unreachable: ${e.code ?? e.name}: ${e.message}` };
      }
    },
    abort: () => void dispatcher.destroy(new Error('gateway stopping')).catch(() => {}),
    close: () => (dispatcher.destroyed ? Promise.resolve() : dispatcher.close()),
  };
}
