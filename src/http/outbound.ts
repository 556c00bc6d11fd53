/**
 * The one HTTP client of the outboxes' receivers (the CRM's webhook, its Integration API, the operator's credits
 * endpoint): created once by the wiring (src/gateway.ts, src/commands/flush.ts), which closes it; each receiver asks
 * it for a pool of its own (its connection bound and deadline), so one receiver's traffic never waits for another's
 * connections. Every request is one undici dispatch with a small handler rather than `request()`: the relay sends
 * thousands of small events a second, and `request()`'s response stream, async resource and per-request AbortSignal (a
 * timer and an abort listener each) were a third of the transport's CPU per event (bench/README.md, relay). The
 * deadline is kept: requests started in one turn of the event loop (an outbox round hands over its rows together)
 * share one timer, which aborts those on a connection and fails those still waiting for one as soon as they get it.
 * With tracing on, the undici instrumentation adds the W3C traceparent header (docs/tracing.md).
 */
import { Agent, type Dispatcher } from 'undici';

export interface OutboundRequest {
  /** Scheme, host and port (`splitUrl`, once per receiver: not parsed again per request). */
  origin: string;
  /** Path and query. */
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** What came back: an answer (its status, the first characters of a refusal's body, Retry-After), or no answer. */
export type OutboundAnswer =
  | { answered: true; status: number; body: string; retryAfter: string | undefined }
  | { answered: false; error: Error & { code?: string } };

export interface OutboundPool {
  send(request: OutboundRequest): Promise<OutboundAnswer>;
  /** Ends requests in flight at once (they fail as unanswered): a stopping gateway does not wait for a slow receiver. */
  abort(): void;
}

export interface OutboundClient {
  /**
   * A pool of connections for one receiver: at most `connections` per origin (undefined: no bound), and `timeout` ms for
   * a request from its start to its answer's end.
   */
  pool(options: { connections?: number | undefined; timeout: number; timeoutMessage: string }): OutboundPool;
  /** Closes every pool it made (requests in flight finish first). */
  close(): Promise<void>;
}

/** How much of a refusal's body is kept (a row's last_error is cut at 500 characters). */
const ANSWER_CHARS = 300;
/** Bytes of a refusal's body read into memory: enough for ANSWER_CHARS characters of any UTF-8. */
const ANSWER_BYTES = ANSWER_CHARS * 4;

const isSuccess = (status: number) => status >= 200 && status < 300;

/** Requests started in the same turn, and the one timer that ends those still running at their deadline. */
interface Wave {
  sends: Set<{ expire(): void }>;
  expired: boolean;
  timer: NodeJS.Timeout;
}

function createPool(options: { connections?: number | undefined; timeout: number; timeoutMessage: string }): {
  pool: OutboundPool;
  close(): Promise<void>;
} {
  const { timeout } = options;
  // connect.timeout: a request waiting for a connection is not on one yet, so its deadline only reaches it at the start.
  const dispatcher = new Agent({
    keepAliveTimeout: 30_000,
    ...(options.connections === undefined ? {} : { connections: options.connections }),
    headersTimeout: timeout,
    bodyTimeout: timeout,
    connect: { timeout },
  });
  const timedOut = () => Object.assign(new Error(options.timeoutMessage), { name: 'TimeoutError' });

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

  const send = (request: OutboundRequest): Promise<OutboundAnswer> =>
    new Promise<OutboundAnswer>((resolve) => {
      let controller: Dispatcher.DispatchController | undefined;
      let status = 0;
      let retryAfter: string | string[] | undefined;
      const body: Buffer[] = [];
      let bodyBytes = 0;
      let settled = false;
      const finish = (answer: OutboundAnswer) => {
        if (settled) return;
        settled = true;
        leaveWave(wave, handler);
        resolve(answer);
      };
      const unanswered = (error: unknown) => finish({ answered: false, error: error as Error & { code?: string } });
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
          // A success's answer is not kept; a refusal's is kept in part, for the row's last_error.
          if (isSuccess(status) || bodyBytes > ANSWER_BYTES) return;
          body.push(chunk);
          bodyBytes += chunk.length;
        },
        onResponseEnd() {
          const text = Buffer.concat(body).toString('utf8');
          const shown = text.length > ANSWER_CHARS || bodyBytes > ANSWER_BYTES ? `${text.slice(0, ANSWER_CHARS)}…` : text;
          finish({ answered: true, status, body: shown, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
        },
        onResponseError: (_c, error) => unanswered(error),
      };
      const wave = joinWave(handler);
      try {
        dispatcher.dispatch(
          {
            origin: request.origin,
            path: request.path,
            method: request.method as Dispatcher.HttpMethod,
            headers: request.headers,
            body: request.body,
          },
          handler,
        );
      } catch (error) {
        unanswered(error);
      }
    });

  return {
    pool: { send, abort: () => void dispatcher.destroy(new Error('gateway stopping')).catch(() => {}) },
    close: () => (dispatcher.destroyed ? Promise.resolve() : dispatcher.close()),
  };
}

/** A receiver's URL as requests name it: its origin, and its path with its query. */
export function splitUrl(url: string): { origin: string; path: string } {
  const parsed = new URL(url);
  return { origin: parsed.origin, path: parsed.pathname + parsed.search };
}

export function createOutboundClient(): OutboundClient {
  const pools: Array<{ close(): Promise<void> }> = [];
  return {
    pool(options) {
      const made = createPool(options);
      pools.push(made);
      return made.pool;
    },
    async close() {
      await Promise.all(pools.splice(0).map((p) => p.close()));
    },
  };
}
