/**
 * 64-bit ids through the real gateway: the CRM sends activity.brand_id, user_id, activity_id and action_group_id as
 * JSON numbers beyond 2^53, which a double rounds (9007199254740993 parses to 9007199254740992). The gateway compares
 * and stores them by the digits sent (src/http/exact-json.ts identifierText): routing.brands, a rule's match.brands,
 * a quiet-hours window's brands and a budget's brand_id configured as "9007199254740993" take that brand and not its
 * neighbour; messages.user_id and the cost rollup keep the digits; a held message released later reads its brand from
 * its stored activity the same way.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { findMessageByActivityKey } from '../../src/ledger/messages.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
/** A British mobile number (GB by the metadata). */
const GB = '+447400123456';
const BRAND = '9007199254740993';
/** What JSON.parse makes of BRAND: another brand, which may not send to GB. */
const NEIGHBOUR = '9007199254740992';

/** The message as the CRM writes it: the ids are JSON numbers, so the body is written as text. */
function wideBody(id: string, brand = BRAND): string {
  return `{"activity":{"id":"${id}","brand_id":${brand},"user_id":18446744073709551615,"activity_id":9007199254740995,"action_group_id":-9007199254740997},"content":"Your bonus is waiting","recipient":"${GB}","provider_name":"promo"}`;
}

const routed = {
  providers: {
    wide: { type: 'sandbox', dlr_delay_ms: 0 },
    // `wide` is among the catch-all members too, so the claim estimates the route at its rate (src/costs/rates.ts).
    main: { type: 'route', aliases: ['promo'], members: ['sandbox', 'wide'], rules: [{ name: 'wide-brand', match: { brands: [BRAND] }, members: ['wide'] }] },
  },
  // Only this brand may send to GB: its neighbour, the double's reading, may send to FR alone.
  routing: { countries: ['FR'], brands: { [BRAND]: { countries: ['GB'] } } },
};

const gateways: TestGateway[] = [];
afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close();
});

describe('a brand_id beyond 2^53 sent as a JSON number', () => {
  it('takes its routing.brands entry, its rule and its budget, and is stored and costed with its digits', async () => {
    const gw = await startTestGateway({
      ...routed,
      costs: {
        rates: { wide: { currency: 'EUR', per_segment: { GB: '0.0400' } } },
        budgets: [{ name: 'wide-brand', brand_id: BRAND, period: 'day', limit: '0.05', currency: 'EUR' }],
      },
    });
    gateways.push(gw);
    const first = await gw.post('/channels/sms/single', wideBody('w-1'));
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    const row = await waitFor(async () => {
      const m = await findMessageByActivityKey(gw.gateway.ledger.db, 'w-1');
      return m?.delivery_status === 'delivered' ? m : undefined;
    });
    expect({ provider: row.provider, rule: row.route_rule_name, user: row.user_id, micros: Number(row.cost_micros) }).toEqual({
      provider: 'wide',
      rule: 'wide-brand',
      user: '18446744073709551615',
      micros: 40_000,
    });

    // The neighbouring brand is another brand: not allowed to GB.
    const neighbour = await gw.post('/channels/sms/single', wideBody('w-2', NEIGHBOUR));
    expect(neighbour.status).toBe(400);
    expect(neighbour.json).toMatchObject({ code: 'country_not_allowed', error: expect.stringContaining('routing.countries: FR') });

    // The budget configured for the brand as text holds its messages: a second would pass 0.05 EUR.
    const second = await gw.post('/channels/sms/single', wideBody('w-3'));
    expect(second.status).toBe(400);
    expect(second.json).toMatchObject({ code: 'budget_exceeded', error: expect.stringContaining(`budget wide-brand (brand ${BRAND}`) });

    const costs = await gw.get('/admin/costs?group_by=brand,activity,action_group', admin);
    expect(costs.status, JSON.stringify(costs.json)).toBe(200);
    expect(costs.json.rows).toEqual([
      expect.objectContaining({ brand_id: BRAND, activity_id: '9007199254740995', action_group_id: '-9007199254740997', messages: 1, spend: '0.04' }),
    ]);
    // One row for the route (counted at the claim, then moved) and one for the member that carried it.
    const daily = await gw.gateway.ledger.db.selectFrom('cost_daily').select(['brand_id', 'activity_id', 'action_group_id']).distinct().execute();
    expect(daily).toEqual([{ brand_id: BRAND, activity_id: '9007199254740995', action_group_id: '-9007199254740997' }]);
  });

  it('is held by a window for its brand and, released later from its stored activity, still takes its rule', async () => {
    const londonDate = (t: number) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/London' }).format(t);
    let time = Date.now();
    const gw = await startTestGateway(
      {
        ...routed,
        quiet_hours: {
          spread: '0s',
          poll_interval: '20ms',
          // Today and tomorrow (London) are holidays, so a message now is held whenever the test runs.
          windows: { wide: { countries: ['GB'], brands: [BRAND], hours: '09:00-21:00', holidays: [londonDate(time), londonDate(time + 86_400_000)] } },
        },
      },
      { now: () => time },
    );
    gateways.push(gw);
    const held = await gw.post('/channels/sms/single', wideBody('h-1'));
    expect(held.status, JSON.stringify(held.json)).toBe(200);
    const story = await gw.get(`/admin/messages/${held.json.sms_id}`, admin);
    expect(story.json.message).toMatchObject({ state: 'held', held_until: expect.any(Number) });

    time = (story.json.message.held_until as number) + 1;
    const sent = await waitFor(async () => {
      const m = await findMessageByActivityKey(gw.gateway.ledger.db, 'h-1');
      return m?.state === 'submitted' ? m : undefined;
    });
    // Read back as the neighbour, the release would refuse GB (routing.countries: FR) and take the catch-all.
    expect({ provider: sent.provider, rule: sent.route_rule_name, user: sent.user_id }).toEqual({
      provider: 'wide',
      rule: 'wide-brand',
      user: '18446744073709551615',
    });
  });
});
