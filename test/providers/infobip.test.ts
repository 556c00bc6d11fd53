/**
 * Infobip end to end: the real gateway sends to the Infobip fake, which reports back to /dlr/infobip over HTTP;
 * (the status and error tables are in provider-outcomes.test.ts). Reports carry no signature, so the token in the report URL is what is checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INFOBIP_LOGS_KEPT_MS, infobipLogsAnswer } from '../../providers/infobip.js';
import type { LookupResult } from '../../providers/types.js';
import { FakeCrm } from '../fakes/crm.js';
import { INFOBIP_HANG_NUMBER, startInfobipFake, type InfobipFake } from '../fakes/infobip.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { readMessage } from '../helpers/ledger.js';
import { createPlugin, noAbort, sendRequest } from '../helpers/providers.js';

describe('through the gateway', () => {
  const crm = new FakeCrm();
  let fake: InfobipFake;
  let gw: TestGateway;
  const SECRET = 'infobip-webhook-secret-0123';
  const send = (id: string, recipient = '+447700900123') => gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'infobip', recipient }));
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

  it("refuses with 403, storing nothing, a report without a token, with another message's token, or about another message", async () => {
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

  it("refuses a report whose body is not Infobip's shape with 403, never 5xx", async () => {
    const res = await send('ib-shape');
    const sent = fake.sends.find((s) => s.callbackData === res.json.sms_id)!;
    for (const body of [
      'not json',
      '{"results": 5}',
      '{"results": [null]}',
      `{"results": [{"callbackData": "${res.json.sms_id}", "status": {"__proto__": 1}}]}`,
    ]) {
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

describe('infobipLogsAnswer (message logs → lookup answer)', () => {
  const id = '0190c0de-0000-7000-8000-000000000001';
  const now = Date.parse('2026-11-25T12:00:00Z');
  const log = (groupName: string, name: string, error: Record<string, unknown> = { id: 0, name: 'NO_ERROR' }, messageId = id) => ({
    messageId,
    to: '447700900123',
    status: { groupId: 1, groupName, id: 1, name },
    error,
  });
  it.each<[string, unknown, number, LookupResult]>([
    [
      'pending: found, intermediate',
      { results: [log('PENDING', 'PENDING_ACCEPTED')] },
      now - 600_000,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'PENDING_ACCEPTED', status: 'intermediate' },
    ],
    [
      'delivered to the handset',
      { results: [log('DELIVERED', 'DELIVERED_TO_HANDSET')] },
      now - 600_000,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'DELIVERED_TO_HANDSET', status: 'delivered' },
    ],
    [
      'only the operator took it',
      { results: [log('DELIVERED', 'DELIVERED_TO_OPERATOR')] },
      now - 600_000,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'DELIVERED_TO_OPERATOR', status: 'intermediate' },
    ],
    [
      'undeliverable, with its error',
      { results: [log('UNDELIVERABLE', 'UNDELIVERABLE_NOT_DELIVERED', { id: 27, name: 'EC_ABSENT_SUBSCRIBER' })] },
      now - 600_000,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'UNDELIVERABLE_NOT_DELIVERED', status: 'undelivered', errorCode: 'EC_ABSENT_SUBSCRIBER' },
    ],
    [
      'expired',
      { results: [log('EXPIRED', 'EXPIRED_EXPIRED')] },
      now - 600_000,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'EXPIRED_EXPIRED', status: 'undelivered' },
    ],
    [
      'rejected',
      { results: [log('REJECTED', 'REJECTED_DESTINATION', { id: 51, name: 'EC_INVALID_DESTINATION' })] },
      now - 600_000,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'REJECTED_DESTINATION', status: 'failed', errorCode: 'EC_INVALID_DESTINATION' },
    ],
    [
      'a status we do not know stays intermediate',
      { results: [log('SOMETHING_NEW', 'SOMETHING_NEW_X')] },
      now - 600_000,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'SOMETHING_NEW_X', status: 'intermediate' },
    ],
    ['no log within 48 hours: absent', { results: [] }, now - 600_000, { answer: 'absent' }],
    ["only another message's log: absent", { results: [log('PENDING', 'PENDING_ACCEPTED', undefined, 'someone-else')] }, now - 600_000, { answer: 'absent' }],
    [
      'no log, and the send is older than the logs: unknown',
      { results: [] },
      now - INFOBIP_LOGS_KEPT_MS,
      { answer: 'unknown', reason: expect.stringMatching(/48 hours/) as unknown as string },
    ],
    [
      'found even when older than 48 hours',
      { results: [log('DELIVERED', 'DELIVERED_TO_HANDSET')] },
      now - INFOBIP_LOGS_KEPT_MS - 1,
      { answer: 'found', providerMessageIds: [id], providerStatus: 'DELIVERED_TO_HANDSET', status: 'delivered' },
    ],
    [
      "not the logs' shape: unknown",
      { requestError: {} },
      now - 600_000,
      { answer: 'unknown', reason: expect.stringMatching(/no results/) as unknown as string },
    ],
    [
      'a log without a status: unknown',
      { results: [{ messageId: id }] },
      now - 600_000,
      { answer: 'unknown', reason: expect.stringMatching(/no status/) as unknown as string },
    ],
  ])('%s', (_label, json, sentAfter, expected) => {
    expect(infobipLogsAnswer(json, id, sentAfter, now)).toEqual(expected);
  });
});

describe('infobip lookup (message logs by the messageId we set)', () => {
  let fake: InfobipFake;
  const SECRET = 'infobip-webhook-secret-0123';
  const plugin = () => createPlugin('infobip', { api_key: fake.apiKey, base_url: fake.url, webhook_secret: SECRET, from: 'Default' });
  const window = () => ({ sentAfter: Date.now() - 60_000, sentBefore: Date.now() + 60_000, otherProviderIds: [] as string[] });
  beforeAll(async () => {
    fake = await startInfobipFake();
  });
  afterAll(async () => {
    await fake.close();
  });

  it("sends our sms_id as the destination's messageId and finds the message by it, with its latest reported status", async () => {
    const infobip = plugin();
    const req = sendRequest('http://127.0.0.1:9', 'infobip', { to: '+447700900601' });
    expect(await infobip.send(req, noAbort())).toMatchObject({ ok: true, providerMessageIds: [req.smsId] });
    expect(fake.sends.at(-1)).toMatchObject({ to: '447700900601', messageId: req.smsId });
    expect(await infobip.lookup!({ smsId: req.smsId, to: req.to, ...window() }, noAbort())).toEqual({
      answer: 'found',
      providerMessageIds: [req.smsId],
      providerStatus: 'PENDING_ACCEPTED',
      status: 'intermediate',
    });
    expect(fake.logQueries.at(-1)).toBe(req.smsId);
    // A report that never reached the gateway: the logs still show its status.
    fake.sends.at(-1)!.status = 'UNDELIVERABLE_NOT_DELIVERED';
    expect(await infobip.lookup!({ smsId: req.smsId, to: req.to, ...window(), providerMessageId: req.smsId }, noAbort())).toEqual({
      answer: 'found',
      providerMessageIds: [req.smsId],
      providerStatus: 'UNDELIVERABLE_NOT_DELIVERED',
      status: 'undelivered',
      errorCode: 'EC_ABSENT_SUBSCRIBER',
    });
    await infobip.close?.();
  });

  it('answers absent for a message Infobip never accepted (the request hung before it did)', async () => {
    const infobip = plugin();
    const req = sendRequest('http://127.0.0.1:9', 'infobip', { to: `+${INFOBIP_HANG_NUMBER}` });
    expect(await infobip.send(req, AbortSignal.timeout(200))).toMatchObject({ ok: false, kind: 'transient', ambiguous: true });
    expect(await infobip.lookup!({ smsId: req.smsId, to: req.to, ...window() }, noAbort())).toEqual({ answer: 'absent' });
    await infobip.close?.();
  });

  it('cannot tell when the logs answer an error, or Infobip cannot be reached', async () => {
    const wrongKey = createPlugin('infobip', { api_key: 'wrong', base_url: fake.url, webhook_secret: SECRET });
    expect(await wrongKey.lookup!({ smsId: 'x', to: '+447700900602', ...window() }, noAbort())).toEqual({
      answer: 'unknown',
      reason: 'logs answered HTTP 401',
    });
    await wrongKey.close?.();
    const down = createPlugin('infobip', { api_key: fake.apiKey, base_url: 'http://127.0.0.1:9', webhook_secret: SECRET });
    expect(await down.lookup!({ smsId: 'x', to: '+447700900602', ...window() }, noAbort())).toMatchObject({
      answer: 'unknown',
      reason: expect.stringMatching(/^lookup failed: ECONNREFUSED/),
    });
    await down.close?.();
  });
});
