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
    ['a price ends the fetch', { answer: 'priced', price: { micros: 1n, currency: 'USD' } } as const, 1, { done: true, error: null }],
    ['no price yet: again after twice the wait', { answer: 'not_yet' } as const, 1, { done: false, nextAt: 1_000 + 120_000, error: 'no price yet' }],
    ['a failure: again, longer each time', { answer: 'failed', reason: 'HTTP 429' } as const, 2, { done: false, nextAt: 1_000 + 240_000, error: 'HTTP 429' }],
    ['the last ask gives up, the estimate stands', { answer: 'not_yet' } as const, 3, { done: true, error: 'no price yet; gave up after 3 asks' }],
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
    const cost = async () => {
      const m = await findMessageByActivityKey(gw.gateway.ledger.db, 't-1');
      return m && { micros: Number(m.cost_micros), currency: m.cost_currency, source: m.cost_source, delivery: m.delivery_status };
    };
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
});
