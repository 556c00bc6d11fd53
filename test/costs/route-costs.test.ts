/**
 * A route's message (docs/costs.md "Estimates"): counted at its claim at the dearest member's rate (so a budget never
 * counts less than the route may spend), then moved to the member that carried it, at that member's rate, in the
 * message, the rollup and the budget alike.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { findMessageByActivityKey } from '../../src/ledger/messages.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({
    providers: {
      cheap: { type: 'sandbox', dlr_delay_ms: 0 },
      dear: { type: 'sandbox', dlr_delay_ms: 0 },
      rare: { type: 'sandbox', dlr_delay_ms: 0 },
      // `rare` is a rule's member only: the route is still estimated at it when it is the dearest.
      promo: { type: 'route', members: ['cheap', 'dear'], rules: [{ match: { brands: ['rare'] }, members: ['rare'] }] },
    },
    costs: {
      rates: {
        cheap: { currency: 'EUR', per_segment: { '*': '0.0300' } },
        dear: { currency: 'EUR', per_segment: { '*': '0.0500' } },
        rare: { currency: 'EUR', per_segment: { '*': '0.0800' } },
      },
      budgets: [{ name: 'all', period: 'month', limit: '100', currency: 'EUR' }],
    },
  });
});
afterAll(async () => gw?.close());

describe("a route's message", () => {
  it('is counted at the dearest member, then at the rate of the member that carried it', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('r-1', { provider_name: 'promo', recipient: '+447400123456' }))).status).toBe(200);
    const row = await findMessageByActivityKey(gw.gateway.ledger.db, 'r-1');
    expect([row?.provider, Number(row?.cost_micros), row?.cost_source]).toEqual(['cheap', 30_000, 'estimate']);
    const report = await gw.get('/admin/costs?group_by=provider', { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(report.json.rows.map((r: { provider: string; spend: string; messages: number }) => [r.provider, r.messages, r.spend])).toEqual([
      ['cheap', 1, '0.03'],
    ]);
    const spent = await sql<{ spent: string | number }>`select spent_micros as spent from budget_spend where budget = 'all'`.execute(gw.gateway.ledger.db);
    expect(spent.rows.map((r) => Number(r.spent))).toEqual([30_000]);
  });

  it("is counted at its claim at a rule's member the catch-all does not list, so a budget holds it", async () => {
    const small = await startTestGateway({
      providers: {
        rare: { type: 'sandbox', dlr_delay_ms: 0 },
        promo: { type: 'route', members: ['sandbox'], rules: [{ match: { brands: ['rare'] }, members: ['rare'] }] },
      },
      costs: {
        rates: { rare: { currency: 'EUR', per_segment: { '*': '0.0800' } } },
        budgets: [{ name: 'rare', brand_id: 'rare', period: 'day', limit: '0.10', currency: 'EUR' }],
      },
    });
    try {
      const rare = (id: string) => smsMessage(id, { provider_name: 'promo', recipient: '+447400123456', activity: { id, brand_id: 'rare' } });
      expect((await small.post('/channels/sms/single', rare('rr-1'))).status).toBe(200);
      const second = await small.post('/channels/sms/single', rare('rr-2'));
      expect([second.status, second.json.code]).toEqual([400, 'budget_exceeded']);
    } finally {
      await small.close();
    }
  });

  it('is previewed at each member and at the route (its dearest member)', async () => {
    const res = await gw.post('/admin/sms/preview', { text: 'hi', country: 'GB' }, { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(res.json.prices.map((p: { provider: string; total: string | null }) => [p.provider, p.total])).toEqual([
      ['sandbox', null],
      ['cheap', '0.03'],
      ['dear', '0.05'],
      ['rare', '0.08'],
      ['promo', '0.08'],
    ]);
  });
});
