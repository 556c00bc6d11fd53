/**
 * The OpenTelemetry side of traces (docs/tracing.md), imported only by createTracing (tracing.ts) when tracing is on:
 * every OpenTelemetry package is imported here and nowhere else, so a gateway with tracing off loads none of them.
 *
 * Spans follow the OpenTelemetry semantic conventions (the stable HTTP server, HTTP client and database attributes;
 * the messaging attributes, still incubating, for broker publishes), with their names from
 * `@opentelemetry/semantic-conventions`. Outgoing HTTP (provider calls, the webhook, the CRM's Integration API) is
 * traced by the undici instrumentation, which listens on undici's diagnostics channels: nothing is patched, and with
 * tracing off nobody listens, so a request pays nothing. `pg` is not instrumented: its instrumentation patches the
 * module as it is loaded (a loader hook before the first import), which cannot be switched on by configuration;
 * ledger commits get hand-made database spans instead (startCommit).
 */
import { randomUUID } from 'node:crypto';
import { type Context as OtelContext, context, type Link, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { type ExportResult, ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_DB_COLLECTION_NAME,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_SYSTEM_NAME,
  ATTR_DEPLOYMENT_ENVIRONMENT_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_INSTANCE_ID,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
  ERROR_TYPE_VALUE_OTHER,
} from '@opentelemetry/semantic-conventions';
import type { Context, MiddlewareHandler } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { clientAddressOf } from '../kit/client-address.js';
import { setLogTraceFields } from './logger.js';
import { readPackageVersion } from './openapi.js';
import { routeLabel } from './request-context.js';
import { followsCallerTrace, type PublishTarget, type SpanOptions, type TraceSpan, type Tracing, type TracingSettings } from './tracing.js';

/**
 * Names the semantic conventions still call incubating (the messaging attributes, and `sqlite` as a database system).
 * Written here rather than imported from `@opentelemetry/semantic-conventions/incubating`, as that package advises for
 * incubating names: its incubating entry point holds every experimental name there is and cost 6–7 MB of RSS
 * (measured with `serve`, docs/tracing.md "Cost"), and its names may change between minor versions.
 */
const ATTR_MESSAGING_BATCH_MESSAGE_COUNT = 'messaging.batch.message_count';
const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id';
const ATTR_MESSAGING_OPERATION_NAME = 'messaging.operation.name';
const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
const ATTR_MESSAGING_SYSTEM = 'messaging.system';
const DB_SYSTEM_NAME_VALUE_SQLITE = 'sqlite';
const MESSAGING_OPERATION_TYPE_VALUE_SEND = 'send';

/** The OTLP/HTTP traces URL for `endpoint`: a collector's base URL gets /v1/traces appended. */
export function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

/** A traceparent longer than this is refused unread (a header is untrusted input; a valid one has 55 characters). */
const MAX_TRACEPARENT_LENGTH = 256;

const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
  get: (carrier: Record<string, string>, key: string) => carrier[key],
};
const headerSetter = { set: (carrier: Record<string, string>, key: string, value: string) => void (carrier[key] = value) };

/**
 * The context a W3C traceparent (and tracestate) stands for, read by the SDK's propagator (Trace Context §3.2); an
 * over-long, malformed or all-zero one gives `ROOT_CONTEXT` (a new trace).
 */
export function contextOf(traceparent: string | null | undefined, tracestate?: string): OtelContext {
  if (!traceparent || traceparent.length > MAX_TRACEPARENT_LENGTH) return ROOT_CONTEXT;
  const carrier: Record<string, string> = { traceparent };
  if (tracestate && tracestate.length <= 512) carrier.tracestate = tracestate;
  return propagator.extract(ROOT_CONTEXT, carrier, headerGetter);
}

/** The W3C headers of `span` (its traceparent, and its tracestate when it has one). */
function headersOf(span: Span): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, headerSetter);
  return carrier;
}

/** The methods the HTTP semantic conventions name; any other is reported as `_OTHER` (with the original beside it). */
const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);

/**
 * `url` as `url.full` may carry it: no user name or password, and every query value replaced (a webhook URL may hold
 * a token in its query), keeping the names.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username || parsed.password) {
      parsed.username = 'REDACTED';
      parsed.password = 'REDACTED';
    }
    if (parsed.search) {
      parsed.search = [...parsed.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=REDACTED`).join('&');
    }
    return parsed.toString();
  } catch {
    return '';
  }
}

/**
 * Logs failed exports without flooding the log: the first failure at once, then at most one line per `intervalMs`
 * with the number of failed exports and spans dropped since the last line. Pure but for `log` and `now`.
 */
export function createExportFailureLog(
  log: (fields: { failed_exports: number; dropped_spans: number; error: string }) => void,
  intervalMs: number,
  now: () => number,
) {
  let lastLogged = -Infinity;
  let failed = 0;
  let dropped = 0;
  return (spans: number, error: string): void => {
    failed++;
    dropped += spans;
    if (now() - lastLogged < intervalMs) return;
    lastLogged = now();
    log({ failed_exports: failed, dropped_spans: dropped, error });
    failed = 0;
    dropped = 0;
  };
}

/** An exporter that hands everything to `inner` and reports each failed export to `onFailure`. */
function reportingFailures(inner: SpanExporter, onFailure: (spans: number, error: string) => void): SpanExporter {
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      inner.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          // The OTLP exporter's error carries the collector's HTTP status as `code`.
          const error = result.error as (Error & { code?: unknown }) | undefined;
          onFailure(spans.length, error ? `${typeof error.code === 'number' ? `${error.code} ` : ''}${error.message}` : 'export failed');
        }
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

const EXPORT_FAILURE_LOG_INTERVAL_MS = 60_000;
/** Longest attribute value a span keeps (the SDK cuts longer ones). */
const MAX_ATTRIBUTE_LENGTH = 1_024;

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL, producer: SpanKind.PRODUCER } as const;

export function startOpenTelemetry(settings: TracingSettings, logger: Logger): Tracing {
  const config = settings.observability.tracing;
  // config.yaml first, then the OTEL_* variables (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES read by the SDK's
  // envDetector; the endpoint, headers and sampler by the exporter and the provider themselves), then the defaults.
  const detected = detectResources({ detectors: [envDetector] });
  const serviceName = config.service_name ?? (detected.attributes[ATTR_SERVICE_NAME] as string | undefined) ?? 'crm-sms-gateway';
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_VERSION]: readPackageVersion(),
    [ATTR_SERVICE_INSTANCE_ID]: randomUUID(),
    [ATTR_DEPLOYMENT_ENVIRONMENT_NAME]: settings.server.environment,
  })
    .merge(detected)
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }));

  const explicitUrl = config.endpoint ? tracesUrl(config.endpoint) : undefined;
  const exporter = new OTLPTraceExporter({ ...(explicitUrl ? { url: explicitUrl } : {}), timeoutMillis: config.export_timeout });
  const exportFailed = createExportFailureLog(
    (fields) => logger.warn(fields, 'tracing: spans could not be exported (at most one line a minute)'),
    EXPORT_FAILURE_LOG_INTERVAL_MS,
    Date.now,
  );
  const provider = new BasicTracerProvider({
    resource,
    // Without sampling_ratio in config.yaml, the SDK reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG itself
    // (default: parent-based, always on).
    ...(config.sampling_ratio !== undefined ? { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampling_ratio) }) } : {}),
    // Attribute values come from outside (a User-Agent, a path, a provider's status): none is kept longer than
    // MAX_ATTRIBUTE_LENGTH characters, unless OTEL_(SPAN_)ATTRIBUTE_VALUE_LENGTH_LIMIT says otherwise.
    ...(process.env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT || process.env.OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT
      ? {}
      : { spanLimits: { attributeValueLengthLimit: MAX_ATTRIBUTE_LENGTH } }),
    spanProcessors: [new BatchSpanProcessor(reportingFailures(exporter, exportFailed), { scheduledDelayMillis: config.export_interval })],
  });
  const tracer = provider.getTracer('crm-sms-gateway', readPackageVersion());

  // The active span follows async work (AsyncLocalStorage): the undici instrumentation parents its client spans on
  // it and injects it into the request's headers through the global propagator.
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(propagator);
  const undici = new UndiciInstrumentation({
    // Only requests made inside one of our spans: no root span for each stray request, and no header on them.
    requireParentforSpans: true,
    requestHook: (span, request) => {
      const full = redactUrl(new URL(request.path, request.origin).toString());
      span.setAttribute(ATTR_URL_FULL, full);
      const query = full.indexOf('?');
      if (query >= 0) span.setAttribute(ATTR_URL_QUERY, full.slice(query + 1));
    },
  });
  undici.setTracerProvider(provider);
  undici.enable();
  setLogTraceFields(() => {
    const span = trace.getSpan(context.active());
    if (!span) return undefined;
    const { traceId, spanId, traceFlags } = span.spanContext();
    return { trace_id: traceId, span_id: spanId, trace_flags: `0${(traceFlags & 0xff).toString(16)}`.slice(-2) };
  });

  const wrap = (span: Span): TraceSpan => {
    const traceparent = headersOf(span).traceparent;
    return {
      traceparent,
      setAttribute: (key, value) => void span.setAttribute(key, value),
      fail(message, errorType = ERROR_TYPE_VALUE_OTHER) {
        span.setAttribute(ATTR_ERROR_TYPE, errorType);
        span.setStatus({ code: SpanStatusCode.ERROR, message });
      },
      run: (work) => context.with(trace.setSpan(context.active(), span), work),
      inject: (carrier) => void Object.assign(carrier, headersOf(span)),
      end: (endTime) => span.end(endTime),
    };
  };

  const linksOf = (traceparents: Array<string | null | undefined> | undefined): Link[] | undefined => {
    if (!traceparents) return undefined;
    const links: Link[] = [];
    for (const traceparent of traceparents) {
      const linked = trace.getSpanContext(contextOf(traceparent));
      if (linked) links.push({ context: linked });
    }
    return links;
  };

  const startSpan = (name: string, parent: string | null | undefined, options: SpanOptions = {}): TraceSpan => {
    const parentContext = parent ? contextOf(parent) : options.root ? ROOT_CONTEXT : context.active();
    return wrap(
      tracer.startSpan(
        name,
        { kind: KINDS[options.kind ?? 'internal'], attributes: options.attributes, startTime: options.startTime, links: linksOf(options.links) },
        parentContext,
      ),
    );
  };

  const dbSystem = /^postgres(ql)?:/i.test(settings.database.url) ? DB_SYSTEM_NAME_VALUE_POSTGRESQL : DB_SYSTEM_NAME_VALUE_SQLITE;

  logger.info(
    {
      endpoint: explicitUrl ?? 'OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT or http://localhost:4318/v1/traces',
      sampling_ratio: config.sampling_ratio,
      service_name: serviceName,
    },
    'tracing on',
  );
  return {
    enabled: true,
    startSpan,
    startCommit: (operation, table, parent, startTime) =>
      startSpan(`${operation} ${table}`, parent, {
        kind: 'client',
        startTime,
        attributes: { [ATTR_DB_SYSTEM_NAME]: dbSystem, [ATTR_DB_OPERATION_NAME]: operation, [ATTR_DB_COLLECTION_NAME]: table },
      }),
    startPublish(target: PublishTarget) {
      const attributes: Record<string, string | number> = {
        [ATTR_MESSAGING_SYSTEM]: target.system,
        [ATTR_MESSAGING_DESTINATION_NAME]: target.destination,
        [ATTR_MESSAGING_OPERATION_TYPE]: MESSAGING_OPERATION_TYPE_VALUE_SEND,
        [ATTR_MESSAGING_OPERATION_NAME]: target.system === 'rabbitmq' ? 'publish' : 'send',
      };
      if (target.messageIds.length === 1) attributes[ATTR_MESSAGING_MESSAGE_ID] = target.messageIds[0]!;
      else attributes[ATTR_MESSAGING_BATCH_MESSAGE_COUNT] = target.messageIds.length;
      return startSpan(`send ${target.destination}`, undefined, { kind: 'producer', attributes, links: target.causes });
    },
    requests: (isTrustedProxy) => serverSpans(tracer, isTrustedProxy),
    async shutdown(withinMs) {
      undici.disable();
      setLogTraceFields(undefined);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the collector did not answer within ${withinMs} ms`)), withinMs);
      });
      try {
        await Promise.race([provider.shutdown(), late]);
      } catch (error) {
        logger.warn({ err: error }, 'tracing: the last spans could not be exported');
      } finally {
        clearTimeout(timer);
      }
      context.disable();
      propagation.disable();
    },
  };
}

/** The peer's address, or undefined where the request was not served by node:http (app.request in a script). */
function peerAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined;
  }
}

/**
 * A SERVER span per request with the stable HTTP server attributes, child of the caller's `traceparent` header (the
 * CRM's, the operator platform's) on the routes whose callers hold a credential; at a public door or a path no route
 * serves, a new trace (sampled by sampling_ratio alone) linked to the caller's context (followsCallerTrace). Named `{method} {route}` once the route is known (`{method}` when
 * no route matched), and active while the request is handled.
 */
function serverSpans(tracer: ReturnType<BasicTracerProvider['getTracer']>, isTrustedProxy: (address: string) => boolean): MiddlewareHandler {
  return async (c, next) => {
    const method = c.req.method;
    const url = new URL(c.req.url);
    const known = KNOWN_METHODS.has(method);
    const attributes: Record<string, string | number> = {
      [ATTR_HTTP_REQUEST_METHOD]: known ? method : '_OTHER',
      [ATTR_URL_PATH]: url.pathname,
      [ATTR_URL_SCHEME]: url.protocol.slice(0, -1),
      [ATTR_SERVER_ADDRESS]: url.hostname,
      [ATTR_SERVER_PORT]: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
    };
    if (!known) attributes[ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = method;
    const peer = peerAddress(c);
    if (peer) attributes[ATTR_CLIENT_ADDRESS] = clientAddressOf(peer, c.req.header('x-forwarded-for'), isTrustedProxy);
    const userAgent = c.req.header('user-agent');
    if (userAgent) attributes[ATTR_USER_AGENT_ORIGINAL] = userAgent;
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (incoming?.httpVersion) attributes[ATTR_NETWORK_PROTOCOL_VERSION] = incoming.httpVersion;
    const caller = contextOf(c.req.header('traceparent'), c.req.header('tracestate'));
    // Hono has matched the routes before the first middleware runs, so the route is known here.
    const follows = followsCallerTrace(url.pathname, routeLabel(c));
    const parent = follows ? caller : ROOT_CONTEXT;
    const callerSpan = follows ? undefined : trace.getSpanContext(caller);
    const links = callerSpan ? [{ context: callerSpan }] : undefined;
    const span = tracer.startSpan(known ? method : 'HTTP', { kind: SpanKind.SERVER, attributes, links }, parent);
    c.set('traceparent', headersOf(span).traceparent);
    let thrown: unknown;
    try {
      await context.with(trace.setSpan(parent, span), next);
    } catch (error) {
      thrown = error;
      throw error;
    } finally {
      const route = routeLabel(c);
      if (route !== 'unmatched') {
        span.setAttribute(ATTR_HTTP_ROUTE, route);
        span.updateName(`${known ? method : 'HTTP'} ${route}`);
      }
      const status = c.res.status;
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      // A handler's throw is answered 500 by app.onError (c.error); a 5xx answer is a failure of ours, a 4xx the caller's.
      const error = thrown ?? c.error;
      if (error || status >= 500) {
        span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.name : String(status));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : `answered ${status}` });
      }
      span.end();
    }
  };
}
