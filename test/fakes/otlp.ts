/**
 * An OpenTelemetry collector fake that speaks OTLP/HTTP with JSON bodies (the OTLP specification's "OTLP/HTTP",
 * ExportTraceServiceRequest in its JSON mapping): `POST /v1/traces` with resourceSpans → scopeSpans → spans, ids in
 * hex (as the JSON mapping writes them; base64 ids are turned into hex too), answered 200 `{}`. Keeps every span,
 * flattened, with its resource's service.name and its attributes as plain values.
 */
import { readBody, sendJson, startFakeServer } from './http.js';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer. */
  kind: number;
  serviceName: string;
  /** Every attribute of the span's resource. */
  resource: Record<string, string | number | boolean>;
  attributes: Record<string, string | number | boolean>;
  /** The spans this one links to (OTLP Span.links), ids in hex. */
  links: Array<{ traceId: string; spanId: string }>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

export interface OtlpFake {
  /** The base URL to configure as observability.tracing.endpoint. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (each a batch). */
  exports: number;
  /** The headers of each export request. */
  headers: import('node:http').IncomingHttpHeaders[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type OtlpJson = {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: Array<{ key: string; value: AnyValue }>;
        links?: Array<{ traceId: string; spanId: string }>;
        status?: { code?: number };
      }>;
    }>;
  }>;
};

function plain(value: AnyValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? '';
}

function attributesOf(list: Array<{ key: string; value: AnyValue }> | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, plain(a.value)]));
}

/** Hex as the JSON mapping writes ids; a base64 id (the protobuf-style mapping some exporters use) becomes hex. */
function hexId(id: string | undefined, hexLength: number): string {
  if (!id) return '';
  if (new RegExp(`^[0-9a-f]{${hexLength}}$`).test(id)) return id;
  return Buffer.from(id, 'base64').toString('hex');
}

/** `answer`: the status to answer exports with (200 unless a test wants the collector to fail). */
export async function startOtlpFake(answer: { status: number } = { status: 200 }): Promise<OtlpFake> {
  const fake: Omit<OtlpFake, 'url' | 'close'> = { spans: [], exports: 0, headers: [] };
  const server = await startFakeServer(async (req, res) => {
    const body = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/v1/traces') return sendJson(res, 404, { error: 'not found' });
    if (!/^application\/json/i.test(String(req.headers['content-type']))) return sendJson(res, 415, { error: 'this fake reads JSON exports only' });
    fake.exports++;
    fake.headers.push(req.headers);
    if (answer.status !== 200) return sendJson(res, answer.status, { error: 'collector failing (test)' });
    const request = JSON.parse(body.toString('utf8')) as OtlpJson;
    for (const resourceSpans of request.resourceSpans ?? []) {
      const resource = attributesOf(resourceSpans.resource?.attributes);
      const serviceName = String(resource['service.name'] ?? '');
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          fake.spans.push({
            traceId: hexId(span.traceId, 32),
            spanId: hexId(span.spanId, 16),
            parentSpanId: hexId(span.parentSpanId, 16),
            name: span.name,
            kind: span.kind ?? 0,
            serviceName,
            resource,
            attributes: attributesOf(span.attributes),
            links: (span.links ?? []).map((l) => ({ traceId: hexId(l.traceId, 32), spanId: hexId(l.spanId, 16) })),
            statusCode: span.status?.code ?? 0,
          });
        }
      }
    }
    sendJson(res, 200, {});
  });
  return Object.assign(fake, { url: server.url, close: () => server.close() });
}
