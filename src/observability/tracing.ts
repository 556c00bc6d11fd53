/**
 * Traces (docs/tracing.md): OpenTelemetry spans exported over OTLP/HTTP, off unless `observability.tracing.enabled`.
 *
 * The rest of the gateway sees only the small `Tracing` interface below and passes W3C `traceparent` strings, never
 * an OpenTelemetry context: a message's receipt and conversion arrive in other requests, minutes later, so the only
 * parent they can have is the traceparent stored with the message row. When tracing is off, `TRACING_OFF` is used and
 * no OpenTelemetry module is loaded at all (the SDK is imported dynamically in createTracing), so a send pays one
 * property read per step.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';

export type TracingConfig = Config['observability']['tracing'];
export type SpanKindName = 'server' | 'client' | 'internal';
export type SpanAttributes = Record<string, string | number | boolean>;

export interface TraceSpan {
  /** This span as a W3C traceparent: for outgoing headers, the ledger, and child spans. Undefined when off. */
  readonly traceparent: string | undefined;
  setAttribute(key: string, value: string | number | boolean): void;
  /** Marks the span failed with `message`. */
  fail(message: string): void;
  /** Ends the span, at `endTime` (epoch ms) when given. */
  end(endTime?: number): void;
}

export interface SpanOptions {
  kind?: SpanKindName;
  attributes?: SpanAttributes;
  /** Epoch ms when the work began (default: now). */
  startTime?: number;
}

export interface Tracing {
  readonly enabled: boolean;
  /** A span under `parent` (a traceparent; a new trace when absent or malformed). */
  startSpan(name: string, parent: string | null | undefined, options?: SpanOptions): TraceSpan;
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}

const NO_SPAN: TraceSpan = { traceparent: undefined, setAttribute: () => undefined, fail: () => undefined, end: () => undefined };

export const TRACING_OFF: Tracing = { enabled: false, startSpan: () => NO_SPAN, shutdown: async () => undefined };

export interface ParsedTraceparent {
  traceId: string;
  spanId: string;
  /** The trace-flags byte; bit 0 is "sampled". */
  flags: number;
}

/** A traceparent longer than this is refused unread (a header is untrusted input). */
const MAX_TRACEPARENT_LENGTH = 256;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Reads a W3C traceparent (Trace Context §3.2): version-traceid-parentid-flags in lower-case hex. Version ff, an
 * all-zero id, and extra fields on version 00 are invalid; a later version may append fields, which are ignored.
 */
export function parseTraceparent(text: string | null | undefined): ParsedTraceparent | undefined {
  if (!text || text.length > MAX_TRACEPARENT_LENGTH) return undefined;
  const match = TRACEPARENT.exec(text.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId!) || /^0+$/.test(spanId!)) return undefined;
  return { traceId: traceId!, spanId: spanId!, flags: Number.parseInt(flags!, 16) };
}

export function formatTraceparent(context: ParsedTraceparent): string {
  return `00-${context.traceId}-${context.spanId}-${(context.flags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The OTLP/HTTP traces URL for `endpoint`: a collector's base URL gets /v1/traces appended. */
export function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

/**
 * The tracing `config` asks for: TRACING_OFF when disabled, else an OpenTelemetry tracer provider loaded now, with a
 * parent-based ratio sampler (a CRM request that says "sampled" is traced; a new trace is sampled at `sampling_ratio`)
 * and a batching OTLP/HTTP (JSON) exporter.
 */
export async function createTracing(config: TracingConfig, logger: Logger): Promise<Tracing> {
  if (!config.enabled) return TRACING_OFF;
  const [api, sdk, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const exporter = new OTLPTraceExporter({ url: tracesUrl(config.endpoint), timeoutMillis: config.export_timeout });
  const provider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.service_name }),
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(config.sampling_ratio) }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter, { scheduledDelayMillis: config.export_interval })],
  });
  const tracer = provider.getTracer('crm-sms-gateway');
  const kinds = { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, internal: api.SpanKind.INTERNAL } as const;

  const wrap = (span: import('@opentelemetry/api').Span): TraceSpan => {
    const context = span.spanContext();
    return {
      traceparent: formatTraceparent({ traceId: context.traceId, spanId: context.spanId, flags: context.traceFlags }),
      setAttribute: (key, value) => void span.setAttribute(key, value),
      fail: (message) => void span.setStatus({ code: api.SpanStatusCode.ERROR, message }),
      end: (endTime) => span.end(endTime),
    };
  };

  logger.info({ endpoint: tracesUrl(config.endpoint), sampling_ratio: config.sampling_ratio, service_name: config.service_name }, 'tracing on');
  return {
    enabled: true,
    startSpan(name, parent, options = {}) {
      const parsed = parseTraceparent(parent);
      const parentContext = parsed
        ? api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: parsed.traceId, spanId: parsed.spanId, traceFlags: parsed.flags, isRemote: true })
        : api.ROOT_CONTEXT;
      return wrap(
        tracer.startSpan(name, { kind: kinds[options.kind ?? 'internal'], attributes: options.attributes, startTime: options.startTime }, parentContext),
      );
    },
    async shutdown() {
      try {
        await provider.shutdown();
      } catch (error) {
        logger.warn({ err: error }, 'tracing: the last spans could not be exported');
      }
    },
  };
}
