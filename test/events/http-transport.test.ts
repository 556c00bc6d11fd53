/**
 * The HTTP transport against a real HTTP server on an ephemeral port: what reaches the CRM, how an answer becomes
 * an outcome, and the send deadline (crm.integration.timeout) for sends on a connection and for sends still waiting
 * for one, which share one timer per turn (src/events/http-transport.ts, on the one client of src/http/outbound.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpTransport } from '../../src/events/http-transport.js';
import { createOutboundClient } from '../../src/http/outbound.js';
import type { OutgoingEvent } from '../../src/events/transport.js';
import { readBody, startFakeServer, type FakeServer } from '../fakes/http.js';

const event = (n: number, extra: Partial<OutgoingEvent> = {}): OutgoingEvent => ({
  id: n,
  event_id: `event-${n}`,
  type: 'payment',
  method: 'POST',
  path: '/v1/integration/payment',
  user_id: `user-${n}`,
  payload_json: JSON.stringify({ user_id: `user-${n}`, amount: n }),
  attempts: 0,
  created_at: 0,
  traceparent: null,
  channel: 'integration',
  ...extra,
});

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function server(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void): Promise<FakeServer> {
  const s = await startFakeServer(handler);
  open.push(s);
  return s;
}

/** The receivers' one HTTP client (src/http/outbound.ts), closed after each test. */
function client() {
  const http = createOutboundClient();
  open.push(http);
  return http;
}

function transport(url: string, options: { timeout?: number; max_connections?: number } = {}) {
  const t = createHttpTransport(
    {
      url,
      headers: { authorization: 'Bearer crm' },
      timeout: options.timeout ?? 5_000,
      max_connections: options.max_connections ?? 4,
    },
    client(),
  );
  open.push({ close: async () => (t.abort(), await t.close()) });
  return t;
}

describe('the HTTP transport', () => {
  it('sends the stored body to the base path + the event path with the configured headers and the Idempotency-Key', async () => {
    const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
    const crm = await server(async (req, res) => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: (await readBody(req)).toString('utf8') });
      res.writeHead(202).end();
    });
    const t = transport(`${crm.url}/api/`);
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(await t.send(event(1, { traceparent }))).toEqual({ ok: true, status: 202 });
    expect(await t.send(event(2, { method: 'PUT' }))).toEqual({ ok: true, status: 202 });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/api/v1/integration/payment', body: event(1).payload_json });
    expect(seen[0]!.headers).toMatchObject({ authorization: 'Bearer crm', 'content-type': 'application/json', 'idempotency-key': 'event-1' });
    // The stored traceparent is the relay request's: the event's own span is linked to it, and with tracing on the
    // undici instrumentation sends that span's header (test/observability/tracing.test.ts). Here tracing is off.
    expect(seen[0]!.headers.traceparent).toBeUndefined();
    expect(seen[1]).toMatchObject({ method: 'PUT', headers: { 'idempotency-key': 'event-2' } });
  });

  it('answers a refusal with its status, the start of its body and the Retry-After asked for', async () => {
    const long = 'é'.repeat(2_000);
    const crm = await server((req, res) => {
      if (req.url!.endsWith('/long')) res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' }).end(long);
      else res.writeHead(429, { 'retry-after': '7' }).end('{"error":"slow down"}');
    });
    const t = transport(crm.url);
    expect(await t.send(event(1))).toEqual({ ok: false, status: 429, error: 'CRM answered 429: {"error":"slow down"}', retryAfterMs: 7_000 });
    expect(await t.send(event(2, { path: '/long' }))).toEqual({ ok: false, status: 400, error: `CRM answered 400: ${'é'.repeat(300)}…` });
  });

  it('answers "unreachable" with no status when nothing listens', async () => {
    const crm = await server((_req, res) => void res.end());
    const url = crm.url;
    await crm.close();
    const outcome = await transport(url).send(event(1));
    expect(outcome).toMatchObject({ ok: false, status: null });
    expect(outcome.ok || outcome.error).toMatch(/^CRM unreachable: ECONNREFUSED/);
  });

  it('ends a send the CRM never answers at crm.integration.timeout, and those queued behind it for a connection too', async () => {
    const hung: ServerResponse[] = [];
    const crm = await server((_req, res) => void hung.push(res));
    const t = transport(crm.url, { timeout: 400, max_connections: 1 });
    const started = performance.now();
    // One connection: the first send holds it, the other two wait for it.
    const outcomes = await Promise.all([t.send(event(1)), t.send(event(2)), t.send(event(3))]);
    const elapsed = performance.now() - started;
    for (const o of outcomes) {
      expect(o).toMatchObject({ ok: false, status: null });
      expect(o.ok || o.error).toContain('CRM unreachable');
    }
    expect(outcomes[0]!.ok || outcomes[0]!.error).toContain('no answer within crm.integration.timeout (400 ms)');
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(1_000);
    expect(hung).toHaveLength(1);
  });

  it('gives each turn its own deadline: a send started later is not cut short by an earlier turn', async () => {
    const crm = await server(async (req, res) => {
      const wait = Number(new URL(req.url!, 'http://x').searchParams.get('wait'));
      await new Promise((r) => setTimeout(r, wait));
      res.writeHead(200).end();
    });
    const t = transport(crm.url, { timeout: 600 });
    const first = t.send(event(1, { path: '/a?wait=100' }));
    await new Promise((r) => setTimeout(r, 300));
    // 300 ms after the first turn's timer started: this one has its own 600 ms.
    const second = await t.send(event(2, { path: '/b?wait=450' }));
    expect(await first).toEqual({ ok: true, status: 200 });
    expect(second).toEqual({ ok: true, status: 200 });
  });

  it('abort() ends the sends in flight at once as unreachable', async () => {
    const crm = await server(() => {});
    const t = createHttpTransport({ url: crm.url, headers: {}, timeout: 30_000, max_connections: 2 }, client());
    const sends = [t.send(event(1)), t.send(event(2)), t.send(event(3))];
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    t.abort();
    for (const o of await Promise.all(sends)) expect(o).toMatchObject({ ok: false, status: null });
    expect(performance.now() - started).toBeLessThan(1_000);
    await t.close();
  });
});
