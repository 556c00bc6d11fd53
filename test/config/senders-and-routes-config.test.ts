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
