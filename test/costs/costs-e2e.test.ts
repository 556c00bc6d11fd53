/**
 * What messages cost, through the real gateway (docs/costs.md): the sandbox reports no price, so each message carries
 * its rate-table estimate; the report reads the daily rollup by every dimension, as JSON and CSV; a send that sent
 * nothing is taken back; a budget refuses the message that would pass it with 400 budget_exceeded and sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findMessageByActivityKey } from '../../src/ledger/messages.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { parsePrometheusText } from '../helpers/prometheus.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
let gw: TestGateway;
/** A British mobile number (the helpers' default, in the drama range, places in no country). */
const GB = '+447400123456';

beforeAll(async () => {
  gw = await startTestGateway({
    costs: {
      rates: { sandbox: { currency: 'EUR', per_segment: { GB: '0.0400', '*': '0.0700' } } },
      budgets: [{ name: 'brand-9-daily', brand_id: 9, period: 'day', limit: '0.10', currency: 'EUR' }],
    },
  });
});
afterAll(async () => gw?.close());

async function report(query: string) {
  const res = await gw.get(`/admin/costs?${query}`, admin);
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json as { rows: Array<Record<string, unknown>>; truncated: boolean };
}

describe('every message carries its cost', () => {
  it('records the estimate, its currency and source on the message, and counts it delivered in the rollup', async () => {
    const sent = await gw.post('/channels/sms/single', smsMessage('c-1', { content: 'x'.repeat(200), recipient: GB }));
    expect(sent.status).toBe(200);
    const row = await waitFor(async () => {
      const m = await findMessageByActivityKey(gw.gateway.ledger.db, 'c-1');
      return m?.delivery_status === 'delivered' ? m : undefined;
    });
    expect({ country: row.country, micros: Number(row.cost_micros), currency: row.cost_currency, source: row.cost_source, segments: row.segments }).toEqual({
      country: 'GB',
      micros: 80_000,
      currency: 'EUR',
      source: 'estimate',
      segments: 2,
    });
    const { rows } = await waitFor(async () => {
      const r = await report('group_by=provider,country,brand,activity,action_group');
      return r.rows.some((x) => x.delivered === 1) ? r : undefined;
    });
    expect(rows).toEqual([
      {
        provider: 'sandbox',
        country: 'GB',
        brand_id: '7',
        activity_id: '11',
        action_group_id: '3',
        currency: 'EUR',
        messages: 1,
        segments: 2,
        delivered: 1,
        delivered_share: 1,
        spend: '0.08',
        reported_spend: '0.00',
        estimated_spend: '0.08',
        cost_per_delivered: '0.08',
      },
    ]);
  });

  it('takes back the cost of a send the provider refused, and prices another country at its * rate', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('c-2', { recipient: '+447400120004' }))).status).toBe(400);
    const refused = await findMessageByActivityKey(gw.gateway.ledger.db, 'c-2');
    expect([refused?.state, refused?.cost_micros, refused?.cost_source]).toEqual(['rejected', null, null]);
    expect((await gw.post('/channels/sms/single', smsMessage('c-3', { recipient: '+33612345678' }))).status).toBe(200);
    const { rows } = await report('group_by=country');
    expect(rows.map((r) => [r.country, r.messages, r.spend])).toEqual([
      ['FR', 1, '0.07'],
      ['GB', 1, '0.08'],
    ]);
  });

  it('counts nothing for a send that failed transiently, however often the CRM retries it', async () => {
    const retried = smsMessage('c-4', { recipient: '+447400120005', activity: { id: 'c-4', brand_id: 70 } });
    for (let i = 0; i < 3; i++) expect((await gw.post('/channels/sms/single', retried)).status).toBe(503);
    const row = await findMessageByActivityKey(gw.gateway.ledger.db, 'c-4');
    expect([row?.state, row?.attempts, row?.cost_micros, row?.cost_source]).toEqual(['retryable', 3, null, null]);
    // Counted at each claim and taken back at each answer: its rollup row sums to nothing and is not reported.
    const { rows } = await report('group_by=brand');
    expect(rows.find((r) => r.brand_id === '70')).toBeUndefined();
  });

  it('answers the same report as CSV, by format=csv or by Accept', async () => {
    const byParam = await fetch(`${gw.url}/admin/costs?group_by=country`.replace('country', 'country&format=csv'), { headers: admin });
    expect(byParam.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await byParam.text();
    expect(text.split('\r\n')[0]).toBe('country,currency,messages,segments,delivered,delivered_share,spend,reported_spend,estimated_spend,cost_per_delivered');
    expect(text).toContain('FR,EUR,1,1,');
    const byAccept = await fetch(`${gw.url}/admin/costs?group_by=country`, { headers: { ...admin, accept: 'text/csv' } });
    expect(await byAccept.text()).toBe(text);
  });

  it.each([
    ['an unknown group', 'group_by=planet', /group_by: "planet"/],
    ['a date that is no date', 'from=2026-02-30', /from: must be a date/],
    ['a range the wrong way round', 'from=2026-11-02&to=2026-11-01', /from: must not be after to/],
    ['an unknown parameter', 'currency=EUR', /"currency": unknown query parameter/],
  ])('refuses %s with 400 naming the parameter', async (_label, query, error) => {
    const res = await gw.get(`/admin/costs?${query}`, admin);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(error);
  });
});

describe('budgets that hold', () => {
  it('refuses the message that would pass its cap with 400 budget_exceeded naming it, sends nothing and counts it', async () => {
    const brand9 = (id: string) => smsMessage(id, { activity: { id, brand_id: 9, activity_id: 12 }, recipient: GB });
    expect((await gw.post('/channels/sms/single', brand9('b-1'))).status).toBe(200);
    expect((await gw.post('/channels/sms/single', brand9('b-2'))).status).toBe(200);
    const third = await gw.post('/channels/sms/single', brand9('b-3'));
    expect(third.status).toBe(400);
    expect(third.json.code).toBe('budget_exceeded');
    expect(third.json.error).toMatch(/budget brand-9-daily \(brand 9, 0\.10 EUR a day\) would be passed: 0\.08 EUR spent, this message 0\.04 EUR/);
    const row = await findMessageByActivityKey(gw.gateway.ledger.db, 'b-3');
    expect([row?.state, row?.error_code, row?.provider_message_id, row?.cost_micros]).toEqual(['rejected', 'budget_exceeded', null, null]);
    // A retry of the refused id repeats the refusal and sends nothing.
    expect((await gw.post('/channels/sms/single', brand9('b-3'))).status).toBe(400);
    // Another brand is not under this cap.
    expect((await gw.post('/channels/sms/single', smsMessage('b-4', { recipient: GB }))).status).toBe(200);
    const metrics = parsePrometheusText(await (await fetch(`${gw.url}/metrics`, { headers: admin })).text());
    const sample = (name: string, labels: Record<string, string>) =>
      metrics.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(sample('sms_gateway_budget_refusals_total', { budget: 'brand-9-daily' })).toBe(1);
    expect(sample('sms_gateway_budget_used_ratio', { budget: 'brand-9-daily' })).toBe(0.8);
    expect(sample('sms_gateway_budget_warning_ratio', { budget: 'brand-9-daily' })).toBe(0.8);
    expect(sample('sms_gateway_cost_total', { provider: 'sandbox', country: 'GB', currency: 'EUR', source: 'estimate' })).toBeGreaterThan(0);
  });
});
