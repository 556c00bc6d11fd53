/**
 * Twilio's price (docs/costs.md "Twilio"): none in its status callbacks, so the message is queued after its final
 * status and its Message resource fetched until `price` is filled in (written negative, in `price_unit`), within
 * the rate; the price then replaces the estimate. The fake's resource follows Twilio's document (twilio.json).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twilioResourcePrice } from '../../providers/twilio/index.js';
import { decidePriceFetch } from '../../src/costs/price-fetch.js';
import { findMessageByActivityKey } from '../../src/ledger/messages.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { parsePrometheusText, valueOf } from '../helpers/prometheus.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

async function metricsOf(gw: TestGateway) {
  return parsePrometheusText(await (await fetch(`${gw.url}/metrics`, { headers: admin })).text());
}

async function consoleCookie(gw: TestGateway): Promise<string> {
  const login = await fetch(`${gw.url}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key: TEST_ADMIN_KEY }).toString(),
  });
  return login.headers.get('set-cookie')!.split(';')[0]!;
}

async function costOf(gw: TestGateway, activityKey: string) {
  const m = await findMessageByActivityKey(gw.gateway.ledger.db, activityKey);
  return m && { micros: Number(m.cost_micros), currency: m.cost_currency, source: m.cost_source, delivery: m.delivery_status };
}

describe("the Message resource's price", () => {
  it.each([
    ['a price as Twilio writes it: negative text', { price: '-0.00790', price_unit: 'USD' }, { answer: 'priced', price: { micros: 7_900n, currency: 'USD' } }],
    ['a unit in lower case', { price: '-0.0400', price_unit: 'eur' }, { answer: 'priced', price: { micros: 40_000n, currency: 'EUR' } }],
    ['not priced yet', { price: null, price_unit: 'USD' }, { answer: 'not_yet' }],
    ['no price field', {}, { answer: 'not_yet' }],
    ['a price that is no amount', { price: 'n/a', price_unit: 'USD' }, { answer: 'failed', reason: expect.stringMatching(/not an amount/) }],
    ['no unit', { price: '-0.0079', price_unit: null }, { answer: 'failed', reason: expect.stringMatching(/not an amount/) }],
  ])('%s', (_label, resource, answer) => {
    expect(twilioResourcePrice(resource)).toEqual(answer);
  });
});

describe('when to ask again', () => {
  const settings = { maxAttempts: 3, afterMs: 60_000 };
  it.each([
    ['a price ends the fetch', { answer: 'priced', price: { micros: 1n, currency: 'USD' } } as const, 1, { done: true }],
    ['no price yet: again after twice the wait', { answer: 'not_yet' } as const, 1, { done: false, nextAt: 1_000 + 120_000, error: 'no price yet' }],
    ['a failure: again, longer each time', { answer: 'failed', reason: 'HTTP 429' } as const, 2, { done: false, nextAt: 1_000 + 240_000, error: 'HTTP 429' }],
    ['the last ask gives up: dead, the estimate stands', { answer: 'not_yet' } as const, 3, { dead: true, error: 'no price yet; gave up after 3 asks' }],
    ['a failure on the last ask: dead', { answer: 'failed', reason: 'HTTP 404' } as const, 3, { dead: true, error: 'HTTP 404; gave up after 3 asks' }],
  ])('%s', (_label, answer, attempts, decision) => {
    expect(decidePriceFetch(answer, attempts, 1_000, settings)).toEqual(decision);
  });
});

describe('through the gateway', () => {
  let fake: TwilioFake;
  let gw: TestGateway;
  beforeAll(async () => {
    // Priced on the second fetch: the first finds `price: null`, as Twilio's does right after the final status.
    fake = await startTwilioFake({ callbackStatuses: ['sent', 'delivered'], price: { value: '-0.00790', unit: 'USD', afterFetches: 1 } });
    gw = await startTestGateway({
      providers: {
        twilio: { type: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken, from: '+15005550006', base_url: fake.url },
      },
      costs: {
        rates: { twilio: { currency: 'USD', per_segment: { '*': '0.0100' } } },
        twilio_price_fetch: { after: '0s', poll_interval: '50ms', rate_per_second: 50 },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('keeps the estimate until Twilio has a price, then records the price in its place, and the report says so', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('t-1', { provider_name: 'twilio', recipient: '+14155550123' }))).status).toBe(200);
    const cost = () => costOf(gw, 't-1');
    const estimated = await waitFor(async () => ((await cost())?.delivery === 'delivered' ? cost() : undefined));
    expect(estimated).toMatchObject({ micros: 10_000, currency: 'USD' });
    expect(await waitFor(async () => ((await cost())?.source === 'reported' ? cost() : undefined), 15_000)).toEqual({
      micros: 7_900,
      currency: 'USD',
      source: 'reported',
      delivery: 'delivered',
    });
    const sid = fake.creates.find((c) => c.form.To === '+14155550123')!.sid;
    expect(fake.lookups.filter((l) => l.kind === 'fetch' && l.sid === sid)).toHaveLength(2);
    const report = await gw.get('/admin/costs?group_by=provider', { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(report.json.rows).toMatchObject([{ provider: 'twilio', currency: 'USD', messages: 1, delivered: 1, spend: '0.0079', reported_spend: '0.0079' }]);
  }, 20_000);

  it('is the price-fetches outbox kind: its backlog in /admin, its series on /metrics, its panel on the dashboard', async () => {
    expect((await gw.get('/admin/price-fetches', admin)).json).toEqual({ owed: 0, retrying: 0, dead: 0, next_at: null });
    expect((await gw.get('/admin/price-fetches')).status).toBe(401);
    const metrics = await metricsOf(gw);
    expect(valueOf(metrics, 'sms_gateway_price_fetches_priced_total')).toBe(1);
    expect(valueOf(metrics, 'sms_gateway_price_fetches_outbox', { state: 'owed' })).toBe(0);
    expect(valueOf(metrics, 'sms_gateway_price_fetches_outbox', { state: 'dead' })).toBe(0);
    const dashboard = await (await fetch(`${gw.url}/console`, { headers: { cookie: await consoleCookie(gw) } })).text();
    expect(dashboard).toContain('<section id="price-fetches">');
    expect(dashboard).toMatch(/<td data-price-fetches="owed">0<\/td>/);
    expect(dashboard).toContain('href="/console/dead-price-fetches"');
  });
});

describe('a price fetch that gives up', () => {
  let fake: TwilioFake;
  let gw: TestGateway;
  beforeAll(async () => {
    // One ask allowed, and Twilio has no price at the first: dead; a replay asks again and finds it.
    fake = await startTwilioFake({ callbackStatuses: ['sent', 'delivered'], price: { value: '-0.00790', unit: 'USD', afterFetches: 1 } });
    gw = await startTestGateway({
      providers: {
        twilio: { type: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken, from: '+15005550006', base_url: fake.url },
      },
      costs: {
        rates: { twilio: { currency: 'USD', per_segment: { '*': '0.0100' } } },
        twilio_price_fetch: { after: '0s', poll_interval: '50ms', rate_per_second: 50, max_attempts: 1 },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('is dead in /admin, on /metrics and in the console, and a replay from /admin asks again', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('g-1', { provider_name: 'twilio', recipient: '+14155550124' }))).status).toBe(200);
    const sid = await waitFor(async () => fake.creates.find((c) => c.form.To === '+14155550124')?.sid);
    const dead = await waitFor(async () => {
      const list = (await gw.get('/admin/price-fetches/dead', admin)).json as { dead: Array<{ sms_id: string }> };
      return list.dead.length > 0 ? list.dead : undefined;
    }, 10_000);
    const smsId = (await findMessageByActivityKey(gw.gateway.ledger.db, 'g-1'))!.sms_id;
    expect(dead).toEqual([{ sms_id: smsId, provider: 'twilio', provider_message_id: sid, attempts: 1, last_error: 'no price yet; gave up after 1 asks' }]);
    expect((await gw.get('/admin/price-fetches', admin)).json).toMatchObject({ owed: 0, dead: 1 });
    expect((await costOf(gw, 'g-1'))?.source).toBe('estimate');
    const metrics = await metricsOf(gw);
    expect(valueOf(metrics, 'sms_gateway_price_fetches_dead_lettered_total')).toBe(1);
    expect(valueOf(metrics, 'sms_gateway_price_fetches_outbox', { state: 'dead' })).toBe(1);
    const cookie = await consoleCookie(gw);
    const dashboard = await (await fetch(`${gw.url}/console`, { headers: { cookie } })).text();
    expect(dashboard).toMatch(/<td data-price-fetches="dead">1<\/td>/);
    const list = await (await fetch(`${gw.url}/console/dead-price-fetches`, { headers: { cookie } })).text();
    expect(list.match(/data-price-fetch-row="[^"]+"/g)).toEqual([`data-price-fetch-row="${smsId}"`]);

    const refused = await gw.post('/admin/price-fetches/replay', { sms_ids: 'all' }, admin);
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ error: 'sms_ids: must be an array of at most 10000 sms_ids', code: 400 });
    const replayed = await gw.post('/admin/price-fetches/replay', { sms_ids: [smsId] }, admin);
    expect(replayed.json).toEqual({ replayed: 1 });
    expect(await waitFor(async () => ((await costOf(gw, 'g-1'))?.source === 'reported' ? costOf(gw, 'g-1') : undefined), 10_000)).toMatchObject({
      micros: 7_900,
      source: 'reported',
    });
    expect((await gw.get('/admin/price-fetches', admin)).json).toMatchObject({ owed: 0, dead: 0 });
    expect(fake.lookups.filter((l) => l.kind === 'fetch' && l.sid === sid)).toHaveLength(2);
  }, 20_000);
});
