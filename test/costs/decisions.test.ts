/** The cost path's pure decisions: rate-table estimates, which budgets a message counts toward, and fitting under caps. */
import { describe, expect, it } from 'vitest';
import { budgetsFor, decideBudgetFits, periodStart, readBudgets } from '../../src/costs/budgets.js';
import { activityDimensions } from '../../src/costs/charges.js';
import { createRateBook, estimateCost } from '../../src/costs/rates.js';

const rates = createRateBook(
  {
    twilio: { currency: 'USD', per_segment: { GB: '0.0400', US: '0.0079' } },
    vonage: { currency: 'EUR', per_segment: { GB: '0.0350', '*': '0.0600' } },
    cheap: { currency: 'EUR', per_segment: { GB: '0.0300' } },
  },
  new Map([
    ['eu-route', ['vonage', 'cheap']],
    ['mixed', ['twilio', 'vonage']],
  ]),
);

describe('estimates from the rate tables', () => {
  it.each([
    ['one segment to a listed country', 'twilio', 'GB', 1, { micros: 40_000n, currency: 'USD' }],
    ['per segment: three segments cost three times', 'twilio', 'US', 3, { micros: 23_700n, currency: 'USD' }],
    ['an unlisted country at the * rate', 'vonage', 'FR', 2, { micros: 120_000n, currency: 'EUR' }],
    ['a number placed in no country at the * rate', 'vonage', null, 1, { micros: 60_000n, currency: 'EUR' }],
    ['an unlisted country without a * rate: no estimate', 'twilio', 'FR', 1, null],
    ['a provider without a table: no estimate', 'sinch', 'GB', 1, null],
    ['a route at its dearest member', 'eu-route', 'GB', 1, { micros: 35_000n, currency: 'EUR' }],
    ['a route where only one member has a rate', 'eu-route', 'FR', 1, { micros: 60_000n, currency: 'EUR' }],
    ['a route whose members differ in currency: the first currency found', 'mixed', 'GB', 1, { micros: 40_000n, currency: 'USD' }],
  ])('%s', (_label, provider, country, segments, expected) => {
    expect(estimateCost(rates, provider, country, segments)).toEqual(expected);
  });
});

const budgets = readBudgets([
  { name: 'all-day', period: 'day', limit: '1.00', currency: 'EUR' },
  { name: 'brand-7-month', brand_id: '7', period: 'month', limit: '0.10', currency: 'EUR' },
  { name: 'gb-day', country: 'GB', period: 'day', limit: '0.05', currency: 'EUR' },
  { name: 'usd', period: 'day', limit: '5', currency: 'USD' },
]);

describe('which budgets a message counts toward', () => {
  it.each([
    ['brand 7 to GB in EUR: every EUR cap that matches', { brandId: '7', country: 'GB', currency: 'EUR' }, ['all-day', 'brand-7-month', 'gb-day']],
    ['another brand to FR', { brandId: '8', country: 'FR', currency: 'EUR' }, ['all-day']],
    ['a cost in USD counts only toward USD caps', { brandId: '7', country: 'GB', currency: 'USD' }, ['usd']],
    ['no cost known: no cap', { brandId: '7', country: 'GB', currency: null }, []],
  ])('%s', (_label, subject, names) => {
    expect(budgetsFor(budgets, subject).map((b) => b.name)).toEqual(names);
  });

  it.each([
    ['a day starts at midnight UTC', 'day', Date.UTC(2026, 10, 28, 23, 59), Date.UTC(2026, 10, 28)],
    ['a month on its first day', 'month', Date.UTC(2026, 10, 28, 12), Date.UTC(2026, 10, 1)],
    ['December', 'month', Date.UTC(2026, 11, 31, 23, 59), Date.UTC(2026, 11, 1)],
  ] as const)('%s', (_label, period, at, start) => {
    expect(periodStart(period, at)).toBe(start);
  });
});

describe('fitting messages under their caps, in order', () => {
  const gb = budgets.find((b) => b.name === 'gb-day')!;
  const all = budgets.find((b) => b.name === 'all-day')!;
  it('counts each message that fits and refuses the one that would pass, naming the first cap it would pass', () => {
    const spent = new Map([['gb', 10_000n]]);
    const caps = [
      { budget: all, key: 'all' },
      { budget: gb, key: 'gb' },
    ];
    const decisions = decideBudgetFits(
      [
        { micros: 20_000n, caps },
        { micros: 20_000n, caps },
        { micros: 20_000n, caps },
        { micros: 0n, caps },
        { micros: 5_000n, caps: [{ budget: all, key: 'all' }] },
      ],
      spent,
    );
    expect(decisions.map((d) => (d.fits ? 'fits' : `${d.budget.name} at ${d.spentMicros}`))).toEqual(['fits', 'fits', 'gb-day at 50000', 'fits', 'fits']);
    // The refused message counted nowhere: not even toward the cap it did fit under.
    expect(spent).toEqual(
      new Map([
        ['gb', 50_000n],
        ['all', 45_000n],
      ]),
    );
  });

  it('lets a message land exactly on the limit', () => {
    expect(decideBudgetFits([{ micros: 50_000n, caps: [{ budget: gb, key: 'gb' }] }], new Map())).toEqual([{ fits: true }]);
  });
});

describe("the activity's dimensions", () => {
  it.each([
    ['integers as text', '{"id":"a","brand_id":7,"activity_id":11,"action_group_id":3}', { brand_id: '7', activity_id: '11', action_group_id: '3' }],
    ['strings as sent', '{"id":"a","brand_id":"casino-x"}', { brand_id: 'casino-x', activity_id: '', action_group_id: '' }],
    [
      'an integer past 2^53 from its text',
      '{"id":1,"activity_id":12345678901234567891}',
      { brand_id: '', activity_id: '12345678901234567891', action_group_id: '' },
    ],
    ['objects are no identifier', '{"id":1,"brand_id":{"x":1}}', { brand_id: '', activity_id: '', action_group_id: '' }],
    [
      'a 64-bit brand by its digits, not a nested key of the same name',
      '{"id":1,"meta":{"brand_id":5},"brand_id":9007199254740993}',
      { brand_id: '9007199254740993', activity_id: '', action_group_id: '' },
    ],
  ])('%s', (_label, json, dims) => {
    expect(activityDimensions(json)).toEqual(dims);
  });
});
