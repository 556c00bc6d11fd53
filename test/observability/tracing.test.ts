/**
 * Traces (docs/tracing.md): with observability.tracing on, one message's spans reach an OTLP/HTTP receiver as one
 * trace, from the CRM's request (its traceparent) through the ledger commits and the provider call to the receipt and
 * the conversion post, which happen in later requests; the provider, the CRM webhook and the CRM's Integration API
 * get the W3C header. Off (the default), nothing is exported and no header is sent.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTraceparent, parseTraceparent, tracesUrl } from '../../src/observability/tracing.js';
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

describe('parseTraceparent', () => {
  it.each<[string, string | undefined, boolean]>([
    ['a sampled version-00 header', CRM_TRACEPARENT, true],
    ['an unsampled one', `00-${TRACE_ID}-${CRM_SPAN_ID}-00`, true],
    ['a later version with an extra field', `01-${TRACE_ID}-${CRM_SPAN_ID}-01-what-comes-next`, true],
    ['version 00 with an extra field', `${CRM_TRACEPARENT}-x`, false],
    ['version ff', `ff-${TRACE_ID}-${CRM_SPAN_ID}-01`, false],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${CRM_SPAN_ID}-01`, false],
    ['an all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`, false],
    ['upper-case hex', CRM_TRACEPARENT.toUpperCase(), false],
    ['a short trace id', `00-${TRACE_ID.slice(1)}-${CRM_SPAN_ID}-01`, false],
    ['nothing', undefined, false],
    ['a long header', `01-${TRACE_ID}-${CRM_SPAN_ID}-01-${'a'.repeat(5_000)}`, false],
  ])('%s', (_label, header, valid) => {
    expect(parseTraceparent(header) !== undefined).toBe(valid);
  });

  it('writes back what it read', () => {
    expect(formatTraceparent(parseTraceparent(CRM_TRACEPARENT)!)).toBe(CRM_TRACEPARENT);
  });

  it.each([
    ['http://collector:4318', 'http://collector:4318/v1/traces'],
    ['http://collector:4318/', 'http://collector:4318/v1/traces'],
    ['http://collector:4318/v1/traces', 'http://collector:4318/v1/traces'],
  ])('the traces URL of endpoint %s is %s', (endpoint, url) => {
    expect(tracesUrl(endpoint)).toBe(url);
  });
});

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

describe('with tracing on', () => {
  const crm = new FakeCrm();
  let otlp: OtlpFake;
  let infobip: InfobipFake;
  let sink: Awaited<ReturnType<typeof startIntegrationSink>>;
  let gw: TestGateway;

  beforeAll(async () => {
    await crm.start();
    otlp = await startOtlpFake();
    infobip = await startInfobipFake({ reportStatuses: ['DELIVERED_TO_HANDSET'] });
    sink = await startIntegrationSink();
    gw = await startTestGateway(
      gatewayConfig(crm, infobip, sink, { enabled: true, endpoint: otlp.url, export_interval: '50ms', service_name: 'gateway-under-test' }),
    );
  });

  afterAll(async () => {
    await gw?.close();
    await Promise.all([crm.stop(), otlp?.close(), infobip?.close(), sink?.close()]);
  });

  it("puts one message's spans in the CRM's trace, from its request to the conversion post", async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('trace-1', { provider_name: 'infobip', recipient: '+447700900123' }), {
      traceparent: CRM_TRACEPARENT,
    });
    expect(res.status).toBe(200);
    const smsId: string = res.json.sms_id;
    await waitFor(() => crm.conversions.some((c) => c.sms_id === smsId), 10_000, 'the conversion at the CRM');

    const names = ['POST request', 'sms.send', 'ledger.commit', 'provider.send', 'sms.receipt', 'sms.conversion_post'];
    const spans = await waitFor(
      () => {
        const mine = otlp.spans.filter((s) => s.traceId === TRACE_ID);
        return names.every((n) => mine.some((s) => s.name === n)) ? mine : undefined;
      },
      10_000,
      'every span of the message at the receiver',
    );
    const one = (name: string, where: (s: ReceivedSpan) => boolean = () => true) => {
      const found = spans.filter((s) => s.name === name && where(s));
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };

    const request = one('POST request');
    expect(request).toMatchObject({ parentSpanId: CRM_SPAN_ID, kind: 2, serviceName: 'gateway-under-test' });
    expect(request.attributes).toMatchObject({ 'http.route': '/channels/sms/single', 'http.response.status_code': 200 });
    const send = one('sms.send');
    expect(send.parentSpanId).toBe(request.spanId);
    expect(send.attributes).toMatchObject({ 'sms.sms_id': smsId, 'sms.activity_id': 'trace-1', 'sms.outcome': 'submitted', 'sms.provider': 'infobip' });
    const commits = spans.filter((s) => s.name === 'ledger.commit');
    expect(commits.map((s) => s.attributes['ledger.step']).sort()).toEqual(['claim', 'record']);
    for (const commit of commits) expect(commit.parentSpanId).toBe(send.spanId);
    const call = one('provider.send');
    expect(call).toMatchObject({ parentSpanId: send.spanId, kind: 3 });
    const receipt = one('sms.receipt');
    expect(receipt.parentSpanId).toBe(send.spanId);
    expect(receipt.attributes).toMatchObject({ 'sms.sms_id': smsId, 'sms.receipt_status': 'delivered' });
    const conversion = one('sms.conversion_post');
    expect(conversion).toMatchObject({ parentSpanId: send.spanId, kind: 3 });
    expect(conversion.attributes).toMatchObject({ 'sms.sms_id': smsId, 'sms.delivery_status': 'delivered' });

    // The W3C header on the wire: the provider's call and the webhook post, each as its own span.
    const sent = infobip.sends.find((s) => s.messageId && s.to === '447700900123')!;
    expect(sent.traceparent).toBe(`00-${TRACE_ID}-${call.spanId}-01`);
    const post = crm.requests.find((r) => r.body.some((c) => c.sms_id === smsId))!;
    expect(post.traceparent).toBe(`00-${TRACE_ID}-${conversion.spanId}-01`);
  });

  it('starts a new trace for a request without a traceparent, and one for a malformed one', async () => {
    for (const [id, headers] of [
      ['trace-2', {}],
      ['trace-3', { traceparent: 'garbage' }],
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

  it("sends a relayed event to the CRM with the relay request's trace", async () => {
    const res = await relay(gw, 'PUT', '/v2/integration/user/consents', thinEvent('u-trace-1'), RELAY_KEY, { traceparent: CRM_TRACEPARENT });
    expect(res.status).toBe(202);
    const header = await waitFor(() => sink.traceparents.find((t) => t !== undefined), 10_000, 'the event at the CRM');
    const relayed = await waitFor(
      () => otlp.spans.find((s) => s.traceId === TRACE_ID && s.attributes['http.route'] === '/relay/v2/integration/user/consents'),
      10_000,
      'the relay span',
    );
    expect(header).toBe(`00-${TRACE_ID}-${relayed.spanId}-01`);
  });
});

describe('with tracing off (the default)', () => {
  const crm = new FakeCrm();
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
    gw = await startTestGateway(gatewayConfig(crm, infobip, sink, { endpoint: otlp.url, export_interval: '50ms' }));
  });

  afterAll(async () => {
    if (!closed) await gw?.close();
    await Promise.all([crm.stop(), otlp?.close(), infobip?.close(), sink?.close()]);
  });

  it('exports nothing, sends no traceparent and stores none', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('untraced-1', { provider_name: 'infobip', recipient: '+447700900125' }), {
      traceparent: CRM_TRACEPARENT,
    });
    expect(res.status).toBe(200);
    await waitFor(() => crm.conversions.some((c) => c.sms_id === res.json.sms_id), 10_000, 'the conversion at the CRM');
    const relayed = await relay(gw, 'PUT', '/v2/integration/user/consents', thinEvent('u-untraced-1'), RELAY_KEY, { traceparent: CRM_TRACEPARENT });
    expect(relayed.status).toBe(202);
    await waitFor(() => sink.traceparents.length > 0, 10_000, 'the event at the CRM');
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
    },
    60_000,
  );
});
