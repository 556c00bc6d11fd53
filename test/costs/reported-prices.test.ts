/**
 * Each provider's price field, read from fakes that follow its document (test/fakes/openapi/), and what the gateway
 * makes of it: Vonage's `message-price` per part in the send answer (summed) and `price` in a one-part receipt;
 * Infobip's `price.pricePerMessage` × parts in `price.currency`, in version 3 (`messageCount`) and version 2
 * (`smsCount`) reports. A reported price replaces the estimate, in the message, the rollup and the report.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { infobipReportPrice } from '../../providers/infobip.js';
import { vonageAnswerPrice } from '../../providers/vonage/index.js';
import { findMessageByActivityKey } from '../../src/ledger/messages.js';
import { startInfobipFake, type InfobipFake } from '../fakes/infobip.js';
import { startVonageFake, type VonageFake } from '../fakes/vonage.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

describe("the providers' price fields", () => {
  it.each([
    ['version 3: per part times messageCount', { price: { pricePerMessage: 0.01, currency: 'EUR' }, messageCount: 3 }, { micros: 30_000n, currency: 'EUR' }],
    ['version 2: per part times smsCount', { price: { pricePerMessage: 0.0075, currency: 'USD' }, smsCount: 2 }, { micros: 15_000n, currency: 'USD' }],
    ['no count: one part', { price: { pricePerMessage: 0.02, currency: 'EUR' } }, { micros: 20_000n, currency: 'EUR' }],
    ['no price', { messageCount: 1 }, undefined],
    ['a price as text is not the document’s number', { price: { pricePerMessage: '0.01', currency: 'EUR' } }, undefined],
    ['a currency that is no ISO code', { price: { pricePerMessage: 0.01, currency: 'euro' } }, undefined],
    ['a count that is no count', { price: { pricePerMessage: 0.01, currency: 'EUR' }, messageCount: 0 }, undefined],
  ])('Infobip report, %s', (_label, report, price) => {
    expect(infobipReportPrice(report)).toEqual(price);
  });

  it.each([
    ['one part', [{ 'message-price': '0.03330000' }], { micros: 33_300n, currency: 'EUR' }],
    [
      'three parts, summed exactly',
      [{ 'message-price': '0.0333' }, { 'message-price': '0.0333' }, { 'message-price': '0.0334' }],
      { micros: 100_000n, currency: 'EUR' },
    ],
    ['a part without a price: none for the message', [{ 'message-price': '0.0333' }, {}], undefined],
    ['a price that is no decimal', [{ 'message-price': 'n/a' }], undefined],
  ])('Vonage send answer, %s', (_label, parts, price) => {
    expect(vonageAnswerPrice(parts, 'EUR')).toEqual(price);
  });
});

describe('reported prices through the gateway', () => {
  const SECRET = 'vonage-signature-secret';
  const IB_SECRET = 'infobip-webhook-secret-0123';
  const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
  const GB = '+447400123456';
  let vonage: VonageFake;
  let infobip: InfobipFake;
  let gw: TestGateway;

  beforeAll(async () => {
    vonage = await startVonageFake({ signatureSecret: SECRET, autoReceipts: { statuses: ['delivered'], transport: 'form' } });
    infobip = await startInfobipFake({ reportStatuses: ['DELIVERED_TO_HANDSET'] });
    gw = await startTestGateway({
      providers: {
        vonage: { type: 'vonage', api_key: vonage.apiKey, api_secret: vonage.apiSecret, base_url: vonage.url, signature_secret: SECRET },
        infobip: { type: 'infobip', api_key: infobip.apiKey, base_url: infobip.url, webhook_secret: IB_SECRET, from: 'Default' },
      },
      costs: {
        rates: {
          vonage: { currency: 'EUR', per_segment: { '*': '0.0500' } },
          infobip: { currency: 'EUR', per_segment: { '*': '0.0500' } },
        },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await vonage?.close();
    await infobip?.close();
  });

  const costOf = async (activityKey: string) => {
    const m = await findMessageByActivityKey(gw.gateway.ledger.db, activityKey);
    return m && { micros: Number(m.cost_micros), currency: m.cost_currency, source: m.cost_source, delivery: m.delivery_status };
  };

  it("takes Vonage's price from the send answer, all parts summed, in place of the estimate", async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('v-1', { provider_name: 'vonage', recipient: GB, content: 'x'.repeat(300) }))).status).toBe(200);
    // Two parts at 0.0333 each; the per-part receipts (0.0333 each) do not replace the whole message's price.
    expect(await waitFor(async () => ((await costOf('v-1'))?.delivery === 'delivered' ? costOf('v-1') : undefined))).toEqual({
      micros: 66_600,
      currency: 'EUR',
      source: 'reported',
      delivery: 'delivered',
    });
    // The send answer's remaining-balance, as a gauge.
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: admin })).text();
    expect(metrics).toMatch(/^sms_gateway_provider_balance\{provider="vonage",currency="EUR"\} 10\.5$/m);
  });

  it("takes Infobip's price from its report in place of the estimate, and the report says so", async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('i-1', { provider_name: 'infobip', recipient: GB }))).status).toBe(200);
    expect(await waitFor(async () => ((await costOf('i-1'))?.source === 'reported' ? costOf('i-1') : undefined))).toEqual({
      micros: 10_000,
      currency: 'EUR',
      source: 'reported',
      delivery: 'delivered',
    });
    const res = await gw.get('/admin/costs?group_by=provider', admin);
    const row = (res.json.rows as Array<Record<string, unknown>>).find((r) => r.provider === 'infobip');
    expect(row).toMatchObject({ messages: 1, delivered: 1, spend: '0.01', reported_spend: '0.01', estimated_spend: '0.00', cost_per_delivered: '0.01' });
  });

  it('takes a version 2 report’s price (smsCount parts) too, and a later price replaces an earlier one', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('i-2', { provider_name: 'infobip', recipient: GB }))).status).toBe(200);
    await waitFor(async () => (await costOf('i-2'))?.source === 'reported');
    const smsId = (await findMessageByActivityKey(gw.gateway.ledger.db, 'i-2'))!.sms_id;
    const send = infobip.sends.find((s) => s.callbackData === smsId)!;
    // Another report (a repeat of one already stored is a duplicate, applied once), in version 2's shape.
    const v2 = { ...infobip.result({ ...send, api: 2 }, 'PENDING_ENROUTE'), smsCount: 3, price: { pricePerMessage: 0.012, currency: 'EUR' } };
    expect(await infobip.postReport(send.notifyUrl!, [v2])).toBe(200);
    expect(await costOf('i-2')).toEqual({ micros: 36_000, currency: 'EUR', source: 'reported', delivery: 'delivered' });
    const res = await gw.get('/admin/costs?group_by=provider', admin);
    const row = (res.json.rows as Array<Record<string, unknown>>).find((r) => r.provider === 'infobip');
    expect(row).toMatchObject({ messages: 2, delivered: 2, spend: '0.046', reported_spend: '0.046' });
  });

  it("keeps a parked receipt's price and applies it when its message is found", async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('v-2', { provider_name: 'vonage', recipient: GB }))).status).toBe(200);
    await waitFor(async () => ((await costOf('v-2'))?.delivery === 'delivered' ? true : undefined));
    const smsId = (await findMessageByActivityKey(gw.gateway.ledger.db, 'v-2'))!.sms_id;
    const submit = vonage.submits.find((s) => s.fields['client-ref'] === smsId)!;
    // A receipt for a message id nobody has recorded yet, without our client-ref: parked, with its price.
    const { 'client-ref': _ours, ...fields } = vonage.receiptFields(submit, 0, 'delivered');
    expect(await vonage.sendReceipt(submit.fields.callback!, { ...fields, messageId: 'vonage-parked-1', price: '0.04440000' }, { transport: 'form' })).toBe(
      200,
    );
    const parked = await gw.gateway.ledger.db.selectFrom('receipts').selectAll().where('provider_message_id', '=', 'vonage-parked-1').execute();
    expect(parked).toMatchObject([{ matched: 0, price_currency: 'EUR' }]);
    expect(Number(parked[0]!.price_micros)).toBe(44_400);
    // The message turns out to be that id's (recorded by hand, as a late provider answer would be): the sweep matches it.
    // Vonage's receipts name their client-ref, so one without it finds only a message kept in the index of providers'
    // ids, as one sent before migration 2026-11-29-90 is.
    await gw.gateway.ledger.db
      .updateTable('messages')
      .set({ provider_message_id: 'vonage-parked-1', receipts_name_sms_id: 0 })
      .where('sms_id', '=', smsId)
      .execute();
    await gw.gateway.sweep();
    expect(await costOf('v-2')).toEqual({ micros: 44_400, currency: 'EUR', source: 'reported', delivery: 'delivered' });
  });
});
