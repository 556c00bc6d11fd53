/**
 * The HTTP provider plugins against each provider's own published OpenAPI document (docs/providers.md §8), not only
 * against our fakes: every request a plugin makes (send, each kind of lookup) goes through a proxy that checks it
 * against the document (test/fakes/openapi.ts) before the fake answers it, and each status a document lists for a
 * callback or delivery report, sent in the document's own shape, is parsed to the status the plugin promises.
 * Where each document comes from and at which commit: test/fakes/openapi/README.md and docs/providers.md §8.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INFOBIP_STATUS_GROUPS, INFOBIP_STATUS_NAMES } from '../../providers/infobip.js';
import { SINCH_STATUS_MAP } from '../../providers/sinch.js';
import { TWILIO_STATUS_MAP } from '../../providers/twilio/index.js';
import { VONAGE_DLR_STATUS } from '../../providers/vonage/index.js';
import type { MappedStatus, SmsProvider } from '../../providers/types.js';
import { startInfobipFake } from '../fakes/infobip.js';
import {
  loadOpenApiExtract,
  type OpenApiDocument,
  openApiRequestChecker,
  openApiSchemaChecker,
  startValidatingProxy,
  type ValidatingProxy,
} from '../fakes/openapi.js';
import { startSinchFake } from '../fakes/sinch.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startVonageFake } from '../fakes/vonage.js';
import { createPlugin, noAbort, sendRequest } from '../helpers/providers.js';
import { startReceiptCapture, type ReceiptCapture } from '../helpers/receipt-capture.js';

/**
 * Texts every plugin sends: GSM-7, UCS-2, and one long enough to be split, that one with a validity (a route's
 * `validity`, docs/routing.md), so each provider's validity field is checked against its document too.
 */
const TEXTS = [
  { text: 'Your bonus is waiting', encoding: 'gsm7' as const, segments: 1 },
  { text: 'Ваш бонус ждёт 🎰', encoding: 'ucs2' as const, segments: 1 },
  {
    text: 'A'.repeat(300),
    encoding: 'gsm7' as const,
    segments: 2,
    // Read when each request is built (sendRequest spreads it), not when the file loads: a slow start cost a minute.
    get validUntil() {
      return Date.now() + 90 * 60_000;
    },
  },
];

function expectConforming(proxy: ValidatingProxy, operations: string[]): void {
  expect(proxy.checked.flatMap((c) => c.problems.map((p) => `${c.method} ${c.path}: ${p}`))).toEqual([]);
  expect(new Set(proxy.checked.map((c) => c.operationId))).toEqual(new Set(operations));
}

interface BehindProxy<F> {
  fake: F;
  proxy: ValidatingProxy;
  /** The plugin aimed at the proxy: made before the tests, or by a test (closed after the last either way). */
  provider: SmsProvider | undefined;
}

/** A provider's fake behind a proxy that checks each request against the provider's document, for one describe's tests. */
function behindValidatingProxy<F extends { url: string; close(): Promise<void> }>(
  doc: OpenApiDocument,
  startFake: () => Promise<F>,
  plugin?: (fake: F, baseUrl: string) => SmsProvider,
): BehindProxy<F> {
  const setup = {} as BehindProxy<F>;
  beforeAll(async () => {
    setup.fake = await startFake();
    setup.proxy = await startValidatingProxy(doc, setup.fake.url);
    setup.provider = plugin?.(setup.fake, setup.proxy.url);
  });
  afterAll(async () => {
    await setup.provider?.close?.();
    await setup.proxy.close();
    await setup.fake.close();
  });
  return setup;
}

describe('the request checker', () => {
  const check = openApiRequestChecker(loadOpenApiExtract('sinch'));
  const send = (body: unknown, contentType = 'application/json', path = '/xms/v1/plan/batches') =>
    check('POST', path, contentType, Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))).problems;

  it.each([
    ['a conforming send', { to: ['+447700900123'], body: 'hi', delivery_report: 'per_recipient' }, []],
    ['a missing required field', { to: ['+447700900123'] }, ["body must have required property 'body'"]],
    ['a value outside an enum', { to: ['+1'], body: 'x', delivery_report: 'sometimes' }, ['body/delivery_report must be equal to one of the allowed values']],
    ['a field the document does not define', { to: ['+1'], body: 'x', priority: 1 }, ['body.priority is not in the document']],
  ])('%s', (_label, body, problems) => {
    expect(send(body).map((p) => p.replace(/ \(.*\)$/, ''))).toEqual(problems);
  });

  it('refuses a media type, a query parameter and an operation the document does not have', () => {
    expect(send('to=1', 'application/x-www-form-urlencoded')).toEqual([
      'content-type application/x-www-form-urlencoded is not one the document lists (application/json)',
    ]);
    expect(check('GET', '/xms/v1/plan/batches?page_size=500&colour=red', undefined, Buffer.alloc(0)).problems).toEqual([
      'query page_size must be <= 100',
      'query colour is not a parameter of ListBatches',
    ]);
    expect(check('DELETE', '/xms/v1/plan/groups', undefined, Buffer.alloc(0)).problems).toEqual([
      'DELETE /xms/v1/plan/groups: no such operation in the document',
    ]);
  });
});

let capture: ReceiptCapture;
beforeAll(async () => {
  capture = await startReceiptCapture();
});
afterAll(async () => capture.close());

describe('Twilio against twilio-oai twilio_api_v2010.json', () => {
  const doc = loadOpenApiExtract('twilio');
  const setup = behindValidatingProxy<TwilioFake>(doc, () => startTwilioFake());

  it.each([
    ['a sender', { from: '+15005550006' }],
    [
      'a messaging service and options',
      { messaging_service_sid: `MG${'a'.repeat(32)}`, validity_period: 600, smart_encoded: true, status_callback_retries: 0 },
    ],
  ])('send, fetch and list requests with %s are what the document describes', async (_label, options) => {
    setup.proxy.checked.length = 0;
    setup.provider = createPlugin('twilio', { account_sid: setup.fake.accountSid, auth_token: setup.fake.authToken, base_url: setup.proxy.url, ...options });
    for (const t of TEXTS) {
      const req = sendRequest(capture.url, 'twilio', { ...t, from: undefined });
      const sent = await setup.provider!.send(req, noAbort());
      expect(sent.ok).toBe(true);
      const id = sent.ok ? sent.providerMessageIds[0] : undefined;
      expect(
        (
          await setup.provider!.lookup!(
            { ...req, providerMessageId: id, sentAfter: Date.now() - 5_000, sentBefore: Date.now(), otherProviderIds: [] },
            noAbort(),
          )
        ).answer,
      ).toBe('found');
      expect(
        (await setup.provider!.lookup!({ ...req, sentAfter: Date.now() - 5_000, sentBefore: Date.now(), otherProviderIds: [] }, noAbort())).answer,
      ).not.toBe('absent');
    }
    expectConforming(setup.proxy, ['CreateMessage', 'FetchMessage', 'ListMessage']);
    await setup.provider!.close?.();
  });

  /** What each status of the document's message_enum_status means to the CRM (docs/providers.md §4.1). */
  const expected: Record<string, MappedStatus | 'ignore'> = {
    queued: 'intermediate',
    sending: 'intermediate',
    sent: 'intermediate',
    failed: 'failed',
    delivered: 'delivered',
    undelivered: 'undelivered',
    receiving: 'ignore',
    received: 'ignore',
    accepted: 'intermediate',
    scheduled: 'intermediate',
    read: 'delivered',
    partially_delivered: 'delivery_unknown',
    canceled: 'failed',
  };

  it('every MessageStatus in the document is one the plugin knows, and its callback parses to the promised status', async () => {
    const statuses = (doc.components!.schemas!.message_enum_status as { enum: string[] }).enum;
    expect(new Set(statuses)).toEqual(new Set(Object.keys(expected)));
    setup.provider = createPlugin('twilio', {
      account_sid: setup.fake.accountSid,
      auth_token: setup.fake.authToken,
      base_url: setup.proxy.url,
      from: '+15005550006',
    });
    const req = sendRequest(capture.url, 'twilio');
    const sent = await setup.provider!.send(req, noAbort());
    expect(sent.ok).toBe(true);
    const create = setup.fake.creates.at(-1)!;
    for (const status of statuses) {
      expect(Object.keys(TWILIO_STATUS_MAP)).toContain(status);
      await setup.fake.postStatusCallback(req.callbackUrl, setup.fake.callbackParams(create, status));
      const parsed = await setup.provider!.parseReceipt(capture.receipts.at(-1)!);
      expect(parsed.ok, status).toBe(true);
      if (!parsed.ok) continue;
      if (expected[status] === 'ignore') expect(parsed.events, status).toEqual([]);
      else
        expect(
          parsed.events.map((e) => [e.smsId, e.providerStatus, e.status]),
          status,
        ).toEqual([[req.smsId, status, expected[status]]]);
    }
  });
});

describe("Twilio's price fetch against twilio_api_v2010.json", () => {
  const doc = loadOpenApiExtract('twilio');
  // Unpriced for the first two fetches (price null, as Twilio answers until it has priced the message), then priced.
  const setup = behindValidatingProxy<TwilioFake>(
    doc,
    () => startTwilioFake({ price: { value: '-0.00750', unit: 'USD', afterFetches: 2 } }),
    (fake, base_url) => createPlugin('twilio', { account_sid: fake.accountSid, auth_token: fake.authToken, base_url, from: '+15005550006' }),
  );
  const checkMessage = openApiSchemaChecker(doc, 'api.v2010.account.message');

  it('asks by FetchMessage as the document describes, and reads the Message resources the fake answers, unpriced then priced', async () => {
    setup.proxy.checked.length = 0;
    const sent = await setup.provider!.send(sendRequest(capture.url, 'twilio'), noAbort());
    expect(sent.ok).toBe(true);
    const sid = sent.ok ? sent.providerMessageIds[0]! : '';
    // The resource as the fake answers it, read through the proxy as the plugin reads it.
    const resource = async () => {
      const auth = Buffer.from(`${setup.fake.accountSid}:${setup.fake.authToken}`).toString('base64');
      const res = await fetch(`${setup.proxy.url}/2010-04-01/Accounts/${setup.fake.accountSid}/Messages/${sid}.json`, {
        headers: { authorization: `Basic ${auth}` },
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { price: unknown; price_unit: unknown };
    };
    const unpriced = await resource();
    expect(checkMessage(unpriced)).toEqual([]);
    expect(unpriced.price).toBeNull();
    expect(await setup.provider!.fetchPrice!(sid, noAbort())).toEqual({ answer: 'not_yet' });
    const priced = await resource();
    expect(checkMessage(priced)).toEqual([]);
    expect([priced.price, priced.price_unit]).toEqual(['-0.00750', 'USD']);
    expect(await setup.provider!.fetchPrice!(sid, noAbort())).toEqual({ answer: 'priced', price: { micros: 7_500n, currency: 'USD' } });
    expectConforming(setup.proxy, ['CreateMessage', 'FetchMessage']);
  });
});

describe('Vonage against the SMS API document (sms.yml 1.2.0)', () => {
  const doc = loadOpenApiExtract('vonage');
  const setup = behindValidatingProxy(
    doc,
    () => startVonageFake({ apiKey: 'abcd1234', signatureSecret: 'vonage-secret', signatureMethod: 'sha512' }),
    (fake, base_url) =>
      createPlugin('vonage', {
        api_key: fake.apiKey,
        api_secret: fake.apiSecret,
        base_url,
        signature_secret: 'vonage-secret',
        signature_method: 'sha512',
      }),
  );

  it('send requests in GSM-7, Unicode and long text are what the document describes', async () => {
    for (const t of TEXTS) expect((await setup.provider!.send(sendRequest(capture.url, 'vonage', t), noAbort())).ok).toBe(true);
    expectConforming(setup.proxy, ['send-an-sms']);
    expect(setup.fake.submits.map((s) => s.fields.type)).toEqual(['text', 'unicode', 'text']);
  });

  const expected: Record<string, MappedStatus> = {
    delivered: 'delivered',
    expired: 'undelivered',
    failed: 'undelivered',
    rejected: 'failed',
    accepted: 'intermediate',
    buffered: 'intermediate',
    unknown: 'delivery_unknown',
  };

  it('a delivery receipt in the document shape, for each status it lists, parses to the promised status', async () => {
    const receiptSchema = doc.components!.schemas!.DeliveryReceipt as { properties: Record<string, { example?: string; 'x-possible-values'?: string[] }> };
    const statuses = receiptSchema.properties.status!['x-possible-values']!;
    expect(new Set(statuses)).toEqual(new Set(Object.keys(expected)));
    const checkReceipt = openApiSchemaChecker(doc, 'DeliveryReceipt');
    const req = sendRequest(capture.url, 'vonage');
    const sent = await setup.provider!.send(req, noAbort());
    expect(sent.ok).toBe(true);
    const submit = setup.fake.submits.at(-1)!;
    // The document's own example receipt, about our message, signed the way Vonage signs.
    const example = Object.fromEntries(
      Object.entries(receiptSchema.properties)
        .filter(([k, v]) => v.example !== undefined && !['sig', 'nonce', 'timestamp'].includes(k))
        .map(([k, v]) => [k, v.example!]),
    );
    for (const status of statuses) {
      expect(Object.keys(VONAGE_DLR_STATUS)).toContain(status);
      const fields = {
        ...example,
        messageId: sent.ok ? sent.providerMessageIds[0]! : '',
        'client-ref': req.smsId,
        status,
        'err-code': status === 'delivered' ? '0' : '1',
      };
      expect(checkReceipt(fields)).toEqual([]);
      await setup.fake.sendReceipt(submit.fields.callback!, fields, { transport: 'json' });
      const parsed = await setup.provider!.parseReceipt(capture.receipts.at(-1)!);
      expect(parsed.ok, status).toBe(true);
      if (parsed.ok)
        expect(
          parsed.events.map((e) => [e.smsId, e.providerStatus, e.status]),
          status,
        ).toEqual([[req.smsId, status, expected[status]]]);
    }
  });
});

describe('Sinch against the SMS API v1 document', () => {
  const doc = loadOpenApiExtract('sinch');
  const setup = behindValidatingProxy(
    doc,
    () => startSinchFake(),
    (fake, base_url) =>
      createPlugin('sinch', {
        service_plan_id: fake.servicePlanId,
        api_token: fake.apiToken,
        base_url,
        webhook_secret: 'sinch-webhook-secret-01234',
      }),
  );

  it('send, batch, recipient report and list requests are what the document describes', async () => {
    for (const t of TEXTS) {
      const req = sendRequest(capture.url, 'sinch', t);
      const sent = await setup.provider!.send(req, noAbort());
      expect(sent.ok).toBe(true);
      const id = sent.ok ? sent.providerMessageIds[0] : undefined;
      expect(
        (
          await setup.provider!.lookup!(
            { ...req, providerMessageId: id, sentAfter: Date.now() - 5_000, sentBefore: Date.now(), otherProviderIds: [] },
            noAbort(),
          )
        ).answer,
      ).toBe('found');
      expect((await setup.provider!.lookup!({ ...req, sentAfter: Date.now() - 5_000, sentBefore: Date.now(), otherProviderIds: [] }, noAbort())).answer).toBe(
        'found',
      );
    }
    expectConforming(setup.proxy, ['SendSMS', 'GetBatchMessage', 'GetDeliveryReportByPhoneNumber', 'ListBatches']);
  });

  const expected: Record<string, MappedStatus> = {
    Queued: 'intermediate',
    Dispatched: 'intermediate',
    Aborted: 'failed',
    Cancelled: 'failed',
    Failed: 'undelivered',
    Delivered: 'delivered',
    Expired: 'undelivered',
    Rejected: 'failed',
    Deleted: 'undelivered',
    Unknown: 'delivery_unknown',
  };

  it('a recipient delivery report in the document shape, for each status it lists, parses to the promised status', async () => {
    const schema = doc.components!.schemas!.retrieveRecipientDeliveryResponseObj as { properties: { status: { enum: string[] } } };
    const statuses = schema.properties.status.enum;
    expect(new Set(statuses)).toEqual(new Set(Object.keys(expected)));
    const checkReport = openApiSchemaChecker(doc, 'retrieveRecipientDeliveryResponseObj');
    const req = sendRequest(capture.url, 'sinch');
    const sent = await setup.provider!.send(req, noAbort());
    expect(sent.ok).toBe(true);
    const batch = setup.fake.batches.at(-1)!;
    for (const status of statuses) {
      expect([...SINCH_STATUS_MAP.keys()]).toContain(status);
      // The document's example recipient report (GetDeliveryReportByPhoneNumber), about our batch.
      const report = {
        type: 'recipient_delivery_report_sms',
        batch_id: batch.id,
        recipient: req.to.replace(/^\+/, ''),
        code: status === 'Delivered' ? 0 : 401,
        status,
        at: '2021-08-30T08:16:08.930Z',
        client_reference: req.smsId,
      };
      expect(checkReport(report)).toEqual([]);
      await setup.fake.postCallback(batch.callbackUrl, report);
      const parsed = await setup.provider!.parseReceipt(capture.receipts.at(-1)!);
      expect(parsed.ok, status).toBe(true);
      if (parsed.ok)
        expect(
          parsed.events.map((e) => [e.smsId, e.providerStatus, e.status]),
          status,
        ).toEqual([[req.smsId, status, expected[status]]]);
    }
  });

  it("the document's batch delivery report (the deliveryReport webhook's schema) is taken too", async () => {
    const checkReport = openApiSchemaChecker(doc, 'retrieveDeliveryResponseObj');
    const req = sendRequest(capture.url, 'sinch');
    expect((await setup.provider!.send(req, noAbort())).ok).toBe(true);
    const batch = setup.fake.batches.at(-1)!;
    const report = {
      type: 'delivery_report_sms',
      batch_id: batch.id,
      total_message_count: '1',
      statuses: [{ code: 0, status: 'Delivered', count: 1 }],
      client_reference: req.smsId,
    };
    expect(checkReport(report)).toEqual([]);
    await setup.fake.postCallback(batch.callbackUrl, report);
    const parsed = await setup.provider!.parseReceipt(capture.receipts.at(-1)!);
    expect(parsed).toEqual({ ok: true, events: [{ smsId: req.smsId, providerMessageId: batch.id, providerStatus: 'Delivered', status: 'delivered' }] });
  });
});

describe('Infobip against the SMS API document', () => {
  const doc = loadOpenApiExtract('infobip');
  const setup = behindValidatingProxy(
    doc,
    () => startInfobipFake(),
    (fake, base_url) =>
      createPlugin('infobip', {
        api_key: fake.apiKey,
        base_url,
        webhook_secret: 'infobip-webhook-secret-0123',
        validity_period_minutes: 60,
      }),
  );

  it('send and logs requests are what the document describes', async () => {
    for (const t of TEXTS) {
      const req = sendRequest(capture.url, 'infobip', t);
      expect((await setup.provider!.send(req, noAbort())).ok).toBe(true);
      expect((await setup.provider!.lookup!({ ...req, sentAfter: Date.now() - 5_000, sentBefore: Date.now(), otherProviderIds: [] }, noAbort())).answer).toBe(
        'found',
      );
    }
    expectConforming(setup.proxy, ['send-sms-messages', 'get-outbound-sms-message-logs']);
    // The plugin's validity_period_minutes, but a route's validity (the third text) wins.
    expect(setup.fake.sends.map((s) => [s.api, s.validityMinutes])).toEqual([
      [3, 60],
      [3, 60],
      [3, 90],
    ]);
  });

  it('a delivery report in the document shape, for each status group it lists, parses to the promised status', async () => {
    const checkReport = openApiSchemaChecker(doc, 'SmsDeliveryResult');
    const groups = (doc.components!.schemas!.MessageGeneralStatus as { enum: string[] }).enum;
    const req = sendRequest(capture.url, 'infobip');
    expect((await setup.provider!.send(req, noAbort())).ok).toBe(true);
    const send = setup.fake.sends.at(-1)!;
    const expectedByGroup: Record<string, MappedStatus> = {
      ACCEPTED: 'intermediate',
      PENDING: 'intermediate',
      UNDELIVERABLE: 'undelivered',
      DELIVERED: 'delivered',
      EXPIRED: 'undelivered',
      REJECTED: 'failed',
    };
    expect(new Set(groups)).toEqual(new Set(Object.keys(expectedByGroup)));
    for (const group of groups) {
      expect([...INFOBIP_STATUS_GROUPS.keys()]).toContain(group);
      const name = `${group}_SOMETHING`;
      const body = { results: [{ ...setup.fake.result(send, name), status: { groupId: 1, groupName: group, id: 7, name, description: 'x' } }] };
      expect(checkReport(body)).toEqual([]);
      await setup.fake.postReport(send.notifyUrl, body.results);
      const parsed = await setup.provider!.parseReceipt(capture.receipts.at(-1)!);
      expect(parsed.ok, group).toBe(true);
      if (parsed.ok)
        expect(
          parsed.events.map((e) => [e.smsId, e.status]),
          group,
        ).toEqual([[req.smsId, INFOBIP_STATUS_NAMES.get(name) ?? expectedByGroup[group]]]);
    }
  });

  it('a report in the version 2 shape (smsCount, no sender) is taken too: a message sent before the move to version 3', async () => {
    const req = sendRequest(capture.url, 'infobip');
    expect((await setup.provider!.send(req, noAbort())).ok).toBe(true);
    const send = { ...setup.fake.sends.at(-1)!, api: 2 as const };
    const v2 = setup.fake.result(send, 'DELIVERED_TO_HANDSET');
    expect(v2).toHaveProperty('smsCount');
    await setup.fake.postReport(send.notifyUrl, [v2]);
    const parsed = await setup.provider!.parseReceipt(capture.receipts.at(-1)!);
    expect(parsed.ok && parsed.events.map((e) => [e.smsId, e.status])).toEqual([[req.smsId, 'delivered']]);
  });
});
