/**
 * Infobip end to end: the real gateway sends to the Infobip fake, which reports back to /dlr/infobip over HTTP;
 * status and error tables by table. Reports carry no signature, so the token in the report URL is what is checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyInfobipFailure, mapInfobipStatus, type InfobipFailure } from '../providers/infobip.js';
import type { MappedStatus } from '../providers/types.js';
import { FakeCrm } from './fakes/crm.js';
import { startInfobipFake, type InfobipFake } from './fakes/infobip.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from './helpers/gateway.js';
import { readMessage } from './helpers/ledger.js';

describe('mapInfobipStatus', () => {
  it.each<[string, string, MappedStatus]>([
    ['PENDING', 'PENDING_ACCEPTED', 'intermediate'],
    ['PENDING', 'PENDING_ENROUTE', 'intermediate'],
    ['DELIVERED', 'DELIVERED_TO_HANDSET', 'delivered'],
    ['DELIVERED', 'DELIVERED_TO_OPERATOR', 'intermediate'],
    ['UNDELIVERABLE', 'UNDELIVERABLE_NOT_DELIVERED', 'undelivered'],
    ['EXPIRED', 'EXPIRED_EXPIRED', 'undelivered'],
    ['EXPIRED', 'EXPIRED_DLR_UNKNOWN', 'delivery_unknown'],
    ['REJECTED', 'REJECTED_DESTINATION', 'failed'],
    ['SOMETHING_NEW', 'SOMETHING_NEW_X', 'intermediate'],
    ['constructor', '__proto__', 'intermediate'],
  ])('%s / %s → %s', (group, name, expected) => {
    expect(mapInfobipStatus(group, name)).toBe(expected);
  });
});

describe('classifyInfobipFailure', () => {
  it.each<[string, InfobipFailure, 'permanent' | 'transient']>([
    ['a refused connection', { network: 'ECONNREFUSED' }, 'transient'],
    ['HTTP 400: the message is wrong', { httpStatus: 400 }, 'permanent'],
    ['HTTP 401: our key is wrong, not the message', { httpStatus: 401 }, 'transient'],
    ['HTTP 429: Infobip\'s rate limit', { httpStatus: 429 }, 'transient'],
    ['HTTP 503', { httpStatus: 503 }, 'transient'],
    ['rejected: bad destination', { rejection: 'REJECTED_DESTINATION' }, 'permanent'],
    ['rejected: not enough credits (top up, then retry)', { rejection: 'REJECTED_NOT_ENOUGH_CREDITS' }, 'transient'],
    ['rejected: a name we do not know', { rejection: 'REJECTED_SOMETHING' }, 'permanent'],
  ])('%s → %s', (_label, failure, expected) => {
    expect(classifyInfobipFailure(failure)).toBe(expected);
  });
});

describe('through the gateway', () => {
  const crm = new FakeCrm();
  let fake: InfobipFake;
  let gw: TestGateway;
  const SECRET = 'infobip-webhook-secret-0123';
  const send = (id: string, recipient = '+447700900123') => gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'infobip', recipient }));
  const receiptCount = async () => Number((await gw.gateway.ledger.db.selectFrom('receipts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  beforeAll(async () => {
    await crm.start();
    fake = await startInfobipFake({ reportStatuses: ['DELIVERED_TO_OPERATOR', 'DELIVERED_TO_HANDSET'] });
    gw = await startTestGateway({
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
      providers: { infobip: { type: 'infobip', api_key: fake.apiKey, base_url: fake.url, webhook_secret: SECRET, from: 'Default' } },
    });
  });
  afterAll(async () => {
    await gw.close();
    await fake.close();
    await crm.stop();
  });

  it('sends digits, the sender and text, our sms_id as callbackData and in a tokenised notifyUrl; the reports end in one delivered conversion', async () => {
    const res = await send('ib-ok');
    expect(res.status).toBe(200);
    const smsId = res.json.sms_id as string;
    const sent = fake.sends.find((s) => s.callbackData === smsId)!;
    expect(sent).toMatchObject({ to: '447700900123', from: 'Casino', text: 'Your bonus is waiting' });
    expect(sent.notifyUrl).toMatch(new RegExp(`^${gw.gateway.publicUrl}/dlr/infobip\\?sms_id=${smsId}&token=[\\w-]{43}$`));
    expect(await readMessage(gw, 'ib-ok')).toMatchObject({ provider: 'infobip', state: 'submitted', provider_message_id: sent.messageId });
    const conversion = await waitFor(() => crm.conversions.find((c) => c.sms_id === smsId));
    expect(conversion).toMatchObject({ delivery_status: 'delivered' });
    await waitFor(() => fake.reports.filter((r) => r.url === sent.notifyUrl).length === 2);
    expect(fake.reports.filter((r) => r.url === sent.notifyUrl).map((r) => r.status)).toEqual([200, 200]);
    expect(crm.conversions.filter((c) => c.sms_id === smsId)).toHaveLength(1);
  });

  it('refuses with 403, storing nothing, a report without a token, with another message\'s token, or about another message', async () => {
    const a = await send('ib-forge-a');
    const b = await send('ib-forge-b');
    const sentA = fake.sends.find((s) => s.callbackData === a.json.sms_id)!;
    const sentB = fake.sends.find((s) => s.callbackData === b.json.sms_id)!;
    await waitFor(() => fake.reports.filter((r) => r.url === sentB.notifyUrl).length === 2);
    const before = await receiptCount();
    const bare = `${gw.gateway.publicUrl}/dlr/infobip?sms_id=${a.json.sms_id}`;
    expect(await fake.postReport(bare, [fake.result(sentA, 'UNDELIVERABLE_NOT_DELIVERED')])).toBe(403);
    const swapped = sentB.notifyUrl.replace(b.json.sms_id, a.json.sms_id);
    expect(await fake.postReport(swapped, [fake.result(sentA, 'UNDELIVERABLE_NOT_DELIVERED')])).toBe(403);
    expect(await fake.postReport(sentB.notifyUrl, [fake.result(sentA, 'UNDELIVERABLE_NOT_DELIVERED')])).toBe(403);
    expect(await receiptCount()).toBe(before);
    const story = await gw.get(`/admin/messages/${a.json.sms_id}`, { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(story.json.message.delivery_status).not.toBe('undelivered');
  });

  it('refuses a report whose body is not Infobip\'s shape with 403, never 5xx', async () => {
    const res = await send('ib-shape');
    const sent = fake.sends.find((s) => s.callbackData === res.json.sms_id)!;
    for (const body of ['not json', '{"results": 5}', '{"results": [null]}', `{"results": [{"callbackData": "${res.json.sms_id}", "status": {"__proto__": 1}}]}`]) {
      const answer = await fetch(sent.notifyUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(answer.status).toBe(403);
      expect(((await answer.json()) as { error: string }).error).toMatch(/receipt refused/);
    }
  });

  it.each([
    ['a REJECTED destination: 400, rejected', '+15005550001', 400, 'rejected', /REJECTED_DESTINATION/],
    ['not enough credits: 503, free to retry', '+15005550012', 503, 'retryable', /NOT_ENOUGH_CREDITS/],
    ['HTTP 429: 503, free to retry', '+15005550429', 503, 'retryable', /HTTP 429/],
    ['HTTP 500: 503, uncertain', '+15005550500', 503, 'uncertain', /HTTP 500/],
  ])('%s', async (_label, recipient, status, state, error) => {
    const key = `ib-${recipient}`;
    const res = await send(key, recipient);
    expect(res.status).toBe(status);
    expect(res.json.error).toMatch(error);
    expect(await readMessage(gw, key)).toMatchObject({ state });
  });
});
