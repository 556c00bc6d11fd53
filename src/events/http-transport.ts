/**
 * Sends events to the CRM's Integration API: {crm.integration.url}{path}, the method the event arrived with, the
 * headers of crm.integration.headers, over a pooled keep-alive client with at most max_connections in flight.
 */
import { Agent, request } from 'undici';
import type { Config } from '../config/schema.js';
import { isDelivered, type EventTransport, type SendOutcome } from './transport.js';

export function createHttpTransport(integration: Config['crm']['integration'] & { url: string }): EventTransport {
  const base = integration.url.replace(/\/+$/, '');
  const timeout = integration.timeout;
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: integration.max_connections, headersTimeout: timeout, bodyTimeout: timeout });
  const headers = { ...integration.headers, 'content-type': 'application/json' };
  return {
    target: base,
    async send(event): Promise<SendOutcome> {
      try {
        // Idempotency-Key: the event's id, the same on every attempt, for a receiver that wants to drop repeats.
        const res = await request(base + event.path, {
          method: event.method,
          dispatcher,
          // traceparent: the span of the request that queued the event, when tracing was on (docs/tracing.md).
          headers: event.traceparent ? { ...headers, 'idempotency-key': event.event_id, traceparent: event.traceparent } : { ...headers, 'idempotency-key': event.event_id },
          body: event.payload_json,
          signal: AbortSignal.timeout(timeout),
        });
        const text = await res.body.text();
        if (isDelivered(res.statusCode)) return { ok: true, status: res.statusCode };
        return { ok: false, status: res.statusCode, error: `CRM answered ${res.statusCode}: ${text.slice(0, 200)}` };
      } catch (error) {
        const e = error as Error & { code?: string };
        return { ok: false, status: null, error: `CRM unreachable: ${e.code ?? e.name}: ${e.message}` };
      }
    },
    abort: () => void dispatcher.destroy(new Error('gateway stopping')).catch(() => {}),
    close: () => (dispatcher.destroyed ? Promise.resolve() : dispatcher.close()),
  };
}
