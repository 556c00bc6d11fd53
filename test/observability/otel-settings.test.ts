/**
 * How traces are set up (docs/tracing.md "Environment variables", "Export failures"): the OTEL_* variables where
 * config.yaml is silent (a served process with them set, against the OTLP fake), export failures logged at most once a
 * minute with a count, `url.full` without secrets, and the W3C traceparent read by the SDK's propagator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { contextOf, createExportFailureLog, redactUrl, tracesUrl } from '../../src/observability/otel.js';
import { startOtlpFake, type OtlpFake } from '../fakes/otlp.js';
import { startServe, writeConfig } from '../helpers/child.js';
import { startTestGateway, testConfigDocument, waitFor } from '../helpers/gateway.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';

describe('the W3C traceparent, read by the SDK propagator', () => {
  it.each<[string, string | undefined, boolean]>([
    ['a sampled version-00 header', `00-${TRACE_ID}-${SPAN_ID}-01`, true],
    ['an unsampled one', `00-${TRACE_ID}-${SPAN_ID}-00`, true],
    ['a later version with an extra field', `01-${TRACE_ID}-${SPAN_ID}-01-what-comes-next`, true],
    ['version 00 with an extra field', `00-${TRACE_ID}-${SPAN_ID}-01-x`, false],
    ['version ff', `ff-${TRACE_ID}-${SPAN_ID}-01`, false],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`, false],
    ['an all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`, false],
    ['a short trace id', `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`, false],
    ['nothing', undefined, false],
    ['a header longer than 256 characters', `01-${TRACE_ID}-${SPAN_ID}-01-${'a'.repeat(300)}`, false],
  ])('%s', (_label, header, valid) => {
    const parent = trace.getSpanContext(contextOf(header));
    expect(parent !== undefined).toBe(valid);
    if (valid) expect(parent).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
  });

  it('keeps the sampled flag', () => {
    expect(trace.getSpanContext(contextOf(`00-${TRACE_ID}-${SPAN_ID}-00`))!.traceFlags).toBe(0);
    expect(trace.getSpanContext(contextOf(`00-${TRACE_ID}-${SPAN_ID}-01`))!.traceFlags).toBe(1);
  });
});

describe('url.full', () => {
  it.each([
    ['https://api.example.com/sms/2/text/advanced', 'https://api.example.com/sms/2/text/advanced'],
    ['https://user:pass@crm.example.com/hook/sms/conversion', 'https://REDACTED:REDACTED@crm.example.com/hook/sms/conversion'],
    ['https://crm.example.com/hook?token=s3cret&x=1', 'https://crm.example.com/hook?token=REDACTED&x=REDACTED'],
    ['not a url', ''],
  ])('%s is recorded as %s', (url, recorded) => {
    expect(redactUrl(url)).toBe(recorded);
  });

  it.each([
    ['http://collector:4318', 'http://collector:4318/v1/traces'],
    ['http://collector:4318/', 'http://collector:4318/v1/traces'],
    ['http://collector:4318/v1/traces', 'http://collector:4318/v1/traces'],
  ])('the traces URL of endpoint %s is %s', (endpoint, url) => {
    expect(tracesUrl(endpoint)).toBe(url);
  });
});

describe('the export failure log', () => {
  it('logs the first failure at once, then at most one line a minute with what failed meanwhile', () => {
    let now = 1_000_000;
    const lines: Array<{ failed_exports: number; dropped_spans: number; error: string }> = [];
    const failed = createExportFailureLog(
      (l) => lines.push(l),
      60_000,
      () => now,
    );
    failed(10, 'refused');
    expect(lines).toEqual([{ failed_exports: 1, dropped_spans: 10, error: 'refused' }]);
    for (let i = 0; i < 5; i++) {
      now += 10_000;
      failed(3, `refused ${i}`);
    }
    expect(lines).toHaveLength(1);
    now += 10_000;
    failed(2, 'timed out');
    expect(lines[1]).toEqual({ failed_exports: 6, dropped_spans: 17, error: 'timed out' });
    now += 59_999;
    failed(1, 'refused');
    expect(lines).toHaveLength(2);
  });

  it('is what a gateway whose collector refuses every export writes', async () => {
    const otlp = await startOtlpFake({ status: 500 });
    const lines: Array<Record<string, unknown>> = [];
    const stream = new Writable({ write: (chunk, _e, done) => (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), done()) });
    const gw = await startTestGateway(
      { observability: { tracing: { enabled: true, endpoint: otlp.url, export_interval: '20ms' } } },
      { logger: createLogger('warn', stream) },
    );
    try {
      for (let i = 0; i < 4; i++) {
        await gw.get(`/no/such/route/${i}`);
        const exports = otlp.exports;
        await waitFor(() => otlp.exports > exports, 10_000, 'an export attempt');
      }
      const failures = lines.filter((l) => l.msg === 'tracing: spans could not be exported (at most one line a minute)');
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({ failed_exports: 1, level: 40 });
      expect(failures[0]!.dropped_spans).toBeGreaterThanOrEqual(1);
      expect(String(failures[0]!.error)).toMatch(/500/);
    } finally {
      await gw.close();
      await otlp.close();
    }
  });
});

describe('the OTEL_* variables, where config.yaml says nothing', () => {
  let dir: string;
  let otlp: OtlpFake;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-otel-env-'));
    otlp = await startOtlpFake();
  });
  afterAll(async () => {
    await otlp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('name the collector, its headers, the service, the resource and the sampler', async () => {
    const file = writeConfig(
      dir,
      testConfigDocument(dir, {
        database: { url: `sqlite:${join(dir, 'env.db')}` },
        observability: { tracing: { enabled: true, export_interval: '50ms' } },
        log: { level: 'info' },
      }),
    );
    const serve = await startServe(file, {
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k-123',
        OTEL_SERVICE_NAME: 'sms-from-env',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,k8s.pod.name=gw-0',
        // New traces are never kept; a caller's sampled trace is followed.
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0',
      },
      startTimeoutMs: 40_000,
    });
    try {
      // A route whose callers hold a credential follows the caller (src/observability/tracing.ts, followsCallerTrace).
      await fetch(`${serve.url}/userdetails/unsampled`);
      await fetch(`${serve.url}/userdetails/sampled`, { headers: { traceparent: `00-${TRACE_ID}-${SPAN_ID}-01` } });
      const span = await waitFor(() => otlp.spans.find((s) => s.attributes['url.path'] === '/userdetails/sampled'), 15_000, 'the sampled span');
      expect(span).toMatchObject({ traceId: TRACE_ID, serviceName: 'sms-from-env' });
      expect(span.resource).toMatchObject({ 'deployment.environment.name': 'staging', 'k8s.pod.name': 'gw-0' });
      expect(otlp.headers[0]).toMatchObject({ 'x-collector-key': 'k-123' });
      expect(otlp.spans.some((s) => s.attributes['url.path'] === '/userdetails/unsampled')).toBe(false);
    } finally {
      serve.child.kill('SIGKILL');
    }
  }, 60_000);
});
