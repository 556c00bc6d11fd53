/**
 * Config of routes and per-country senders: mistakes stop the start naming the key; and the senders rule end to
 * end, through the real gateway to the Twilio fake, which records the From it was handed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { smsMessage, startTestGateway, TEST_API_KEY, type TestGateway } from '../helpers/gateway.js';

const base = (providers: Record<string, unknown>) => ({ auth: { api_keys: [TEST_API_KEY] }, providers });
const sandbox = { type: 'sandbox' };

describe('route and senders config', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a member that is not configured',
      { a: sandbox, r: { type: 'route', members: ['a', 'b'] } },
      /providers\.r\.members\.1.*"b" is not a configured provider/,
    ],
    [
      'a member that is itself a route',
      { a: sandbox, r1: { type: 'route', members: ['a'] }, r2: { type: 'route', members: ['r1'] } },
      /providers\.r2\.members\.0.*is a route/,
    ],
    ['a member listed twice', { a: sandbox, r: { type: 'route', members: ['a', 'a'] } }, /listed twice/],
    [
      'a weight for a non-member',
      { a: sandbox, b: sandbox, r: { type: 'route', members: ['a'], strategy: 'weighted', weights: { b: 2 } } },
      /providers\.r\.weights\.b/,
    ],
    ['an unknown strategy', { a: sandbox, r: { type: 'route', members: ['a'], strategy: 'random' } }, /providers\.r\.strategy/],
    ['an empty member list', { r: { type: 'route', members: [] } }, /providers\.r\.members/],
    ['a breaker duration that is not one', { a: sandbox, r: { type: 'route', members: ['a'], breaker: { open_for: 'soon' } } }, /open_for/],
    ['a sender country that is not ISO 3166', { a: { ...sandbox, senders: { by_country: { uk: 'Brand' } } } }, /senders\.by_country/],
  ])('refuses %s', (_label, providers, message) => {
    expect(() => parseConfig(base(providers), {})).toThrow(message);
  });

  describe('strategy cheapest_delivering', () => {
    const rates = (r: Record<string, string>) => Object.fromEntries(Object.entries(r).map(([p, currency]) => [p, { currency, per_segment: { '*': '0.05' } }]));
    const load = (route: Record<string, unknown>, r: Record<string, string> = { a: 'EUR', b: 'EUR' }) =>
      parseConfig({ ...base({ a: sandbox, b: sandbox, r: { type: 'route', members: ['a', 'b'], ...route } }), costs: { rates: rates(r) } }, {});
    it.each<[string, Record<string, unknown>, Record<string, string> | undefined, RegExp]>([
      ['members with no rate at all', { strategy: 'cheapest_delivering' }, {}, /providers\.r\.strategy.*none of a, b has a rate table in costs\.rates/],
      ['members priced in two currencies', { strategy: 'cheapest_delivering' }, { a: 'EUR', b: 'USD' }, /providers\.r\.strategy.*one currency: a EUR, b USD/],
      [
        "a rule's members priced in two currencies",
        { rules: [{ match: { countries: ['GB'] }, members: ['a', 'b'], strategy: 'cheapest_delivering' }] },
        { a: 'EUR', b: 'USD' },
        /providers\.r\.rules\.0\.strategy/,
      ],
      [
        'a deadline as long as the window',
        { strategy: 'cheapest_delivering', recent_delivery: { window: '5m', deadline: '5m' } },
        undefined,
        /providers\.r\.recent_delivery\.deadline/,
      ],
      ['a floor out of range', { strategy: 'cheapest_delivering', recent_delivery: { floor: 1.2 } }, undefined, /providers\.r\.recent_delivery\.floor/],
      [
        'a recovery above 100%',
        { strategy: 'cheapest_delivering', recent_delivery: { floor: 0.98, recover_margin: 0.05 } },
        undefined,
        /providers\.r\.recent_delivery\.recover_margin/,
      ],
      ['a sample of none', { strategy: 'cheapest_delivering', recent_delivery: { min_sample: 0 } }, undefined, /providers\.r\.recent_delivery\.min_sample/],
      ['a window without a unit', { strategy: 'cheapest_delivering', recent_delivery: { window: 15 } }, undefined, /providers\.r\.recent_delivery\.window/],
    ])('refuses %s, naming the key', (_label, route, r, message) => {
      expect(() => load(route, r)).toThrow(message);
    });
    it("defaults Notify's figures", () => {
      const config = load({ strategy: 'cheapest_delivering' }, { a: 'EUR' });
      expect(config.providers.r).toMatchObject({
        strategy: 'cheapest_delivering',
        recent_delivery: { window: 900_000, deadline: 300_000, floor: 0.85, min_sample: 20, recover_margin: 0.05, cool_down: 300_000 },
      });
      expect(config.routing.delivery_refresh).toBe(30_000);
    });
  });

  it('accepts a weighted route with breaker settings and defaults the rest', () => {
    const config = parseConfig(
      base({ a: sandbox, b: sandbox, r: { type: 'route', members: ['a', 'b'], strategy: 'weighted', weights: { a: 3 }, breaker: { open_for: '1m' } } }),
      {},
    );
    expect(config.providers.r).toMatchObject({
      type: 'route',
      members: ['a', 'b'],
      breaker: { failures: 5, open_for: 60_000, window: 600_000, min_receipts: 20, min_delivery_rate: 0.1 },
    });
  });
});

describe('per-country senders through the gateway', () => {
  let twilio: TwilioFake;
  const gateways: TestGateway[] = [];
  const start = async (senderNameWins: boolean) => {
    const gw = await startTestGateway({
      sms: { sender_name_wins: senderNameWins },
      providers: {
        tw: {
          type: 'twilio',
          account_sid: twilio.accountSid,
          auth_token: twilio.authToken,
          from: '+15005550006',
          base_url: twilio.url,
          senders: { default: 'Fallback', by_country: { US: '+15005550007', GB: 'BrandUK' } },
        },
      },
    });
    gateways.push(gw);
    return gw;
  };
  const fromOf = async (gw: TestGateway, id: string, recipient: string, senderName?: string) => {
    const res = await gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'tw', recipient, sender_name: senderName }));
    expect(res.status).toBe(200);
    return twilio.creates.find((c) => c.form.StatusCallback?.split('#')[0]!.endsWith(res.json.sms_id))!.form.From;
  };

  beforeAll(async () => {
    twilio = await startTwilioFake();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await twilio.close();
  });

  it('by default the country rule beats the CRM sender_name; without a rule the CRM sender_name; without both senders.default', async () => {
    const gw = await start(false);
    expect(await fromOf(gw, 's-us', '+12025550123', 'Casino')).toBe('+15005550007');
    expect(await fromOf(gw, 's-gb', '+447700900123', 'Casino')).toBe('BrandUK');
    expect(await fromOf(gw, 's-de', '+4915112345678', 'Casino')).toBe('Casino');
    expect(await fromOf(gw, 's-none', '+4915112345678')).toBe('Fallback');
  });

  it('with sms.sender_name_wins the CRM sender_name beats the country rule, which still applies when it is absent', async () => {
    const gw = await start(true);
    expect(await fromOf(gw, 'w-us', '+12025550123', 'Casino')).toBe('Casino');
    expect(await fromOf(gw, 'w-us-none', '+12025550123')).toBe('+15005550007');
  });
});
