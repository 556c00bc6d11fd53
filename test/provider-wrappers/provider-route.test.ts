/**
 * Failover routes end to end (docs/configuration.md "Providers"): the real gateway with a route over a Twilio fake (member A) and the
 * sandbox (member B). What provably never reached A moves on to B within the same request; what may have reached
 * A stays with A, uncertain. A's circuit breaker opens after N failures and lets one probe through after open_for
 * (the gateway's clock is injected, so no test waits for it).
 */
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { startInfobipFake } from '../fakes/infobip.js';
import { startSinchFake } from '../fakes/sinch.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { readMessage, readMessages } from '../helpers/ledger.js';

const crm = new FakeCrm();
let twilio: TwilioFake;
let gw: TestGateway;
let time = 1_800_000_000_000;
const now = () => time;

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Log lines of the gateway under test (JSON, as pino writes them). */
let logLines: Array<Record<string, unknown>> = [];
function capturingLogger() {
  logLines = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(text) as Record<string, unknown>);
      done();
    },
  });
  return pino({ level: 'info' }, sink);
}

async function start(twilioBaseUrl: string, breaker: Record<string, unknown> = {}) {
  gw = await startTestGateway(
    {
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
      providers: {
        a: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilioBaseUrl },
        sandbox: { type: 'sandbox', dlr_delay_ms: 0 },
        promo: { type: 'route', members: ['a', 'sandbox'], breaker: { failures: 2, open_for: '30s', ...breaker } },
      },
    },
    { now, logger: capturingLogger() },
  );
}

const row = (smsId: string) => gw.gateway.ledger.db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirstOrThrow();
const send = (id: string, recipient = '+447700900123') => gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'promo', recipient }));
const metricsText = async () => (await gw.get('/metrics', { authorization: `Bearer ${TEST_ADMIN_KEY}` })).json as string;

/** The circuit state the console's route-member table shows for `route/member`. */
async function consoleCircuit(member: string): Promise<string | undefined> {
  const login = await fetch(`${gw.url}/console/login`, { method: 'POST', body: new URLSearchParams({ key: TEST_ADMIN_KEY }), redirect: 'manual' });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${gw.url}/console`, { headers: { cookie } })).text();
  return new RegExp(`data-member="${member}">.*?data-circuit="([a-z_]+)"`).exec(page)?.[1];
}

beforeAll(async () => {
  await crm.start();
  twilio = await startTwilioFake();
});
afterAll(async () => {
  await twilio.close();
  await crm.stop();
});
afterEach(async () => {
  await gw?.close();
  crm.reset();
});

describe('a route fails over only what provably never reached a member', () => {
  it("member A refuses connections (closed port): B carries it, the ledger names B, B's receipt becomes the conversion", async () => {
    await start(`http://127.0.0.1:${await closedPort()}`);
    const res = await send('route-refused');
    expect(res.status).toBe(200);
    // Claimed for the route, whose member was not known yet (0); the record names the member, whose receipts carry
    // the sms_id, so the message leaves the index of providers' message ids (1).
    expect(await row(res.json.sms_id)).toMatchObject({ provider: 'sandbox', state: 'submitted', receipts_name_sms_id: 1 });
    const [conversion] = await waitFor(() => {
      const found = crm.conversions.filter((c) => c.sms_id === res.json.sms_id);
      return found.length > 0 ? found : undefined;
    });
    expect(conversion).toMatchObject({ delivery_status: 'delivered' });
    const story = await gw.get(`/admin/messages/${res.json.sms_id}`, { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(story.json.message.provider).toBe('sandbox');
  });

  it('member A answers 429: B carries it in the same request and A saw it once', async () => {
    await start(twilio.url);
    const before = twilio.creates.length;
    const res = await send('route-429', '+15005550429');
    expect(res.status).toBe(200);
    expect(twilio.creates.length).toBe(before + 1);
    expect(await row(res.json.sms_id)).toMatchObject({ provider: 'sandbox', state: 'submitted' });
    expect(await metricsText()).toMatch(/sms_gateway_route_failovers_total\{route="promo",from="a"\} 1/);
  });

  it('member A answers 500: not sent to B, the message stays with A, uncertain, and the CRM gets 503', async () => {
    await start(twilio.url);
    const res = await send('route-500', '+15005550500');
    expect(res.status).toBe(503);
    expect(await readMessage(gw, 'route-500')).toMatchObject({ provider: 'a', state: 'uncertain' });
    expect(await metricsText()).toMatch(/sms_gateway_route_failovers_total\{route="promo",from="a"\} 0/);
  });

  it('a permanent refusal from A is the answer (400), not a reason to try B', async () => {
    await start(twilio.url);
    const res = await send('route-perm', '+15005550001');
    expect(res.status).toBe(400);
    expect(await row(res.json.sms_id)).toMatchObject({ provider: 'a', state: 'rejected' });
  });
});

describe('circuit breaker per member', () => {
  it('opens after N consecutive failures, keeps traffic off A, then lets one probe through after open_for', async () => {
    await start(twilio.url);
    const circuit = async () => /sms_gateway_route_member_circuit\{route="promo",member="a"\} (\d)/.exec(await metricsText())?.[1];
    for (const id of ['br-1', 'br-2']) expect((await send(id, '+15005550429')).status).toBe(200);
    expect(await circuit()).toBe('2');
    expect(await consoleCircuit('promo/a')).toBe('open');
    expect(await consoleCircuit('promo/sandbox')).toBe('closed');
    expect(logLines.find((l) => l.msg === 'circuit opened: traffic kept off the route member')).toMatchObject({
      route: 'promo',
      member: 'a',
      reason: expect.stringMatching(/2 consecutive failed sends.*20429/),
    });

    const before = twilio.creates.length;
    const skipped = await send('br-3');
    expect(skipped.status).toBe(200);
    expect(twilio.creates.length).toBe(before); // A not even asked
    expect(await row(skipped.json.sms_id)).toMatchObject({ provider: 'sandbox' });

    time += 30_000;
    const probe = await send('br-probe');
    expect(probe.status).toBe(200);
    expect(twilio.creates.length).toBe(before + 1);
    expect(await row(probe.json.sms_id)).toMatchObject({ provider: 'a', state: 'submitted' });
    expect(await circuit()).toBe('0');
    expect(logLines.map((l) => l.msg)).toContain('circuit closed: the route member takes traffic again');
  });

  it('a failed half-open probe reopens the circuit for another open_for', async () => {
    await start(twilio.url);
    for (const id of ['bp-1', 'bp-2']) await send(id, '+15005550429');
    time += 30_000;
    expect((await send('bp-probe', '+15005550429')).status).toBe(200); // probe refused by A, carried by B
    const before = twilio.creates.length;
    await send('bp-after');
    expect(twilio.creates.length).toBe(before);
    expect(await metricsText()).toMatch(/sms_gateway_route_member_circuit\{route="promo",member="a"\} 2/);
  });

  it('every member refusing (or open) answers 503 and leaves the message free to send again', async () => {
    await start(`http://127.0.0.1:${await closedPort()}`);
    // A refuses connections; the sandbox answers its transient number as a temporary outage (nothing sent).
    const res = await send('route-none', '+447700900005');
    expect(res.status).toBe(503);
    expect(res.json.error).toMatch(/route promo: not sent/);
    expect(await readMessage(gw, 'route-none')).toMatchObject({ provider: 'promo', state: 'retryable' });
  });
});

describe('routes over sandbox members', () => {
  async function startSandboxRoute(a: Record<string, unknown>, breaker: Record<string, unknown> = {}) {
    gw = await startTestGateway(
      {
        crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
        delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
        providers: {
          a: { type: 'sandbox', dlr_delay_ms: 0, ...a },
          b: { type: 'sandbox', dlr_delay_ms: 0 },
          promo: { type: 'route', members: ['a', 'b'], breaker },
        },
      },
      { now },
    );
  }

  it("a receipt that beats the member's answer still becomes the conversion (parked, then matched to the member)", async () => {
    await startSandboxRoute({ early_receipts: true });
    const res = await send('route-early');
    expect(res.status).toBe(200);
    expect(await waitFor(() => crm.conversions.find((c) => c.sms_id === res.json.sms_id))).toMatchObject({ delivery_status: 'delivered' });
    expect(await readMessage(gw, 'route-early')).toMatchObject({ provider: 'a', state: 'submitted' });
  });

  it('a delivery-rate collapse at member A opens its circuit; the next message goes to B', async () => {
    await startSandboxRoute({}, { min_receipts: 3, min_delivery_rate: 0.5 });
    for (const id of ['dr-1', 'dr-2', 'dr-3']) expect((await send(id, '+447700900001')).status).toBe(200); // sandbox: undelivered
    await waitFor(async () => /sms_gateway_route_member_circuit\{route="promo",member="a"\} 2/.test(await metricsText()), 10_000, 'the circuit to open');
    expect(await consoleCircuit('promo/a')).toBe('open');
    const res = await send('dr-after');
    expect(await readMessage(gw, 'dr-after')).toMatchObject({ provider: 'b' });
    expect(res.status).toBe(200);
  });

  it('a member at its own rate limit passes the message on at once instead of waiting', async () => {
    await startSandboxRoute({ rate_per_second: 0.01 }); // a burst of one, then one every 100 s
    expect((await send('rl-1')).status).toBe(200);
    expect((await send('rl-2')).status).toBe(200);
    expect((await readMessages(gw, ['rl-1', 'rl-2'])).map((m) => m.provider)).toEqual(['a', 'b']);
  });
});

describe('a route over the HTTP aggregators', () => {
  it('Infobip refuses our key (401, nothing sent): Sinch carries it, its callback (tokenised for sinch) reaches /dlr/sinch and becomes the conversion', async () => {
    const infobip = await startInfobipFake();
    const sinch = await startSinchFake({ callbackStatuses: ['Delivered'] });
    try {
      gw = await startTestGateway({
        crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
        delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
        providers: {
          infobip: { type: 'infobip', api_key: 'a-revoked-key', base_url: infobip.url, webhook_secret: 'infobip-webhook-secret-0123' },
          sinch: {
            type: 'sinch',
            service_plan_id: sinch.servicePlanId,
            api_token: sinch.apiToken,
            base_url: sinch.url,
            webhook_secret: 'sinch-webhook-secret-01234',
          },
          global: { type: 'route', members: ['infobip', 'sinch'] },
        },
      });
      const res = await gw.post('/channels/sms/single', smsMessage('agg-401', { provider_name: 'global' }));
      expect(res.status).toBe(200);
      expect(infobip.sends).toEqual([]); // refused before reading the message
      const batch = sinch.batches.find((b) => b.clientReference === res.json.sms_id)!;
      expect(batch.callbackUrl).toContain(`/dlr/sinch?sms_id=${res.json.sms_id}&token=`);
      expect(await waitFor(() => crm.conversions.find((c) => c.sms_id === res.json.sms_id))).toMatchObject({ delivery_status: 'delivered' });
      expect(await readMessage(gw, 'agg-401')).toMatchObject({ provider: 'sinch', provider_message_id: batch.id });
    } finally {
      await infobip.close();
      await sinch.close();
    }
  });
});
