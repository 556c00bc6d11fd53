/**
 * Rule matching (src/provider-wrappers/route-rules.ts) and the routing verdict (src/sms/routing-verdict.ts) as tables:
 * countries, prefixes, brands, provider_name, senders, number types, the recipient's local time in zones chosen by
 * country and by prefix on both sides of a daylight-saving change, and holidays; then the configuration mistakes
 * refused at load, each naming its key.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { numberTypeOf } from '../../src/kit/phone-number.js';
import { localTimeIn } from '../../src/kit/time-zones.js';
import { chooseRule, type MessageFacts } from '../../src/provider-wrappers/route-rules.js';
import { routingSnapshotOf } from '../../src/provider-wrappers/routing.js';
import { decideRoutingVerdict } from '../../src/sms/routing-verdict.js';

const base = {
  server: { environment: 'development' },
  database: { url: 'sqlite::memory:' },
  auth: { api_keys: ['k'] },
  providers: {
    sinch: { type: 'sandbox' },
    infobip: { type: 'sandbox' },
    twilio: { type: 'sandbox' },
  } as Record<string, unknown>,
};

const configWith = (route: Record<string, unknown>, routing: Record<string, unknown> = {}) =>
  parseConfig({ ...base, providers: { ...base.providers, main: { type: 'route', aliases: ['promo', 'otp'], members: ['twilio'], ...route } }, routing }, {});

const RULES = [
  { name: 'fr-night', match: { countries: ['FR'], hours: '21:00-08:00' }, members: ['infobip'] },
  { name: 'fr-holiday', match: { countries: ['FR'], holidays: 'only' }, members: ['infobip'] },
  { name: 'sao-paulo', match: { prefixes: ['+5511'] }, members: ['sinch'] },
  { name: 'brazil', match: { countries: ['BR'] }, members: ['sinch', 'infobip'], strategy: 'weighted', weights: { sinch: 3, infobip: 1 } },
  { name: 'us-early', match: { countries: ['US'], hours: '03:00-04:00' }, members: ['sinch'] },
  { name: 'casino-otp', match: { brands: ['casino'], provider_names: ['otp'] }, members: ['twilio', 'sinch'] },
  { name: 'weekend', match: { senders: ['Lotto'], days: ['sat', 'sun'] }, members: ['infobip'] },
  { name: 'free', match: { number_types: ['TOLL_FREE'] }, members: ['twilio'] },
];
const config = configWith({ rules: RULES }, { countries: ['FR', 'BR', 'US', 'GB'], holidays: { FR: ['2026-12-25'] }, zones: { '+1907': 'America/Anchorage' } });
const snapshot = routingSnapshotOf(config);
const rules = snapshot.routes.get('main')!.rules;

const facts = (over: Partial<MessageFacts> & { e164: string }): MessageFacts => ({
  country: undefined,
  brand: null,
  providerName: 'main',
  sender: null,
  numberType: undefined,
  at: Date.parse('2026-06-10T12:00:00Z'),
  ...over,
});
const at = (iso: string) => Date.parse(iso);

describe('the first matching rule wins', () => {
  it.each<[string, Partial<MessageFacts> & { e164: string }, string | number]>([
    ['a French mobile at noon in Paris goes to the catch-all', { e164: '+33612345678', country: 'FR' }, 'catch-all'],
    ['a French mobile at 23:00 Paris time is fr-night', { e164: '+33612345678', country: 'FR', at: at('2026-06-10T21:00:00Z') }, 'fr-night'],
    ['07:59 Paris time is still night', { e164: '+33612345678', country: 'FR', at: at('2026-06-10T05:59:00Z') }, 'fr-night'],
    ['08:00 Paris time is no longer night', { e164: '+33612345678', country: 'FR', at: at('2026-06-10T06:00:00Z') }, 'catch-all'],
    // Paris goes from CET (UTC+1) to CEST (UTC+2) at 01:00 UTC on 29 March 2026.
    ['06:30 UTC before the change is 07:30 CET: night', { e164: '+33612345678', country: 'FR', at: at('2026-03-28T06:30:00Z') }, 'fr-night'],
    ['06:30 UTC after the change is 08:30 CEST: day', { e164: '+33612345678', country: 'FR', at: at('2026-03-29T06:30:00Z') }, 'catch-all'],
    // And back from CEST to CET at 01:00 UTC on 25 October 2026.
    ['19:30 UTC in October before the change is 21:30 CEST: night', { e164: '+33612345678', country: 'FR', at: at('2026-10-24T19:30:00Z') }, 'fr-night'],
    ['19:30 UTC after the change is 20:30 CET: day', { e164: '+33612345678', country: 'FR', at: at('2026-10-25T19:30:00Z') }, 'catch-all'],
    ['Christmas noon in Paris is fr-holiday', { e164: '+33612345678', country: 'FR', at: at('2026-12-25T11:00:00Z') }, 'fr-holiday'],
    // 23:30 UTC on 24 December is 00:30 on Christmas in Paris: night, the earlier rule, before the holiday's.
    ['00:30 on Christmas in Paris is night first', { e164: '+33612345678', country: 'FR', at: at('2026-12-24T23:30:00Z') }, 'fr-night'],
    ['a São Paulo prefix wins over the Brazil rule after it', { e164: '+5511987654321', country: 'BR' }, 'sao-paulo'],
    ['a Manaus mobile is Brazil', { e164: '+5592987654321', country: 'BR' }, 'brazil'],
    // New York (+1212) goes from EST to EDT at 07:00 UTC on 8 March 2026.
    ['07:30 UTC before the US change is 02:30 EST in New York', { e164: '+12125551234', country: 'US', at: at('2026-03-07T07:30:00Z') }, 'catch-all'],
    ['07:30 UTC after the change is 03:30 EDT in New York', { e164: '+12125551234', country: 'US', at: at('2026-03-08T07:30:00Z') }, 'us-early'],
    ['the same instant is 00:30 PDT in Los Angeles (+1213): no match', { e164: '+12135551234', country: 'US', at: at('2026-03-08T07:30:00Z') }, 'catch-all'],
    ['10:30 UTC is 03:30 PDT in Los Angeles', { e164: '+12135551234', country: 'US', at: at('2026-03-08T10:30:00Z') }, 'us-early'],
    ['an Anchorage number by routing.zones: 11:30 UTC is 03:30 AKDT', { e164: '+19075551234', country: 'US', at: at('2026-06-10T11:30:00Z') }, 'us-early'],
    ['brand and provider_name together', { e164: '+447911123456', country: 'GB', brand: 'casino', providerName: 'otp' }, 'casino-otp'],
    ['the brand alone is not enough', { e164: '+447911123456', country: 'GB', brand: 'casino', providerName: 'promo' }, 'catch-all'],
    ['a sender on a Saturday in London', { e164: '+447911123456', country: 'GB', sender: 'Lotto', at: at('2026-06-13T12:00:00Z') }, 'weekend'],
    ['the same sender on a Friday', { e164: '+447911123456', country: 'GB', sender: 'Lotto', at: at('2026-06-12T12:00:00Z') }, 'catch-all'],
    ['a toll-free number', { e164: '+448001234567', country: 'GB', numberType: 'TOLL_FREE' }, 'free'],
  ])('%s', (_, over, expected) => {
    const decision = chooseRule(rules, facts(over), snapshot.calendar);
    expect(decision.rule === 0 ? 'catch-all' : decision.name).toBe(expected);
  });

  it("reads the holiday in the recipient's date, not UTC's", () => {
    expect(localTimeIn('Europe/Paris', at('2026-12-24T23:30:00Z')).date).toBe('2026-12-25');
    const holidayOnly = [rules![1]!];
    expect(chooseRule(holidayOnly, facts({ e164: '+33612345678', country: 'FR', at: at('2026-12-24T23:30:00Z') }), snapshot.calendar).rule).toBe(1);
    expect(chooseRule(holidayOnly, facts({ e164: '+33612345678', country: 'FR', at: at('2026-12-24T22:30:00Z') }), snapshot.calendar).rule).toBe(0);
  });

  it("reads a local time handed in instead of the number's", () => {
    const local = { zone: 'Europe/Paris', date: '2026-06-10', weekday: 2, minutes: 23 * 60 };
    expect(chooseRule(rules, facts({ e164: '+33612345678', country: 'FR', local }), snapshot.calendar)).toMatchObject({ name: 'fr-night', local });
  });

  it('hands back the local time it read, for a later check on the same rule', () => {
    const decision = chooseRule(rules, facts({ e164: '+33612345678', country: 'FR', at: at('2026-03-29T06:30:00Z') }), snapshot.calendar);
    expect(decision.local).toEqual({ zone: 'Europe/Paris', date: '2026-03-29', weekday: 6, minutes: 8 * 60 + 30 });
  });
});

describe('where a message may go', () => {
  const holidays = { FR: ['2026-12-25'] };
  const guarded = routingSnapshotOf(configWith({ rules: RULES }, { countries: ['FR', 'BR', 'US', 'GB'], brands: { '7': { countries: ['FR'] } }, holidays }));
  const open = routingSnapshotOf(configWith({ rules: RULES }, { holidays }));
  const main = { name: 'main', type: 'route' };
  const direct = { name: 'twilio', type: 'sandbox' };
  it.each<[string, typeof guarded, { name: string; type: string }, Partial<MessageFacts> & { e164: string }, string]>([
    ['a French mobile, gateway-wide list', guarded, direct, { e164: '+33612345678', country: 'FR' }, 'allowed'],
    ['a German mobile, not listed', guarded, direct, { e164: '+4915112345678', country: 'DE' }, 'country_not_allowed'],
    ["brand 7's own list has no BR", guarded, direct, { e164: '+5511987654321', country: 'BR', brand: '7' }, 'country_not_allowed'],
    ['another brand uses the gateway-wide list', guarded, direct, { e164: '+5511987654321', country: 'BR', brand: '8' }, 'allowed'],
    ['a number placed in no country', guarded, direct, { e164: '+88234567890' }, 'country_not_allowed'],
    ['a premium-rate number', guarded, direct, { e164: '+33899123456', country: 'FR', numberType: 'PREMIUM_RATE' }, 'number_type_not_allowed'],
    ['a fixed line', guarded, direct, { e164: '+33123456789', country: 'FR', numberType: 'FIXED_LINE' }, 'number_type_not_allowed'],
    ['a US number that may be mobile', guarded, direct, { e164: '+12125551234', country: 'US', numberType: 'FIXED_LINE_OR_MOBILE' }, 'allowed'],
    ['a toll-free number sent directly', guarded, direct, { e164: '+448001234567', country: 'GB', numberType: 'TOLL_FREE' }, 'number_type_not_allowed'],
    ['a toll-free number through a rule that lists the type', guarded, main, { e164: '+448001234567', country: 'GB', numberType: 'TOLL_FREE' }, 'allowed'],
    ['a number whose type the metadata cannot tell', guarded, direct, { e164: '+447700900123', country: 'GB' }, 'allowed'],
    ['no list: a German mobile', open, direct, { e164: '+4915112345678', country: 'DE' }, 'allowed'],
    ['no list: a premium-rate number', open, direct, { e164: '+33899123456', country: 'FR', numberType: 'PREMIUM_RATE' }, 'allowed'],
  ])('%s', (_, snap, provider, over, expected) => {
    const d = decideRoutingVerdict(facts(over), provider, snap);
    expect(d.ok ? 'allowed' : d.code).toBe(expected);
  });

  it('a route message carries its rule and validity', () => {
    const d = decideRoutingVerdict(facts({ e164: '+5511987654321', country: 'BR' }), main, guarded);
    expect(d).toMatchObject({ ok: true, choice: { route: 'main', rule: 3, name: 'sao-paulo' } });
  });

  it.each([
    ['+33899123456', 'PREMIUM_RATE'],
    ['+448001234567', 'TOLL_FREE'],
    ['+33612345678', 'MOBILE'],
    // Valid as a mobile, which every North American number is (the full metadata says FIXED_LINE_OR_MOBILE).
    ['+12125551234', 'MOBILE'],
    ['+33123456789', 'FIXED_LINE'],
    ['+447700900123', undefined],
  ])('libphonenumber-js tells %s is %s', (e164, type) => {
    expect(numberTypeOf(e164)).toBe(type);
  });
});

describe('mistakes refused at load, naming the key', () => {
  const refusal = (route: Record<string, unknown>, routing: Record<string, unknown> = {}) => {
    try {
      configWith(route, routing);
    } catch (error) {
      if (error instanceof ConfigError) return error.message;
      throw error;
    }
    return 'accepted';
  };
  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a rule after a catch-all',
      { rules: [{ members: ['sinch'] }, { match: { countries: ['FR'] }, members: ['infobip'] }] },
      /providers\.main\.rules\.1\.match.*catch-all/,
    ],
    [
      'a longer prefix after a shorter one',
      {
        rules: [
          { match: { prefixes: ['+55'] }, members: ['sinch'] },
          { match: { prefixes: ['+5511'] }, members: ['infobip'] },
        ],
      },
      /providers\.main\.rules\.1\.match.*rule 1/,
    ],
    [
      'a country after a prefix that takes all of it',
      {
        rules: [
          { match: { prefixes: ['+55'] }, members: ['sinch'] },
          { match: { countries: ['BR'] }, members: ['infobip'] },
        ],
      },
      /providers\.main\.rules\.1\.match.*rule 1/,
    ],
    [
      'a prefix after its country',
      {
        rules: [
          { match: { countries: ['BR'] }, members: ['sinch'] },
          { match: { prefixes: ['+5511'] }, members: ['infobip'] },
        ],
      },
      /providers\.main\.rules\.1\.match.*rule 1/,
    ],
    [
      'a prefix outside its countries',
      { rules: [{ match: { countries: ['BR'], prefixes: ['+33'] }, members: ['sinch'] }] },
      /providers\.main\.rules\.0\.match\.prefixes\.0.*FR/,
    ],
    ['a member that does not exist', { rules: [{ match: { countries: ['FR'] }, members: ['nobody'] }] }, /providers\.main\.rules\.0\.members\.0.*"nobody"/],
    [
      'a provider_name that never picks the route',
      { rules: [{ match: { provider_names: ['other'] }, members: ['sinch'] }] },
      /providers\.main\.rules\.0\.match\.provider_names\.0/,
    ],
    ['an empty hours window', { rules: [{ match: { hours: '08:00-08:00' }, members: ['sinch'] }] }, /providers\.main\.rules\.0\.match\.hours.*empty/],
    ['an unknown country', { rules: [{ match: { countries: ['XX'] }, members: ['sinch'] }] }, /providers\.main\.rules\.0\.match\.countries\.0/],
    [
      'two rules of one name',
      {
        rules: [
          { name: 'a', match: { countries: ['FR'] }, members: ['sinch'] },
          { name: 'a', match: { countries: ['BR'] }, members: ['sinch'] },
        ],
      },
      /providers\.main\.rules\.1\.name/,
    ],
    [
      'a weight for a provider outside the rule',
      { rules: [{ match: { countries: ['FR'] }, members: ['sinch'], weights: { twilio: 1 } }] },
      /providers\.main\.rules\.0\.weights\.twilio/,
    ],
  ])('%s', (_, route, pattern) => {
    expect(refusal(route)).toMatch(pattern);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['a country no list allows', { countries: ['DE'] }, /providers\.main\.rules\.0\.match\.countries\.0.*DE is in no list/],
    ['holidays only, with no date for its countries', { countries: ['BR'], holidays: 'only' }, /providers\.main\.rules\.0\.match\.holidays.*no date/],
  ])('refuses %s against the routing section', (_, match, pattern) => {
    expect(refusal({ rules: [{ match, members: ['sinch'] }] }, { countries: ['FR', 'BR'], holidays: { FR: ['2026-12-25'] } })).toMatch(pattern);
  });

  it.each<[string, Record<string, unknown>]>([
    [
      'the narrower prefix first',
      {
        rules: [
          { match: { prefixes: ['+5511'] }, members: ['infobip'] },
          { match: { prefixes: ['+55'] }, members: ['sinch'] },
        ],
      },
    ],
    [
      'a +1 prefix after a country sharing +1',
      {
        rules: [
          { match: { countries: ['CA'] }, members: ['infobip'] },
          { match: { prefixes: ['+1212'] }, members: ['sinch'] },
        ],
      },
    ],
    [
      'the same country for another brand',
      {
        rules: [
          { match: { countries: ['BR'], brands: ['1'] }, members: ['infobip'] },
          { match: { countries: ['BR'] }, members: ['sinch'] },
        ],
      },
    ],
    [
      'hours that only overlap',
      {
        rules: [
          { match: { hours: '08:00-12:00' }, members: ['infobip'] },
          { match: { hours: '10:00-14:00' }, members: ['sinch'] },
        ],
      },
    ],
  ])('accepts %s', (_, route) => {
    expect(refusal(route)).toBe('accepted');
  });
});
