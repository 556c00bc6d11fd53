/**
 * Sends events over HTTP: to the CRM's Integration API ({crm.integration.url}{path}, the headers of
 * crm.integration.headers) or, for push conversions, to its webhook with Basic auth (create-transport.ts). A pooled
 * keep-alive client with at most max_connections in flight.
 *
 * Each send is one undici dispatch with a small handler rather than `request()`: the relay sends thousands of small
 * events a second, and `request()`'s response stream, async resource and per-request AbortSignal (a timer and an
 * abort listener each) were a third of the transport's CPU per event (bench/README.md, relay). The deadline is kept:
 * sends started in one turn of the event loop (a worker round hands over its events together) share one timer,
 * which aborts those on a connection and fails those still waiting for one as soon as they get it.
 */
import { Agent, type Dispatcher } from 'undici';
import { isDelivered, parseRetryAfter, type EventTransport, type TransportOutcome } from './transport.js';

export interface HttpTransportOptions {
  url: string;
  headers: Record<string, string>;
  timeout: number;
  max_connections: number;
  now?: () => number;
}

/** How much of a refusal's body is kept with the event (its last_error is cut at 500 characters). */
const ANSWER_CHARS = 300;
/** Bytes of a refusal's body read into memory: enough for ANSWER_CHARS characters of any UTF-8. */
const ANSWER_BYTES = ANSWER_CHARS * 4;

/** Sends started in the same turn, and the one timer that ends those still running at their deadline. */
interface Wave {
  sends: Set<{ expire(): void }>;
  expired: boolean;
  timer: NodeJS.Timeout;
}

export function createHttpTransport(options: HttpTransportOptions): EventTransport {
  const base = options.url.replace(/\/+$/, '');
  const { origin, pathname } = new URL(base);
  const prefix = pathname.replace(/\/+$/, '');
  const { timeout } = options;
  const now = options.now ?? Date.now;
  // connect.timeout: a send waiting for a connection is not on one yet, so its deadline only reaches it at the start.
  const dispatcher = new Agent({
    keepAliveTimeout: 30_000,
    connections: options.max_connections,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    connect: { timeout },
  });
  const headers = { ...options.headers, 'content-type': 'application/json' };
  const timedOut = () => Object.assign(new Error(`no answer within crm.integration.timeout (${timeout} ms)`), { name: 'TimeoutError' });

  let current: Wave | undefined;
  function joinWave(send: { expire(): void }): Wave {
    if (!current) {
      const wave: Wave = {
        sends: new Set(),
        expired: false,
        timer: setTimeout(() => {
          wave.expired = true;
          for (const s of wave.sends) s.expire();
        }, timeout).unref(),
      };
      current = wave;
      setImmediate(() => {
        current = undefined;
        if (wave.sends.size === 0) clearTimeout(wave.timer);
      });
    }
    current.sends.add(send);
    return current;
  }
  function leaveWave(wave: Wave, send: { expire(): void }): void {
    wave.sends.delete(send);
    if (wave.sends.size === 0 && current !== wave) clearTimeout(wave.timer);
  }

  return {
    target: base,
    send(event): Promise<TransportOutcome> {
      return new Promise<TransportOutcome>((resolve) => {
        let controller: Dispatcher.DispatchController | undefined;
        let status = 0;
        let retryAfter: string | string[] | undefined;
        const body: Buffer[] = [];
        let bodyBytes = 0;
        let settled = false;
        const finish = (outcome: TransportOutcome) => {
          if (settled) return;
          settled = true;
          leaveWave(wave, handler);
          resolve(outcome);
        };
        const unreachable = (error: unknown) => {
          const e = error as Error & { code?: string };
          finish({ ok: false, status: null, error: `CRM unreachable: ${e.code ?? e.name}: ${e.message}` });
        };
        const handler: Dispatcher.DispatchHandler & { expire(): void } = {
          expire: () => controller?.abort(timedOut()),
          onRequestStart(c) {
            controller = c;
            if (wave.expired) c.abort(timedOut());
          },
          onResponseStart(_c, statusCode, responseHeaders) {
            // 1xx answers are interim; the final one follows.
            if (statusCode < 200) return;
            status = statusCode;
            retryAfter = responseHeaders['retry-after'];
          },
          onResponseData(_c, chunk) {
            // A delivered event's answer is not kept; a refusal's is kept in part, for its last_error.
            if (isDelivered(status) || bodyBytes > ANSWER_BYTES) return;
            body.push(chunk);
            bodyBytes += chunk.length;
          },
          onResponseEnd() {
            if (isDelivered(status)) return finish({ ok: true, status });
            const text = Buffer.concat(body).toString('utf8');
            const shown = text.length > ANSWER_CHARS || bodyBytes > ANSWER_BYTES ? `${text.slice(0, ANSWER_CHARS)}…` : text;
            const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, now());
            finish({
              ok: false,
              status,
              error: `CRM answered ${status}: ${shown}`,
              ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
            });
          },
          onResponseError: (_c, error) => unreachable(error),
        };
        const wave = joinWave(handler);
        try {
          dispatcher.dispatch(
            {
              origin,
              path: prefix + event.path,
              method: event.method as Dispatcher.HttpMethod,
              // Idempotency-Key: the event's id, the same on every attempt, for a receiver that wants to drop repeats.
              // With tracing on, the undici instrumentation adds the W3C traceparent header (docs/tracing.md).
              headers: { ...headers, 'idempotency-key': event.event_id },
              body: event.payload_json,
            },
            handler,
          );
        } catch (error) {
          unreachable(error);
        }
      });
    },
    abort: () => void dispatcher.destroy(new Error('gateway stopping')).catch(() => {}),
    close: () => (dispatcher.destroyed ? Promise.resolve() : dispatcher.close()),
  };
}
