/**
 * Traces (docs/tracing.md): OpenTelemetry spans exported over OTLP/HTTP, off unless `observability.tracing.enabled`.
 *
 * The rest of the gateway sees only the small `Tracing` interface below and passes W3C `traceparent` strings, never
 * an OpenTelemetry context: a message's receipt and conversion arrive in other requests, minutes later, so the only
 * link they can have to the send is the traceparent stored with the message row. When tracing is off, `TRACING_OFF`
 * is used and no OpenTelemetry module is loaded at all: the implementation (`otel.ts`, which imports the SDK, the
 * semantic conventions and the undici instrumentation) is imported dynamically by createTracing, so a send pays one
 * property read per step.
 */
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { isPublicDoor } from '../http/public-doors.js';

export type TracingConfig = Config['observability']['tracing'];
export type SpanKindName = 'server' | 'client' | 'internal' | 'producer';
export type SpanAttributes = Record<string, string | number | boolean>;

export interface TraceSpan {
  /** This span as a W3C traceparent: for the ledger, links and child spans. Undefined when off. */
  readonly traceparent: string | undefined;
  setAttribute(key: string, value: string | number | boolean): void;
  /** Marks the span failed with `message`; `errorType` (the `error.type` attribute) defaults to `_OTHER`. */
  fail(message: string, errorType?: string): void;
  /**
   * Runs `work` with this span active: HTTP requests it makes through undici become its children (and carry it in
   * their `traceparent` header), and log lines written meanwhile carry its trace and span ids.
   */
  run<T>(work: () => T): T;
  /** Writes this span's W3C headers (`traceparent`, and `tracestate` when there is one) into `carrier`. */
  inject(carrier: Record<string, string>): void;
  /** Ends the span, at `endTime` (epoch ms) when given. */
  end(endTime?: number): void;
}

export interface SpanOptions {
  kind?: SpanKindName;
  attributes?: SpanAttributes;
  /** Epoch ms when the work began (default: now). */
  startTime?: number;
  /** Spans this one follows from without being their child (traceparents; absent or malformed ones are skipped). */
  links?: Array<string | null | undefined>;
  /** Without a parent: a new trace, even where a span is active (work that only follows from what is linked). */
  root?: boolean;
}

/** What a publish to a broker goes to (the messaging.* attributes of its PRODUCER span). */
export interface PublishTarget {
  system: 'rabbitmq' | 'kafka';
  /** The exchange or topic. */
  destination: string;
  /** The event ids of the messages published (messaging.message.id when one). */
  messageIds: string[];
  /** The spans that caused the messages (the relay requests that queued them): linked, not parents. */
  causes: Array<string | null | undefined>;
}

export interface Tracing {
  readonly enabled: boolean;
  /**
   * A span under `parent` (a traceparent). Without one (undefined or null), under the span active in this async
   * context (a new trace with `root`, or when none is); a malformed traceparent starts a new trace.
   */
  startSpan(name: string, parent: string | null | undefined, options?: SpanOptions): TraceSpan;
  /** A database span (`db.system.name` of the configured database) for a ledger commit of `operation` on `table`. */
  startCommit(operation: 'INSERT' | 'UPDATE', table: string, parent: string | undefined, startTime?: number): TraceSpan;
  /** A PRODUCER span for a publish, under the active span, linked to what caused the messages. */
  startPublish(target: PublishTarget): TraceSpan;
  /**
   * The middleware that gives every request a SERVER span named `{method} {route}`, child of the caller's
   * `traceparent` header where followsCallerTrace allows, else a new trace linked to it; `isTrustedProxy` says whose
   * X-Forwarded-For names the client (server.trusted_proxies).
   */
  requests(isTrustedProxy: (address: string) => boolean): MiddlewareHandler;
  /**
   * Exports what is still buffered and stops, giving the collector at most `withinMs`: spans a collector that does not
   * answer in time are dropped (and logged), so an unreachable collector never holds up the shutdown.
   */
  shutdown(withinMs: number): Promise<void>;
}

const NO_SPAN: TraceSpan = {
  traceparent: undefined,
  setAttribute: () => undefined,
  fail: () => undefined,
  run: (work) => work(),
  inject: () => undefined,
  end: () => undefined,
};

export const TRACING_OFF: Tracing = {
  enabled: false,
  startSpan: () => NO_SPAN,
  startCommit: () => NO_SPAN,
  startPublish: () => NO_SPAN,
  requests: () => (_c, next) => next(),
  shutdown: async () => undefined,
};

/**
 * Whether a request's `traceparent` may parent its SERVER span, and so decide with its sampled flag whether the
 * trace is kept (a parent-based sampler follows the parent). Only on a route whose callers hold a credential: at a
 * public door (src/http/public-doors.ts: the provider callbacks, the sign-ins, probes and documents) and on a path
 * no route serves, anyone could send a sampled traceparent with every request and have each one exported whatever
 * sampling_ratio says (docs/tracing.md, "Headers received"). There the span starts a trace of its own, sampled
 * like any new one, and links to the caller's context. `route` is the matched route pattern, or `unmatched`. Pure.
 */
export function followsCallerTrace(path: string, route: string): boolean {
  return route !== 'unmatched' && !isPublicDoor(path);
}

/** The parts of the configuration traces read: their own section, the environment's name and the database's kind. */
export type TracingSettings = { observability: { tracing: TracingConfig }; server: { environment: string }; database: { url: string } };

/**
 * The tracing `config` asks for: TRACING_OFF when disabled (nothing loaded), else the OpenTelemetry implementation of
 * otel.ts, loaded now; it reads the OTEL_* variables of the process (docs/tracing.md "Environment variables").
 */
export async function createTracing(config: TracingSettings, logger: Logger): Promise<Tracing> {
  if (!config.observability.tracing.enabled) return TRACING_OFF;
  const { startOpenTelemetry } = await import('./otel.js');
  return startOpenTelemetry(config, logger);
}

/** A publish to a broker, traced or not: the headers to put on the messages, and `done` to call with its outcome. */
export interface Publish {
  /** The W3C headers of the PRODUCER span (traceparent, tracestate); undefined when tracing is off. */
  readonly headers: Record<string, string> | undefined;
  /** Ends the span (failed when `outcome` is not ok) and answers `outcome`. */
  done<T extends { ok: boolean; error?: string }>(outcome: T): T;
}

const NOT_TRACED: Publish = { headers: undefined, done: (outcome) => outcome };

/**
 * A PRODUCER span for a publish when tracing is on (docs/tracing.md "Messages published"), its context to inject into
 * the messages' headers; off, a shared constant that adds nothing.
 */
export function startPublish(tracing: Tracing, target: PublishTarget): Publish {
  if (!tracing.enabled) return NOT_TRACED;
  const span = tracing.startPublish(target);
  const headers: Record<string, string> = {};
  span.inject(headers);
  return {
    headers,
    done(outcome) {
      if (!outcome.ok) span.fail(outcome.error ?? 'not published');
      span.end();
      return outcome;
    },
  };
}
