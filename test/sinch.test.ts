/**
 * Sinch end to end: the real gateway sends batches to the Sinch fake, which calls back /dlr/sinch over HTTP;
 * status and failure tables by table. Callbacks carry no signature: the token in callback_url is checked, and
 * basic auth too when configured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifySinchFailure, mapSinchStatus, type SinchFailure } from '../providers/sinch.js';
import type { MappedStatus } from '../providers/types.js';
import { FakeCrm } from './fakes/crm.js';
import { startSinchFake, type SinchFake } from './fakes/sinch.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from './helpers/gateway.js';
import { readMessage } from './helpers/ledger.js';

describe('mapSinchStatus', () => {
  it.each<[string, MappedStatus]>([
    ['Queued', 'intermediate'],
    ['Dispatched', 'intermediate'],
    ['Delivered', 'delivered'],
    ['Failed', 'undelivered'],
    ['Expired', 'undelivered'],
    ['Deleted', 'undelivered'],
    ['Rejected', 'failed'],
    ['Aborted', 'failed'],
    ['Cancelled', 'failed'],
    ['Unknown', 'delivery_unknown'],
    ['SomethingNew', 'intermediate'],
    ['constructor', 'intermediate'],
  ])('%s → %s', (status, expected) => {
    expect(mapSinchStatus(status)).toBe(expected);
  });
});

describe('classifySinchFailure', () => {
  it.each<[string, SinchFailure, 'permanent' | 'transient']>([
    ['a refused connection', { network: 'ECONNREFUSED' }, 'transient'],
    ['HTTP 400: the message is wrong', { httpStatus: 400 }, 'permanent'],
    ['HTTP 401: our token', { httpStatus: 401 }, 'transient'],
    ['HTTP 403: permissions or region of the service plan', { httpStatus: 403 }, 'transient'],
    ['HTTP 404: wrong service plan id', { httpStatus: 404 }, 'transient'],
    ['HTTP 413: too large', { httpStatus: 413 }, 'permanent'],
    ['HTTP 429: Sinch\'s rate limit', { httpStatus: 429 }, 'transient'],
    ['HTTP 502', { httpStatus: 502 }, 'transient'],
  ])('%s → %s', (_label, failure, expected) => {
    expect(classifySinchFailure(failure)).toBe(expected);
  });
});

describe('through the gateway', () => {
  const crm = new FakeCrm();
  let fake: SinchFake;
  let gw: TestGateway;
  const AUTH = { username: 'sinch-cb', password: 'cb-password-0123' };
  const send = (id: string, recipient = '+447700900123') => gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'sinch', recipient }));
  const receiptCount = async () => Number((await gw.gateway.ledger.db.selectFrom('receipts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  beforeAll(async () => {
    await crm.start();
    fake = await startSinchFake({ callbackStatuses: ['Dispatched', 'Delivered'], callbackAuth: AUTH });
    gw = await startTestGateway({
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
      providers: {
        sinch: { type: 'sinch', service_plan_id: fake.servicePlanId, api_token: fake.apiToken, base_url: fake.url, webhook_secret: 'sinch-webhook-secret-01234', webhook_basic_auth: AUTH },
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

  it('refuses with 403, storing nothing: no basic auth, no token, another message\'s token, another message\'s report', async () => {
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
