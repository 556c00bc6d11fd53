/**
 * Sends events over HTTP: to the CRM's Integration API ({crm.integration.url}{path}, the headers of
 * crm.integration.headers) or, for push conversions, to its webhook with Basic auth (create-transport.ts), on a pool
 * of the receivers' one HTTP client (src/http/outbound.ts) with at most max_connections in flight and the deadline of
 * crm.integration.timeout.
 */
import type { OutboundClient } from '../http/outbound.js';
import { outcomeOfAnswer } from '../outbox/outcome.js';
import { parseRetryAfter, type EventTransport } from './transport.js';

export interface HttpTransportOptions {
  url: string;
  headers: Record<string, string>;
  timeout: number;
  max_connections: number;
  now?: () => number;
}

export function createHttpTransport(options: HttpTransportOptions, http: OutboundClient): EventTransport {
  const base = options.url.replace(/\/+$/, '');
  const { origin, pathname } = new URL(base);
  const prefix = pathname.replace(/\/+$/, '');
  const { timeout } = options;
  const now = options.now ?? Date.now;
  const pool = http.pool({ connections: options.max_connections, timeout, timeoutMessage: `no answer within crm.integration.timeout (${timeout} ms)` });
  const headers = { ...options.headers, 'content-type': 'application/json' };
  const words = {
    answered: (status: number, body: string) => `CRM answered ${status}: ${body}`,
    unanswered: (e: Error & { code?: string }) => `CRM unreachable: ${e.code ?? e.name}: ${e.message}`,
  };
  const retryAfterMs = (value: string | undefined) => parseRetryAfter(value, now());
  return {
    target: base,
    async send(event) {
      const answer = await pool.send({
        origin,
        path: prefix + event.path,
        method: event.method,
        // Idempotency-Key: the event's id, the same on every attempt, for a receiver that wants to drop repeats.
        headers: { ...headers, 'idempotency-key': event.event_id },
        body: event.payload_json,
      });
      return outcomeOfAnswer(answer, words, retryAfterMs);
    },
    abort: () => pool.abort(),
    // The pool is the HTTP client's, closed by whoever made the client.
    close: async () => {},
  };
}
