import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { parsePrometheusText, valueOf, type Exposition } from '../helpers/prometheus.js';

const crm = new FakeCrm();
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
let gateways: TestGateway[] = [];

async function gatewayWith(overrides: Record<string, unknown> = {}) {
  // The outbox and parked-receipt gauges count the whole ledger: each gateway gets its own.
  const gw = await startTestGateway({
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 50 },
    ...overrides,
  });
  gateways.push(gw);
  return gw;
}

async function scrape(gw: TestGateway): Promise<Exposition> {
  const res = await fetch(`${gw.url}/metrics`, { headers: admin });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

beforeAll(async () => {
  await crm.start();
});
afterAll(async () => crm.stop());
afterEach(async () => {
  await Promise.all(gateways.map((gw) => gw.close()));
  gateways = [];
  crm.reset();
});

describe('GET /metrics after real sends and receipts', () => {
  it('counts sends by outcome, segments, receipts, parked receipts, delivery times, conversions and requests', async () => {
    const gw = await gatewayWith();
    const batch = await gw.post('/channels/sms/batch', [smsMessage('m-batch-1'), smsMessage('m-batch-2', { recipient: '+447700900124' })]);
    expect(batch.json.successful).toHaveLength(2);
    const long = await gw.post('/channels/sms/single', smsMessage('m-long', { content: 'x'.repeat(200), recipient: '+447700900125' }));
    const undelivered = await gw.post('/channels/sms/single', smsMessage('m-undelivered', { recipient: '+447700900001' }));
    expect((await gw.post('/channels/sms/single', smsMessage('m-rejected', { recipient: '+447700900004' }))).status).toBe(400);
    expect((await gw.post('/channels/sms/single', smsMessage('m-transient', { recipient: '+447700900005' }))).status).toBe(503);
    // A receipt nobody can match yet, and one receipt twice.
    await gw.postReceipt([{ message_id: 'not-known-yet', status: 'delivered' }]);
    await gw.postReceipt([{ sms_id: long.json.sms_id, message_id: 'twice', status: 'sent' }]);
    await gw.postReceipt([{ sms_id: long.json.sms_id, message_id: 'twice', status: 'sent' }]);
    const accepted = [...batch.json.successful.map((s: { sms_id: string }) => s.sms_id), long.json.sms_id, undelivered.json.sms_id];
    await waitFor(() => accepted.every((id) => crm.conversions.some((c) => c.sms_id === id)), 10_000, 'four conversions');
    await waitFor(async () => valueOf(await scrape(gw), 'sms_gateway_conversions_posted_total') === 4, 5_000, 'posted counter');

    const m = await scrape(gw);
    const sandbox = { provider: 'sandbox' };
    expect(valueOf(m, 'sms_gateway_messages_sent_total', { ...sandbox, outcome: 'submitted' })).toBe(4);
    expect(valueOf(m, 'sms_gateway_messages_sent_total', { ...sandbox, outcome: 'rejected' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_messages_sent_total', { ...sandbox, outcome: 'retryable' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_segments_sent_total', { ...sandbox, outcome: 'submitted' })).toBe(5);
    expect(valueOf(m, 'sms_gateway_provider_send_duration_seconds_count', { ...sandbox, outcome: 'submitted' })).toBe(4);
    expect(valueOf(m, 'sms_gateway_receipts_total', { ...sandbox, status: 'delivered' })).toBe(4); // three matched, one parked
    expect(valueOf(m, 'sms_gateway_receipts_total', { ...sandbox, status: 'undelivered' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_receipts_total', { ...sandbox, status: 'intermediate' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_receipts_duplicate_total', sandbox)).toBe(1);
    expect(valueOf(m, 'sms_gateway_receipts_parked_total', sandbox)).toBe(1);
    expect(valueOf(m, 'sms_gateway_receipts_parked', sandbox)).toBe(1);
    expect(valueOf(m, 'sms_gateway_delivery_statuses_total', { ...sandbox, status: 'delivered', source: 'receipt' })).toBe(3);
    expect(valueOf(m, 'sms_gateway_delivery_duration_seconds_count', { ...sandbox, status: 'delivered' })).toBe(3);
    expect(valueOf(m, 'sms_gateway_delivery_duration_seconds_count', { ...sandbox, status: 'undelivered' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_webhook_post_duration_seconds_count', { result: 'ok' })).toBeGreaterThanOrEqual(1);
    for (const state of ['due', 'retrying', 'dead']) expect(valueOf(m, 'sms_gateway_conversion_outbox', { state })).toBe(0);

    const single = { method: 'POST', route: '/channels/sms/single' };
    expect(valueOf(m, 'sms_gateway_http_requests_total', { ...single, status_class: '2xx' })).toBe(2);
    expect(valueOf(m, 'sms_gateway_http_requests_total', { ...single, status_class: '4xx' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_http_requests_total', { ...single, status_class: '5xx' })).toBe(1);
    // Receipts are counted under the route pattern, never one series per provider path or id.
    expect(valueOf(m, 'sms_gateway_http_requests_total', { method: 'POST', route: '/dlr/:provider', status_class: '2xx' })).toBeGreaterThanOrEqual(3);
    expect(m.types.get('sms_gateway_messages_sent_total')).toBe('counter');
    expect(m.types.get('sms_gateway_delivery_duration_seconds')).toBe('histogram');
    expect(m.types.get('sms_gateway_conversion_outbox')).toBe('gauge');
  });

  it('shows conversions waiting, backing off and dead, and counts webhook failures', async () => {
    const waiting = await gatewayWith({ delivery: { worker: false } });
    await waiting.post('/channels/sms/single', smsMessage('w-due'));
    await waitFor(async () => valueOf(await scrape(waiting), 'sms_gateway_conversion_outbox', { state: 'due' }) === 1, 5_000, 'due gauge');
    await waitFor(async () => valueOf(await scrape(waiting), 'sms_gateway_conversion_oldest_pending_age_seconds') > 0, 5_000, 'pending age');

    const backingOff = await gatewayWith({ delivery: { poll_interval: '20ms', retry_initial_ms: 60_000, retry_max_ms: 60_000 } });
    crm.failNext(1, 503);
    await backingOff.post('/channels/sms/single', smsMessage('w-retrying'));
    await waitFor(async () => valueOf(await scrape(backingOff), 'sms_gateway_conversion_outbox', { state: 'retrying' }) === 1, 5_000, 'retrying gauge');
    const m = await scrape(backingOff);
    expect(valueOf(m, 'sms_gateway_webhook_failures_total', { reason: '5xx' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_webhook_post_duration_seconds_count', { result: 'error' })).toBe(1);

    const dying = await gatewayWith({ delivery: { poll_interval: '20ms', max_attempts: 1 } });
    crm.failNext(1, 500);
    await dying.post('/channels/sms/single', smsMessage('w-dead'));
    await waitFor(async () => valueOf(await scrape(dying), 'sms_gateway_conversion_outbox', { state: 'dead' }) === 1, 5_000, 'dead gauge');
    const dead = await scrape(dying);
    expect(valueOf(dead, 'sms_gateway_conversions_dead_lettered_total')).toBe(1);
    // A dead conversion is still owed (the console's age counts it), but no worker tries it: the pending age is 0.
    expect(valueOf(dead, 'sms_gateway_conversion_oldest_unposted_age_seconds')).toBeGreaterThan(0);
    expect(valueOf(dead, 'sms_gateway_conversion_oldest_pending_age_seconds')).toBe(0);
  });
});

describe('who may read /metrics', () => {
  it('requires the admin Bearer key unless metrics.public is on', async () => {
    const closed = await gatewayWith();
    expect((await fetch(`${closed.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${closed.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const open = await gatewayWith({ metrics: { public: true } });
    const res = await fetch(`${open.url}/metrics`);
    expect(res.status).toBe(200);
    expect(valueOf(parsePrometheusText(await res.text()), 'sms_gateway_messages_sent_total', { provider: 'sandbox', outcome: 'submitted' })).toBe(0);
  });

  it('keeps each gateway’s counts to itself when several run in one process', async () => {
    const first = await gatewayWith();
    const second = await gatewayWith();
    await first.post('/channels/sms/single', smsMessage('own-1'));
    const sent = { provider: 'sandbox', outcome: 'submitted' };
    expect(valueOf(await scrape(first), 'sms_gateway_messages_sent_total', sent)).toBe(1);
    expect(valueOf(await scrape(second), 'sms_gateway_messages_sent_total', sent)).toBe(0);
  });
});

describe('metrics.port, build_info and auth refusals', () => {
  it('serves /metrics on a listener of its own, with the same admin rule, and not on the API port', async () => {
    const gw = await gatewayWith({ metrics: { port: 0 } });
    const metricsUrl = gw.gateway.metricsUrl!;
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(metricsUrl).not.toBe(gw.url);
    expect((await fetch(`${gw.url}/metrics`, { headers: admin })).status).toBe(404);
    expect((await fetch(`${metricsUrl}/metrics`)).status).toBe(401);
    expect((await fetch(`${metricsUrl}/channels/sms/single`, { method: 'POST' })).status).toBe(404);
    await gw.post('/channels/sms/single', smsMessage('own-port-1'));
    const res = await fetch(`${metricsUrl}/metrics`, { headers: admin });
    expect(res.status).toBe(200);
    expect(valueOf(parsePrometheusText(await res.text()), 'sms_gateway_messages_sent_total', { provider: 'sandbox', outcome: 'submitted' })).toBe(1);
  });

  it('stops the metrics listener with the gateway', async () => {
    const gw = await gatewayWith({ metrics: { port: 0, public: true } });
    const metricsUrl = gw.gateway.metricsUrl!;
    expect((await fetch(`${metricsUrl}/metrics`)).status).toBe(200);
    await gw.close();
    gateways = gateways.filter((g) => g !== gw);
    await expect(fetch(`${metricsUrl}/metrics`)).rejects.toThrow();
  });

  it('says which version runs on which Node.js in sms_gateway_build_info', async () => {
    const gw = await gatewayWith();
    const info = (await scrape(gw)).samples.filter((s) => s.name === 'sms_gateway_build_info');
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(info).toEqual([{ name: 'sms_gateway_build_info', labels: { version, node: process.version }, value: 1 }]);
  });

  it('counts refused credentials by route and status, and nothing for a good key', async () => {
    const gw = await gatewayWith();
    expect((await gw.post('/channels/sms/single', smsMessage('refused-1'), { 'x-api-key': 'wrong-key' })).status).toBe(401);
    expect((await gw.post('/channels/sms/single', smsMessage('refused-2'), { 'x-api-key': 'wrong-key' })).status).toBe(401);
    expect((await gw.post('/channels/sms/single', smsMessage('accepted-1'))).status).toBe(200);
    const m = await scrape(gw);
    expect(valueOf(m, 'sms_gateway_http_auth_refusals_total', { route: '/channels/sms/single', status: '401' })).toBe(2);
    expect(m.samples.filter((s) => s.name === 'sms_gateway_http_auth_refusals_total' && s.labels.status !== '401')).toEqual([]);
  });

  it('does not count a player’s session refused by POST /authenticate among the refused credentials', async () => {
    const gw = await gatewayWith({ operator: { session_tokens: { secret: 'a-session-secret-of-the-operator-0123456789' } } });
    for (const sid of ['stale-1', 'stale-2']) expect((await gw.post('/authenticate', { sid })).status).toBe(401);
    expect((await gw.post('/authenticate', { sid: 'stale-3' }, { 'x-api-key': 'wrong-key' })).status).toBe(401);
    const m = await scrape(gw);
    expect(valueOf(m, 'sms_gateway_http_auth_refusals_total', { route: '/authenticate', status: '401' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_http_requests_total', { method: 'POST', route: '/authenticate', status_class: '4xx' })).toBe(3);
  });

  it('counts the failed-authentication limiter’s refusals beside the 401s that led to them', async () => {
    // Scraped on its own listener: the API port refuses this address's /metrics too once it is past its budget.
    const gw = await gatewayWith({ auth: { failure_budget: 2, failure_window: '1m' }, metrics: { port: 0, public: true } });
    for (const id of ['guess-1', 'guess-2']) expect((await gw.post('/channels/sms/single', smsMessage(id), { 'x-api-key': 'wrong-key' })).status).toBe(401);
    // Past the budget the address is refused before any key is read: 503 on the single send, 429 elsewhere.
    expect((await gw.post('/channels/sms/single', smsMessage('guess-3'), { 'x-api-key': 'wrong-key' })).status).toBe(503);
    expect((await gw.post('/channels/sms/batch', { messages: [] }, { 'x-api-key': 'wrong-key' })).status).toBe(429);
    const m = parsePrometheusText(await (await fetch(`${gw.gateway.metricsUrl}/metrics`)).text());
    expect(valueOf(m, 'sms_gateway_http_auth_refusals_total', { route: '/channels/sms/single', status: '401' })).toBe(2);
    expect(valueOf(m, 'sms_gateway_http_auth_refusals_total', { route: '/channels/sms/single', status: '503' })).toBe(1);
    expect(valueOf(m, 'sms_gateway_http_auth_refusals_total', { route: '/channels/sms/batch', status: '429' })).toBe(1);
  });
});
