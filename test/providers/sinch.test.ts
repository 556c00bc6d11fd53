/**
 * Sinch end to end: the real gateway sends batches to the Sinch fake, which calls back /dlr/sinch over HTTP;
 * (the status and failure tables are in provider-outcomes.test.ts). Callbacks carry no signature: the token in callback_url is checked, and
 * basic auth too when configured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SINCH_BATCHES_KEPT_MS, sinchBatchesFor, sinchFoundAnswer } from '../../providers/sinch.js';
import type { LookupResult } from '../../providers/types.js';
import { FakeCrm } from '../fakes/crm.js';
import { SINCH_HANG_NUMBER, startSinchFake, type SinchFake } from '../fakes/sinch.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { readMessage } from '../helpers/ledger.js';
import { createPlugin, noAbort, sendRequest } from '../helpers/providers.js';

describe('through the gateway', () => {
  const crm = new FakeCrm();
  let fake: SinchFake;
  let gw: TestGateway;
  const AUTH = { username: 'sinch-cb', password: 'cb-password-0123' };
  const send = (id: string, recipient = '+447700900123') => gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'sinch', recipient }));
  const receiptCount = async () =>
    Number(
      (
        await gw.gateway.ledger.db
          .selectFrom('receipts')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    await crm.start();
    fake = await startSinchFake({ callbackStatuses: ['Dispatched', 'Delivered'], callbackAuth: AUTH });
    gw = await startTestGateway({
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
      providers: {
        sinch: {
          type: 'sinch',
          service_plan_id: fake.servicePlanId,
          api_token: fake.apiToken,
          base_url: fake.url,
          webhook_secret: 'sinch-webhook-secret-01234',
          webhook_basic_auth: AUTH,
        },
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await fake.close();
    await crm.stop();
  });

  it('sends one recipient per batch with client_reference and a tokenised callback_url; callbacks end in one delivered conversion', async () => {
    const res = await send('si-ok');
    expect(res.status).toBe(200);
    const smsId = res.json.sms_id as string;
    const batch = fake.batches.find((b) => b.clientReference === smsId)!;
    expect(batch).toMatchObject({ to: '+447700900123', from: 'Casino', body: 'Your bonus is waiting' });
    expect(batch.callbackUrl).toMatch(new RegExp(`^${gw.gateway.publicUrl}/dlr/sinch\\?sms_id=${smsId}&token=[\\w-]{43}$`));
    expect(await readMessage(gw, 'si-ok')).toMatchObject({ provider: 'sinch', state: 'submitted', provider_message_id: batch.id });
    expect(await waitFor(() => crm.conversions.find((c) => c.sms_id === smsId))).toMatchObject({ delivery_status: 'delivered' });
    await waitFor(() => fake.callbacks.filter((c) => c.url === batch.callbackUrl).length === 2);
    expect(fake.callbacks.filter((c) => c.url === batch.callbackUrl).map((c) => c.status)).toEqual([200, 200]);
  });

  it("refuses with 403, storing nothing: no basic auth, no token, another message's token, another message's report", async () => {
    const a = await send('si-forge-a');
    const b = await send('si-forge-b');
    const batchA = fake.batches.find((x) => x.clientReference === a.json.sms_id)!;
    const batchB = fake.batches.find((x) => x.clientReference === b.json.sms_id)!;
    await waitFor(() => fake.callbacks.filter((c) => c.url === batchB.callbackUrl).length === 2);
    const before = await receiptCount();
    const authHeader = { authorization: `Basic ${Buffer.from(`${AUTH.username}:${AUTH.password}`).toString('base64')}` };
    expect(await fake.postCallback(batchA.callbackUrl, fake.report(batchA, 'Failed'), {})).toBe(403);
    expect(await fake.postCallback(`${gw.gateway.publicUrl}/dlr/sinch?sms_id=${a.json.sms_id}`, fake.report(batchA, 'Failed'), authHeader)).toBe(403);
    expect(await fake.postCallback(batchB.callbackUrl.replace(b.json.sms_id, a.json.sms_id), fake.report(batchA, 'Failed'), authHeader)).toBe(403);
    expect(await fake.postCallback(batchB.callbackUrl, fake.report(batchA, 'Failed'), authHeader)).toBe(403);
    expect(await receiptCount()).toBe(before);
  });

  it.each([
    ['HTTP 400: 400, rejected', '+15005550001', 400, 'rejected', /syntax_invalid_parameter_format/],
    ['HTTP 403: 503, free to retry', '+15005550403', 503, 'retryable', /unprovisioned_region/],
    ['HTTP 429: 503, free to retry', '+15005550429', 503, 'retryable', /HTTP 429/],
    ['HTTP 500: 503, uncertain', '+15005550500', 503, 'uncertain', /HTTP 500/],
  ])('%s', async (_label, recipient, status, state, error) => {
    const key = `si-${recipient}`;
    const res = await send(key, recipient);
    expect(res.status).toBe(status);
    expect(res.json.error).toMatch(error);
    expect(await readMessage(gw, key)).toMatchObject({ state });
  });
});

describe('sinchBatchesFor (List Batches → our batches)', () => {
  const req = { smsId: 'sms-1', to: '+447700900123' };
  const batch = (id: string, overrides: Record<string, unknown> = {}) => ({
    id,
    to: ['+447700900123'],
    client_reference: 'sms-1',
    canceled: false,
    ...overrides,
  });
  it.each<[string, unknown, string[] | undefined]>([
    ['one batch of ours', { count: 1, batches: [batch('B1')] }, ['B1']],
    ['none', { count: 0, page: 0, page_size: 10, batches: [] }, []],
    ['the recipient listed without +', { batches: [batch('B1', { to: ['447700900123'] })] }, ['B1']],
    ['another client_reference is not ours', { batches: [batch('B1', { client_reference: 'sms-2' })] }, []],
    ['another recipient is not ours', { batches: [batch('B1', { to: ['+447700900999'] })] }, []],
    ['sent twice already: both', { batches: [batch('B2'), batch('B1')] }, ['B2', 'B1']],
    ["not the list's shape", { code: 'x' }, undefined],
  ])('%s', (_label, json, ids) => {
    expect(sinchBatchesFor(json, req)?.map((b) => b.id)).toEqual(ids);
  });
});

describe('sinchFoundAnswer (recipient delivery report → lookup answer)', () => {
  it.each<[string, boolean, unknown, LookupResult]>([
    [
      'Queued',
      false,
      { type: 'recipient_delivery_report_sms', status: 'Queued', code: 400 },
      { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Queued', status: 'intermediate' },
    ],
    [
      'Dispatched',
      false,
      { status: 'Dispatched', code: 401 },
      { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Dispatched', status: 'intermediate' },
    ],
    ['Delivered', false, { status: 'Delivered', code: 0 }, { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Delivered', status: 'delivered' }],
    [
      'Failed, with its code',
      false,
      { status: 'Failed', code: 404 },
      { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Failed', status: 'undelivered', errorCode: '404' },
    ],
    [
      'Expired',
      false,
      { status: 'Expired', code: 406 },
      { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Expired', status: 'undelivered', errorCode: '406' },
    ],
    [
      'Rejected',
      false,
      { status: 'Rejected', code: 408 },
      { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Rejected', status: 'failed', errorCode: '408' },
    ],
    ['no report yet: queued', false, undefined, { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Queued', status: 'intermediate' }],
    ['no report, the batch cancelled', true, undefined, { answer: 'found', providerMessageIds: ['B1'], providerStatus: 'Cancelled', status: 'failed' }],
  ])('%s', (_label, canceled, report, expected) => {
    expect(sinchFoundAnswer(['B1'], canceled, report)).toEqual(expected);
  });
});

describe('sinch lookup (List Batches by client_reference, then the recipient delivery report)', () => {
  let fake: SinchFake;
  const SECRET = 'sinch-webhook-secret-01234';
  const plugin = (now: () => number = Date.now) =>
    createPlugin('sinch', { service_plan_id: fake.servicePlanId, api_token: fake.apiToken, base_url: fake.url, webhook_secret: SECRET }, now);
  const window = () => ({ sentAfter: Date.now() - 60_000, sentBefore: Date.now() + 60_000, otherProviderIds: [] as string[] });
  beforeAll(async () => {
    fake = await startSinchFake();
  });
  afterAll(async () => {
    await fake.close();
  });

  it("finds a batch by our sms_id as client_reference, with its recipient's latest status; a known batch id is fetched", async () => {
    const sinch = plugin();
    const req = sendRequest('http://127.0.0.1:9', 'sinch', { to: '+447700900701' });
    const sent = await sinch.send(req, noAbort());
    const batchId = fake.batches.at(-1)!.id;
    expect(sent).toMatchObject({ ok: true, providerMessageIds: [batchId] });
    expect(await sinch.lookup!({ smsId: req.smsId, to: req.to, ...window() }, noAbort())).toEqual({
      answer: 'found',
      providerMessageIds: [batchId],
      providerStatus: 'Queued',
      status: 'intermediate',
    });
    expect(fake.lookups.slice(-2)).toEqual([
      { kind: 'list', clientReference: req.smsId },
      { kind: 'report', batchId },
    ]);
    // A callback that never reached the gateway: the delivery report still shows its status.
    fake.batches.at(-1)!.status = 'Failed';
    expect(await sinch.lookup!({ smsId: req.smsId, to: req.to, ...window(), providerMessageId: batchId }, noAbort())).toEqual({
      answer: 'found',
      providerMessageIds: [batchId],
      providerStatus: 'Failed',
      status: 'undelivered',
      errorCode: '404',
    });
    expect(fake.lookups.slice(-2)).toEqual([
      { kind: 'batch', batchId },
      { kind: 'report', batchId },
    ]);
    expect(await sinch.lookup!({ smsId: req.smsId, to: req.to, ...window(), providerMessageId: '01NOSUCHBATCH' }, noAbort())).toEqual({ answer: 'absent' });
    await sinch.close?.();
  });

  it('answers absent for a batch Sinch never created, and cannot tell once the send is older than the list reaches', async () => {
    const sinch = plugin();
    const req = sendRequest('http://127.0.0.1:9', 'sinch', { to: SINCH_HANG_NUMBER });
    expect(await sinch.send(req, AbortSignal.timeout(200))).toMatchObject({ ok: false, kind: 'transient', ambiguous: true });
    expect(await sinch.lookup!({ smsId: req.smsId, to: req.to, ...window() }, noAbort())).toEqual({ answer: 'absent' });
    await sinch.close?.();
    const later = plugin(() => Date.now() + SINCH_BATCHES_KEPT_MS + 120_000);
    expect(await later.lookup!({ smsId: req.smsId, to: req.to, ...window() }, noAbort())).toMatchObject({
      answer: 'unknown',
      reason: expect.stringMatching(/14 days/),
    });
    await later.close?.();
  });

  it('cannot tell when Sinch answers an error or cannot be reached', async () => {
    const wrong = createPlugin('sinch', { service_plan_id: fake.servicePlanId, api_token: 'wrong', base_url: fake.url, webhook_secret: SECRET });
    expect(await wrong.lookup!({ smsId: 'x', to: '+447700900702', ...window() }, noAbort())).toEqual({ answer: 'unknown', reason: 'list answered HTTP 401' });
    await wrong.close?.();
    const down = createPlugin('sinch', {
      service_plan_id: fake.servicePlanId,
      api_token: fake.apiToken,
      base_url: 'http://127.0.0.1:9',
      webhook_secret: SECRET,
    });
    expect(await down.lookup!({ smsId: 'x', to: '+447700900702', ...window() }, noAbort())).toMatchObject({
      answer: 'unknown',
      reason: expect.stringMatching(/^lookup failed: ECONNREFUSED/),
    });
    await down.close?.();
  });
});
