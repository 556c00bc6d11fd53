/**
 * The access log (log.access): one line per answer with method, route pattern, status, duration, request id and,
 * with tracing on, the trace id; never a body, a key, a path or a phone number. Real gateway, real HTTP, the real
 * pino logger writing into an array.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { startOtlpFake } from '../fakes/otlp.js';
import { shouldLogRequest, traceIdOf } from '../../src/observability/access-log.js';
import { createLogger } from '../../src/observability/logger.js';
import { smsMessage, startTestGateway, TEST_API_KEY, type TestGateway } from '../helpers/gateway.js';

type Line = Record<string, unknown> & { msg: string };

let gw: TestGateway | undefined;
let raw: string[] = [];
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

function capturingLogger() {
  raw = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return createLogger('info', sink);
}

const requestLines = () => raw.map((text) => JSON.parse(text) as Line).filter((l) => l.msg === 'request');

describe('shouldLogRequest', () => {
  it.each([
    [200, 1, 0.999, true],
    [200, 0.1, 0.05, true],
    [200, 0.1, 0.1, false],
    [404, 0, 0, false],
    [500, 0, 0.99, true],
    [503, 0.01, 0.5, true],
  ])('status %i at rate %d, draw %d → %s', (status, rate, draw, expected) => {
    expect(shouldLogRequest(status, rate, draw)).toBe(expected);
  });

  it('reads the trace id out of a traceparent', () => {
    expect(traceIdOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(traceIdOf(undefined)).toBeUndefined();
  });
});

describe('the access log of a running gateway', () => {
  it('is off by default', async () => {
    gw = await startTestGateway({ log: { level: 'info' } }, { logger: capturingLogger() });
    expect((await gw.get('/healthz')).status).toBe(200);
    expect(requestLines()).toEqual([]);
  });

  it('writes one line per answer with the route pattern, never the path, the body, a key or the number', async () => {
    gw = await startTestGateway({ log: { level: 'info', access: { enabled: true } }, operator: { backend: 'sql' } }, { logger: capturingLogger() });
    const sent = await gw.post('/channels/sms/single', smsMessage('access-1', { content: 'Your code is 918273', recipient: '+447700900123' }), {
      'x-request-id': 'crm-req-access-1',
    });
    expect(sent.status).toBe(200);
    expect((await gw.get('/userdetails/player-4471?field=email')).status).toBe(404);
    expect((await gw.get('/no/such/path')).status).toBe(404);

    // The sandbox's own receipt (a POST to /dlr/sandbox) is logged too; the three requests above are what is looked at.
    const lines = requestLines().filter((l) => l.route !== '/dlr/:provider');
    expect(lines.map(({ method, route, status, request_id }) => ({ method, route, status, request_id }))).toEqual([
      { method: 'POST', route: '/channels/sms/single', status: 200, request_id: 'crm-req-access-1' },
      { method: 'GET', route: '/userdetails/:userid', status: 404, request_id: expect.any(String) },
      { method: 'GET', route: 'unmatched', status: 404, request_id: expect.any(String) },
    ]);
    for (const line of lines) {
      expect(Object.keys(line).sort()).toEqual(['duration_ms', 'level', 'method', 'msg', 'request_id', 'route', 'service', 'status', 'time']);
      expect(line.duration_ms).toBeGreaterThan(0);
      expect(line.level).toBe(30);
    }
    const text = raw.filter((l) => l.includes('"msg":"request"')).join('\n');
    for (const secret of ['447700900123', '918273', TEST_API_KEY, 'player-4471', 'field=email', '/no/such/path']) expect(text).not.toContain(secret);
  });

  it('at sample_rate 0 writes no answer below 500', async () => {
    gw = await startTestGateway({ log: { level: 'info', access: { enabled: true, sample_rate: 0 } } }, { logger: capturingLogger() });
    expect((await gw.get('/healthz')).status).toBe(200);
    expect((await gw.post('/channels/sms/single', { nonsense: true })).status).toBe(400);
    expect(requestLines()).toEqual([]);
  });

  it("with tracing on, carries the request's trace id", async () => {
    const otlp = await startOtlpFake();
    try {
      gw = await startTestGateway(
        { log: { level: 'info', access: { enabled: true } }, observability: { tracing: { enabled: true, endpoint: otlp.url, export_interval: '50ms' } } },
        { logger: capturingLogger() },
      );
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const sent = await gw.post('/channels/sms/single', smsMessage('access-traced'), { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
      expect(sent.status).toBe(200);
      expect(requestLines().find((l) => l.route === '/channels/sms/single')).toMatchObject({ trace_id: traceId, status: 200 });
      await gw.close();
      gw = undefined;
    } finally {
      await otlp.close();
    }
  });
});
