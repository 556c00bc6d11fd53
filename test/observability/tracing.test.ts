/**
 * Traces (docs/tracing.md): with observability.tracing on, one message's spans reach an OTLP/HTTP receiver by the
 * OpenTelemetry semantic conventions: the CRM's request (a SERVER span `{method} {route}` under its traceparent), the
 * send, its database commits, the provider call and its HTTP request (a CLIENT span whose traceparent the provider
 * receives); then, in later requests, the receipt (under the /dlr request, linked to the send) and the conversion
 * post (a trace of its own, linked to the send). Relayed events get a span linked to their relay request. Log lines
 * written inside a span carry its ids. Off (the default), nothing is exported, no header is sent and no
 * OpenTelemetry module is loaded.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Writable } from 'node:stream';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { readPackageVersion } from '../../src/observability/openapi.js';
import { FakeCrm } from '../fakes/crm.js';
import { startInfobipFake, type InfobipFake } from '../fakes/infobip.js';
import { startOtlpFake, type OtlpFake, type ReceivedSpan } from '../fakes/otlp.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { startFakeServer, readBody, sendJson, type FakeServer } from '../fakes/http.js';
import { RELAY_KEY, relay, thinEvent } from '../helpers/events.js';
import { startServe, writeConfig } from '../helpers/child.js';
import { TEST_API_KEY, testConfigDocument } from '../helpers/gateway.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CRM_SPAN_ID = '00f067aa0ba902b7';
const CRM_TRACEPARENT = `00-${TRACE_ID}-${CRM_SPAN_ID}-01`;
const SECRET = 'infobip-webhook-secret-0123';
const KIND = { internal: 1, server: 2, client: 3, producer: 4 };

/** The CRM's Integration API: records the traceparent of each event it is sent. */
async function startIntegrationSink(): Promise<FakeServer & { traceparents: Array<string | undefined> }> {
  const traceparents: Array<string | undefined> = [];
  const server = await startFakeServer(async (req, res) => {
    await readBody(req);
    traceparents.push(typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined);
    sendJson(res, 200, {});
  });
  return Object.assign(server, { traceparents });
}

function gatewayConfig(crm: FakeCrm, infobip: InfobipFake, sink: FakeServer, tracing: Record<string, unknown>) {
  return {
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key', integration: { url: sink.url } },
    relay: { api_keys: [RELAY_KEY] },
    delivery: { poll_interval: '20ms' },
    providers: { infobip: { type: 'infobip', api_key: infobip.apiKey, base_url: infobip.url, webhook_secret: SECRET, from: 'Default' } },
    observability: { tracing },
  };
}

/** A pino destination that keeps each line, parsed. */
function logLines(): { lines: Array<Record<string, unknown>>; stream: Writable } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, stream };
}

describe('with tracing on', () => {
  const crm = new FakeCrm();
  const log = logLines();
  let otlp: OtlpFake;
  let infobip: InfobipFake;
  let sink: Awaited<ReturnType<typeof startIntegrationSink>>;
  let gw: TestGateway;

  beforeAll(async () => {
    await crm.start();
    otlp = await startOtlpFake();
    infobip = await startInfobipFake({ reportStatuses: ['DELIVERED_TO_HANDSET'] });
    sink = await startIntegrationSink();
    // config.yaml's service_name wins over OTEL_SERVICE_NAME; OTEL_RESOURCE_ATTRIBUTES adds to the resource.
    process.env.OTEL_SERVICE_NAME = 'name-from-the-environment';
    process.env.OTEL_RESOURCE_ATTRIBUTES = 'k8s.namespace.name=sms';
    try {
      gw = await startTestGateway(
        gatewayConfig(crm, infobip, sink, { enabled: true, endpoint: otlp.url, export_interval: '50ms', service_name: 'gateway-under-test' }),
        { logger: createLogger('info', log.stream) },
      );
    } finally {
      delete process.env.OTEL_SERVICE_NAME;
      delete process.env.OTEL_RESOURCE_ATTRIBUTES;
    }
  });

  afterAll(async () => {
    await gw?.close();
    await Promise.all([crm.stop(), otlp?.close(), infobip?.close(), sink?.close()]);
  });

  it("puts one message's send in the CRM's trace by the semantic conventions, and links its receipt and conversion to it", async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('trace-1', { provider_name: 'infobip', recipient: '+447700900123' }), {
      traceparent: CRM_TRACEPARENT,
      'user-agent': 'crm-under-test/1.0',
    });
    expect(res.status).toBe(200);
    const smsId: string = res.json.sms_id;
    await waitFor(() => crm.conversions.some((c) => c.sms_id === smsId), 10_000, 'the conversion at the CRM');

    const names = ['POST /channels/sms/single', 'sms.send', 'INSERT messages', 'UPDATE messages', 'provider.send', 'POST'];
    const spans = await waitFor(
      () => {
        const mine = otlp.spans.filter((s) => s.traceId === TRACE_ID);
        return names.every((n) => mine.some((s) => s.name === n)) ? mine : undefined;
      },
      10_000,
      'every span of the send at the receiver',
    );
    const one = (name: string, within: ReceivedSpan[] = spans) => {
      const found = within.filter((s) => s.name === name);
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };

    const request = one('POST /channels/sms/single');
    expect(request).toMatchObject({ parentSpanId: CRM_SPAN_ID, kind: KIND.server, serviceName: 'gateway-under-test' });
    const gatewayUrl = new URL(gw.url);
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.path': '/channels/sms/single',
      'url.scheme': 'http',
      'http.route': '/channels/sms/single',
      'server.address': gatewayUrl.hostname,
      'server.port': Number(gatewayUrl.port),
      'client.address': '127.0.0.1',
      'user_agent.original': 'crm-under-test/1.0',
      'http.response.status_code': 200,
    });
    expect(request.attributes['error.type']).toBeUndefined();
    expect(request.resource).toMatchObject({
      'service.name': 'gateway-under-test',
      'service.version': readPackageVersion(),
      'deployment.environment.name': 'development',
      'k8s.namespace.name': 'sms',
    });
    expect(request.resource['service.instance.id']).toMatch(/^[0-9a-f-]{36}$/);

    const send = one('sms.send');
    expect(send.parentSpanId).toBe(request.spanId);
    expect(send.attributes).toMatchObject({ 'sms.sms_id': smsId, 'sms.activity_id': 'trace-1', 'sms.outcome': 'submitted', 'sms.provider': 'infobip' });
    const system = process.env.TEST_DATABASE_URL ? 'postgresql' : 'sqlite';
    expect(one('INSERT messages')).toMatchObject({
      parentSpanId: send.spanId,
      kind: KIND.client,
      attributes: { 'db.system.name': system, 'db.operation.name': 'INSERT', 'db.collection.name': 'messages', 'ledger.step': 'claim' },
    });
    expect(one('UPDATE messages')).toMatchObject({
      parentSpanId: send.spanId,
      attributes: { 'db.system.name': system, 'db.operation.name': 'UPDATE', 'ledger.step': 'record' },
    });
    const call = one('provider.send');
    expect(call).toMatchObject({ parentSpanId: send.spanId, kind: KIND.internal });
    const http = one('POST');
    const infobipUrl = new URL(infobip.url);
    expect(http).toMatchObject({ parentSpanId: call.spanId, kind: KIND.client });
    expect(http.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.full': `${infobip.url.replace(/\/+$/, '')}/sms/3/messages`,
      'server.address': infobipUrl.hostname,
      'server.port': Number(infobipUrl.port),
      'http.response.status_code': 200,
    });
    // The provider received the HTTP request's span as its parent.
    const sent = infobip.sends.find((s) => s.messageId && s.to === '447700900123')!;
    expect(sent.traceparent).toBe(`00-${TRACE_ID}-${http.spanId}-01`);

    // The receipt: a span under the /dlr request that carried it, linked to the send.
    const receipt = await waitFor(() => otlp.spans.find((s) => s.name === 'sms.receipt' && s.attributes['sms.sms_id'] === smsId), 10_000, 'the receipt span');
    expect(receipt.attributes).toMatchObject({ 'sms.receipt_status': 'delivered' });
    expect(receipt.links).toEqual([{ traceId: TRACE_ID, spanId: send.spanId }]);
    // The /dlr request's span ends after its answer, so it may be exported after the receipt's.
    const dlr = await waitFor(() => otlp.spans.find((s) => s.spanId === receipt.parentSpanId), 10_000, 'the /dlr request span');
    expect(dlr).toMatchObject({ name: 'POST /dlr/:provider', kind: KIND.server, attributes: { 'http.route': '/dlr/:provider', 'url.path': '/dlr/infobip' } });

    // The conversion post: a trace of its own, linked to the send; its HTTP request under it.
    const conversion = await waitFor(
      () => otlp.spans.find((s) => s.name === 'sms.conversion_post' && s.attributes['sms.sms_id'] === smsId),
      10_000,
      'the conversion span',
    );
    expect(conversion).toMatchObject({ parentSpanId: '', attributes: { 'sms.delivery_status': 'delivered', 'sms.post_size': 1 } });
    expect(conversion.links).toEqual([{ traceId: TRACE_ID, spanId: send.spanId }]);
    const webhookPost = await waitFor(() => otlp.spans.find((s) => s.parentSpanId === conversion.spanId), 10_000, 'the webhook POST span');
    expect(webhookPost).toMatchObject({ name: 'POST', kind: KIND.client, traceId: conversion.traceId });
    expect(webhookPost.attributes).toMatchObject({
      'url.full': `${crm.url.replace(/\/+$/, '')}/sms/conversion`,
      'http.response.status_code': 200,
    });
    const post = crm.requests.find((r) => r.body.some((c) => c.sms_id === smsId))!;
    expect(post.traceparent).toBe(`00-${conversion.traceId}-${webhookPost.spanId}-01`);
  });

  it('starts a new trace for a request without a traceparent, and one for a malformed one', async () => {
    for (const [id, headers] of [
      ['trace-2', {}],
      ['trace-3', { traceparent: 'garbage' }],
      ['trace-4', { traceparent: `00-${'0'.repeat(32)}-${CRM_SPAN_ID}-01` }],
      ['trace-5', { traceparent: `01-${TRACE_ID}-${CRM_SPAN_ID}-01-${'a'.repeat(5_000)}` }],
    ] as const) {
      const res = await gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'infobip', recipient: '+447700900124' }), headers);
      expect(res.status).toBe(200);
      const send = await waitFor(
        () => otlp.spans.find((s) => s.name === 'sms.send' && s.attributes['sms.activity_id'] === id),
        10_000,
        `the send span of ${id}`,
      );
      const request = otlp.spans.find((s) => s.spanId === send.parentSpanId)!;
      expect(request.parentSpanId).toBe('');
      expect(send.traceId).not.toBe(TRACE_ID);
    }
  });

  it('gives every route a SERVER span named {method} {route}: /mo, the operator API, a 404 (no route), an unknown method', async () => {
    // The caller's traceparent parents the span only on a route whose callers hold a credential; at a public door
    // and on a path no route serves, the span starts a trace of its own, linked to the caller's (followsCallerTrace).
    const requests = [
      { path: '/mo/infobip', method: 'POST', name: 'POST /mo/:provider', route: '/mo/:provider', follows: false },
      { path: '/userdetails/u-traced', method: 'GET', name: 'GET /userdetails/:userid', route: '/userdetails/:userid', follows: true },
      { path: '/no/such/route', method: 'GET', name: 'GET', route: undefined, follows: false },
    ];
    for (const r of requests) {
      const res = await fetch(gw.url + r.path, {
        method: r.method,
        headers: { 'x-api-key': TEST_API_KEY, 'content-type': 'application/json', traceparent: CRM_TRACEPARENT },
        ...(r.method === 'POST' ? { body: '{}' } : {}),
      });
      const span = await waitFor(() => otlp.spans.find((s) => s.kind === KIND.server && s.attributes['url.path'] === r.path), 10_000, `the span of ${r.path}`);
      if (r.follows) expect(span).toMatchObject({ name: r.name, traceId: TRACE_ID, parentSpanId: CRM_SPAN_ID });
      else {
        expect(span).toMatchObject({ name: r.name, parentSpanId: '', links: [{ traceId: TRACE_ID, spanId: CRM_SPAN_ID }] });
        expect(span.traceId).not.toBe(TRACE_ID);
      }
      expect(span.attributes['http.route']).toBe(r.route);
      expect(span.attributes['http.response.status_code']).toBe(res.status);
      expect(span.attributes['http.request.method']).toBe(r.method);
    }
    // A header is untrusted input: a long User-Agent is kept cut.
    await fetch(`${gw.url}/no/such/long-agent`, { headers: { 'user-agent': 'x'.repeat(8_000) } });
    const long = await waitFor(() => otlp.spans.find((s) => s.attributes['url.path'] === '/no/such/long-agent'), 10_000, 'the long-agent span');
    expect(long.attributes['user_agent.original']).toBe('x'.repeat(1_024));
    // A method the conventions do not name is reported as _OTHER, with the original beside it.
    await fetch(`${gw.url}/channels/sms/single`, { method: 'PURGE', headers: { traceparent: CRM_TRACEPARENT } });
    const other = await waitFor(() => otlp.spans.find((s) => s.attributes['http.request.method_original'] === 'PURGE'), 10_000, 'the PURGE span');
    expect(other.attributes['http.request.method']).toBe('_OTHER');
  });

  it('marks failures with error.type: the 503 answer, the failed provider call and its HTTP 500', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('trace-fail', { provider_name: 'infobip', recipient: '+15005550500' }), {
      traceparent: `00-${'e'.repeat(32)}-${CRM_SPAN_ID}-01`,
    });
    expect(res.status).toBe(503);
    const spans = await waitFor(
      () => {
        const mine = otlp.spans.filter((s) => s.traceId === 'e'.repeat(32));
        return ['POST /channels/sms/single', 'provider.send', 'POST'].every((n) => mine.some((s) => s.name === n)) ? mine : undefined;
      },
      10_000,
      'the spans of the failed send',
    );
    const named = (name: string) => spans.find((s) => s.name === name)!;
    expect(named('POST /channels/sms/single')).toMatchObject({ statusCode: 2, attributes: { 'http.response.status_code': 503, 'error.type': '503' } });
    expect(named('provider.send')).toMatchObject({ statusCode: 2, attributes: { 'error.type': 'transient' } });
    expect(named('POST')).toMatchObject({ statusCode: 2, attributes: { 'http.response.status_code': 500, 'error.type': '500' } });
    expect(named('sms.send').statusCode).toBe(2);
  });

  it("writes the active span's trace and span ids in log lines", async () => {
    // An unsigned receipt is refused; the first refusal of the minute is logged at once, inside the request's span
    // (a trace of its own: /dlr is a public door, so the caller's traceparent is only linked).
    const res = await fetch(`${gw.url}/dlr/infobip`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: CRM_TRACEPARENT },
      body: '{}',
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    const line = await waitFor(
      () => log.lines.find((l) => l.msg === 'provider callbacks refused (counts per minute)' && l.door === 'dlr'),
      10_000,
      'the warning',
    );
    const span = await waitFor(() => otlp.spans.find((s) => s.spanId === line.span_id), 10_000, 'the span of the logged request');
    expect(line).toMatchObject({ trace_id: span.traceId, trace_flags: '01' });
    expect(span).toMatchObject({ name: 'POST /dlr/:provider', parentSpanId: '', links: [{ traceId: TRACE_ID, spanId: CRM_SPAN_ID }] });
    // Outside any span, no ids.
    expect(log.lines.find((l) => l.msg === 'tracing on')).not.toHaveProperty('trace_id');
  });

  it("sends a relayed event in a trace of its own, linked to the relay request, with the HTTP request's span in its header", async () => {
    const res = await relay(gw, 'PUT', '/v2/integration/user/consents', thinEvent('u-trace-1'), RELAY_KEY, { traceparent: CRM_TRACEPARENT });
    expect(res.status).toBe(202);
    const header = await waitFor(() => sink.traceparents.find((t) => t !== undefined), 10_000, 'the event at the CRM');
    const relayed = await waitFor(
      () => otlp.spans.find((s) => s.traceId === TRACE_ID && s.attributes['http.route'] === '/relay/v2/integration/user/consents'),
      10_000,
      'the relay span',
    );
    expect(relayed.name).toBe('PUT /relay/v2/integration/user/consents');
    const eventSpan = await waitFor(() => otlp.spans.find((s) => s.name === 'event.send'), 10_000, 'the event span');
    expect(eventSpan).toMatchObject({
      parentSpanId: '',
      links: [{ traceId: TRACE_ID, spanId: relayed.spanId }],
      attributes: { 'crm.event_id': res.json.event_id },
    });
    const put = await waitFor(() => otlp.spans.find((s) => s.parentSpanId === eventSpan.spanId), 10_000, 'the HTTP span of the event');
    expect(put).toMatchObject({ kind: KIND.client, attributes: { 'http.request.method': 'PUT', 'http.response.status_code': 200 } });
    expect(header).toBe(`00-${eventSpan.traceId}-${put.spanId}-01`);
  });
});

describe('a collector that never answers', () => {
  it('costs the last spans, logged, not the shutdown: the export gets a quarter of server.shutdown_timeout', async () => {
    // Accepts the connection and never answers: what a collector behind a dead proxy or a black-holed address does.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const log = logLines();
    try {
      const gw = await startTestGateway(
        {
          server: { shutdown_timeout: '2s' },
          observability: { tracing: { enabled: true, endpoint: `http://127.0.0.1:${port}`, export_timeout: '30s', export_interval: '1h' } },
        },
        { logger: createLogger('info', log.stream) },
      );
      expect((await gw.post('/channels/sms/single', smsMessage('silent-collector-1'))).status).toBe(200);
      const began = performance.now();
      await gw.close();
      expect(performance.now() - began).toBeLessThan(2_000);
      expect(log.lines.find((l) => l.msg === 'tracing: the last spans could not be exported')).toMatchObject({
        err: { message: 'the collector did not answer within 500 ms' },
      });
      expect(sockets.size).toBeGreaterThan(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe('with tracing off (the default)', () => {
  const crm = new FakeCrm();
  const log = logLines();
  let otlp: OtlpFake;
  let infobip: InfobipFake;
  let sink: Awaited<ReturnType<typeof startIntegrationSink>>;
  let gw: TestGateway;
  let closed = false;

  beforeAll(async () => {
    await crm.start();
    otlp = await startOtlpFake();
    infobip = await startInfobipFake({ reportStatuses: ['DELIVERED_TO_HANDSET'] });
    sink = await startIntegrationSink();
    // The endpoint is set, to show that `enabled` alone decides.
    gw = await startTestGateway(gatewayConfig(crm, infobip, sink, { endpoint: otlp.url, export_interval: '50ms' }), {
      logger: createLogger('info', log.stream),
    });
  });

  afterAll(async () => {
    if (!closed) await gw?.close();
    await Promise.all([crm.stop(), otlp?.close(), infobip?.close(), sink?.close()]);
  });

  it('exports nothing, sends no traceparent, stores none and logs no trace ids', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('untraced-1', { provider_name: 'infobip', recipient: '+447700900125' }), {
      traceparent: CRM_TRACEPARENT,
    });
    expect(res.status).toBe(200);
    await waitFor(() => crm.conversions.some((c) => c.sms_id === res.json.sms_id), 10_000, 'the conversion at the CRM');
    const relayed = await relay(gw, 'PUT', '/v2/integration/user/consents', thinEvent('u-untraced-1'), RELAY_KEY, { traceparent: CRM_TRACEPARENT });
    expect(relayed.status).toBe(202);
    await waitFor(() => sink.traceparents.length > 0, 10_000, 'the event at the CRM');
    await fetch(`${gw.url}/dlr/infobip`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: CRM_TRACEPARENT }, body: '{}' });
    const refused = await waitFor(() => log.lines.find((l) => l.msg === 'provider callbacks refused (counts per minute)'), 10_000, 'the warning');
    expect(Object.keys(refused).filter((k) => k.startsWith('trace') || k === 'span_id')).toEqual([]);
    const stored = await gw.gateway.ledger.db.selectFrom('messages').select('traceparent').where('sms_id', '=', res.json.sms_id).executeTakeFirstOrThrow();
    expect(stored.traceparent).toBeNull();
    await gw.close();
    closed = true;
    expect(infobip.sends.every((s) => s.traceparent === undefined)).toBe(true);
    expect(crm.requests.every((r) => r.traceparent === undefined)).toBe(true);
    expect(sink.traceparents).toEqual([undefined]);
    expect(otlp.exports).toBe(0);
  });
});

describe('the OpenTelemetry packages', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-otel-load-'));
    // A module loader hook (node:module register) that writes every module URL the served process resolves.
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.RESOLVED_LOG, result.url + '\\n');
  return result;
}
`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['are never loaded with tracing off, even for a request with a traceparent', false],
    ['are loaded with tracing on', true],
  ])(
    '%s',
    async (_label, enabled) => {
      const name = enabled ? 'on' : 'off';
      const log = join(dir, `resolved-${name}.txt`);
      writeFileSync(log, '');
      const file = writeConfig(
        dir,
        testConfigDocument(dir, {
          database: { url: `sqlite:${join(dir, `${name}.db`)}` },
          observability: { tracing: { enabled, endpoint: 'http://127.0.0.1:9' } },
          log: { level: 'info' },
        }),
        `${name}.yaml`,
      );
      const serve = await startServe(file, {
        nodeArgs: ['--import', pathToFileURL(join(dir, 'register.mjs')).href],
        env: { RESOLVED_LOG: log },
        startTimeoutMs: 40_000,
      });
      try {
        const res = await fetch(`${serve.url}/channels/sms/single`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, traceparent: CRM_TRACEPARENT },
          body: JSON.stringify(smsMessage(`load-${name}`)),
        });
        expect(res.status).toBe(200);
      } finally {
        serve.child.kill('SIGKILL');
      }
      const resolved = readFileSync(log, 'utf8').split('\n');
      // The hook works: the gateway's own modules are in the list.
      expect(resolved.some((url) => url.endsWith('/dist/src/gateway.js'))).toBe(true);
      expect(resolved.some((url) => url.includes('/@opentelemetry/'))).toBe(enabled);
      expect(resolved.some((url) => url.endsWith('/dist/src/observability/otel.js'))).toBe(enabled);
    },
    60_000,
  );
});
