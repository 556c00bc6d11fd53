import { validateRequest } from 'twilio/lib/webhooks/webhooks.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twilioCandidates } from '../../providers/twilio/index.js';
import type { IncomingReceipt, SmsProvider } from '../../providers/types.js';
import { randomSid, startTwilioFake, TWILIO_MAGIC_NUMBERS, type TwilioFake } from '../fakes/twilio.js';
import { createPlugin, noAbort, sendRequest } from '../helpers/providers.js';
import { startReceiptCapture, type ReceiptCapture } from '../helpers/receipt-capture.js';

let fake: TwilioFake;
let capture: ReceiptCapture;
let twilio: SmsProvider;
const serviceSid = randomSid('MG');

beforeAll(async () => {
  fake = await startTwilioFake();
  capture = await startReceiptCapture();
  twilio = createPlugin('twilio', { account_sid: fake.accountSid, auth_token: fake.authToken, from: '+15005550006', base_url: fake.url });
});
afterAll(async () => {
  await twilio.close?.();
  await fake.close();
  await capture.close();
});

describe('twilio send: field mapping', () => {
  it('posts To, From, Body and StatusCallback as a form with Basic auth and answers the sid', async () => {
    const req = sendRequest(capture.url, 'twilio');
    const result = await twilio.send(req, noAbort());
    const create = fake.creates.at(-1)!;
    expect(result).toEqual({ ok: true, providerMessageIds: [create.sid], providerStatus: 'queued' });
    expect(create.accountSid).toBe(fake.accountSid);
    // Twilio's connection overrides ask it to retry a failed status callback five times (status_callback_retries).
    expect(create.form).toEqual({ To: '+447700900123', From: 'Casino', Body: 'Your bonus is waiting', StatusCallback: `${req.callbackUrl}#rc=5&rp=all` });
  });

  it('status_callback_retries 0 sends the bare callback URL', async () => {
    const plain = createPlugin('twilio', {
      account_sid: fake.accountSid,
      auth_token: fake.authToken,
      from: '+15005550006',
      base_url: fake.url,
      status_callback_retries: 0,
    });
    const req = sendRequest(capture.url, 'twilio');
    await plain.send(req, noAbort());
    expect(fake.creates.at(-1)!.form.StatusCallback).toBe(req.callbackUrl);
    await plain.close?.();
  });

  it('falls back to the configured from when the CRM gives no sender', async () => {
    await twilio.send(sendRequest(capture.url, 'twilio', { from: undefined }), noAbort());
    expect(fake.creates.at(-1)!.form.From).toBe('+15005550006');
  });

  it('sends MessagingServiceSid, ValidityPeriod and SmartEncoded when configured', async () => {
    const viaService = createPlugin('twilio', {
      account_sid: fake.accountSid,
      auth_token: fake.authToken,
      base_url: fake.url,
      messaging_service_sid: serviceSid,
      validity_period: 3_600,
      smart_encoded: true,
    });
    const result = await viaService.send(sendRequest(capture.url, 'twilio', { from: undefined }), noAbort());
    expect(result).toMatchObject({ ok: true, providerStatus: 'accepted' });
    expect(fake.creates.at(-1)!.form).toMatchObject({ MessagingServiceSid: serviceSid, ValidityPeriod: '3600', SmartEncoded: 'true' });
    expect(fake.creates.at(-1)!.form.From).toBeUndefined();
    await viaService.close?.();
  });

  it('refuses a config with neither from nor messaging_service_sid, naming the key', () => {
    expect(() => createPlugin('twilio', { account_sid: fake.accountSid, auth_token: 'x' })).toThrow(/from or messaging_service_sid/);
  });
});

describe('twilio send: error classes', () => {
  it.each([
    ['+15005550001', 'permanent', '21211', /invalid To number/],
    ['+15005550002', 'permanent', '21612', /cannot route/],
    ['+15005550003', 'permanent', '21408', /region/],
    ['+15005550004', 'permanent', '21610', /unsubscribed/],
    ['+15005550009', 'permanent', '21614', /not a valid mobile/],
    ['+15005550010', 'permanent', '21211', /invalid To number/], // RFC 9457 error body
    ['+15005550429', 'transient', '20429', /HTTP 429/],
    ['+15005551611', 'transient', '21611', /queued messages/],
    // These three may have created the message: a retry waits for its receipt first.
    ['+15005550500', 'transient', '20500', /HTTP 500/, true],
    ['+15005550503', 'transient', 'http_503', /Service Unavailable/, true],
    ['+15005550999', 'transient', expect.any(String), /connection failed/, true],
  ])("the fake's %s answers %s with code %s", async (to, kind, code, error, ambiguous?: boolean) => {
    expect(TWILIO_MAGIC_NUMBERS[to]).toBeDefined();
    const result = await twilio.send(sendRequest(capture.url, 'twilio', { to }), noAbort());
    // 21610 also tells the gateway to opt the player out (docs/consents.md).
    const optedOut = code === '21610' ? { recipientOptedOut: true } : {};
    expect(result).toEqual({ ok: false, kind, code, error: expect.stringMatching(error), ...(ambiguous ? { ambiguous } : {}), ...optedOut });
  });

  it('a request that gets no answer before the signal fires is transient and says it may have been accepted', async () => {
    const result = await twilio.send(sendRequest(capture.url, 'twilio', { to: '+15005550666' }), AbortSignal.timeout(200));
    expect(result).toMatchObject({ ok: false, kind: 'transient', code: 'timeout', error: expect.stringMatching(/may still have accepted/), ambiguous: true });
  });

  it('wrong credentials answer transient (config fault) with code 20003', async () => {
    const wrong = createPlugin('twilio', { account_sid: fake.accountSid, auth_token: 'wrong', from: '+15005550006', base_url: fake.url });
    expect(await wrong.send(sendRequest(capture.url, 'twilio'), noAbort())).toMatchObject({ ok: false, kind: 'transient', code: '20003' });
    await wrong.close?.();
  });
});

describe('twilio status callbacks', () => {
  async function callback(status: string, options: { token?: string; errorCode?: string } = {}) {
    const req = sendRequest(capture.url, 'twilio');
    await twilio.send(req, noAbort());
    const create = fake.creates.at(-1)!;
    await fake.postStatusCallback(req.callbackUrl, fake.callbackParams(create, status, options.errorCode), options.token);
    return { req, sid: create.sid!, receipt: capture.receipts.at(-1)! };
  }

  it('a signed callback parses into one event with our sms_id, the MessageSid and the mapped status', async () => {
    const { req, sid, receipt } = await callback('delivered');
    expect(await twilio.parseReceipt(receipt)).toEqual({
      ok: true,
      events: [{ smsId: req.smsId, providerMessageId: sid, providerStatus: 'delivered', status: 'delivered' }],
    });
  });

  it('carries ErrorCode on undelivered', async () => {
    const { receipt } = await callback('undelivered', { errorCode: '30005' });
    expect(await twilio.parseReceipt(receipt)).toMatchObject({ ok: true, events: [{ status: 'undelivered', errorCode: '30005' }] });
  });

  it.each<[string, (r: IncomingReceipt) => IncomingReceipt]>([
    ['a changed status field', (r) => ({ ...r, rawBody: Buffer.from(r.rawBody.toString().replace('MessageStatus=failed', 'MessageStatus=delivered')) })],
    ['an added field', (r) => ({ ...r, rawBody: Buffer.concat([r.rawBody, Buffer.from('&Extra=1')]) })],
    ['another sms_id in the URL', (r) => ({ ...r, publicUrl: r.publicUrl.replace(/sms_id=[^&]+/, 'sms_id=other') })],
    ['the URL as the Host header would give it (internal host)', (r) => ({ ...r, publicUrl: r.publicUrl.replace('127.0.0.1', 'localhost') })],
    ['the URL without its query string', (r) => ({ ...r, publicUrl: r.publicUrl.split('?')[0]! })],
    ['https instead of http (TLS terminated elsewhere)', (r) => ({ ...r, publicUrl: r.publicUrl.replace('http:', 'https:') })],
    ['no signature header', (r) => ({ ...r, headers: { ...r.headers, 'x-twilio-signature': '' } })],
    ['a JSON body', (r) => ({ ...r, contentType: 'application/json' })],
  ])('refuses a forged callback: %s', async (_label, forge) => {
    const { receipt } = await callback('failed');
    expect(await twilio.parseReceipt(receipt)).toMatchObject({ ok: true });
    expect(await twilio.parseReceipt(forge(receipt))).toMatchObject({ ok: false, reason: expect.any(String) });
  });

  it('refuses a callback signed with another auth token', async () => {
    const { receipt } = await callback('delivered', { token: 'not-the-token' });
    expect(await twilio.parseReceipt(receipt)).toEqual({ ok: false, reason: expect.stringMatching(/X-Twilio-Signature/) });
  });

  it("the fake's signature is what the twilio package itself validates (signing is not our code)", async () => {
    const { receipt } = await callback('sent');
    expect(
      validateRequest(
        fake.authToken,
        receipt.headers['x-twilio-signature']!,
        receipt.publicUrl,
        Object.fromEntries(new URLSearchParams(receipt.rawBody.toString())),
      ),
    ).toBe(true);
  });

  it('a duplicated callback parses to the same event both times (the ledger dedups)', async () => {
    const { receipt } = await callback('delivered');
    expect(await twilio.parseReceipt(receipt)).toEqual(await twilio.parseReceipt(receipt));
  });

  it('out-of-order callbacks each keep their own status, for the delivery module to rank', async () => {
    const req = sendRequest(capture.url, 'twilio');
    await twilio.send(req, noAbort());
    const create = fake.creates.at(-1)!;
    for (const status of ['delivered', 'sent']) await fake.postStatusCallback(req.callbackUrl, fake.callbackParams(create, status));
    const [delivered, sent] = await Promise.all(capture.receipts.slice(-2).map((r) => twilio.parseReceipt(r)));
    expect(delivered).toMatchObject({ ok: true, events: [{ status: 'delivered', smsId: req.smsId }] });
    expect(sent).toMatchObject({ ok: true, events: [{ status: 'intermediate', providerStatus: 'sent', smsId: req.smsId }] });
  });

  it('an inbound status is accepted and records nothing', async () => {
    const { receipt } = await callback('received');
    expect(await twilio.parseReceipt(receipt)).toEqual({ ok: true, events: [] });
  });
});

describe('twilio status callback retries (connection overrides)', () => {
  it('a callback the gateway answers 503 (restarting) is retried, and the retry verifies: the fragment is neither sent nor signed', async () => {
    const restarting = await startReceiptCapture((n) => (n === 0 ? 503 : 200));
    try {
      const req = sendRequest(restarting.url, 'twilio');
      await twilio.send(req, noAbort());
      const create = fake.creates.at(-1)!;
      expect(await fake.postStatusCallback(create.form.StatusCallback!, fake.callbackParams(create, 'delivered'))).toBe(200);
      expect(fake.callbacks.slice(-2).map((c) => [c.url, c.status])).toEqual([
        [req.callbackUrl, 503],
        [req.callbackUrl, 200],
      ]);
      expect(restarting.receipts).toHaveLength(2);
      expect(await twilio.parseReceipt(restarting.receipts[1]!)).toMatchObject({ ok: true, events: [{ smsId: req.smsId, status: 'delivered' }] });
    } finally {
      await restarting.close();
    }
  });

  it('without the override a failed callback is not retried', async () => {
    const restarting = await startReceiptCapture(503);
    try {
      const req = sendRequest(restarting.url, 'twilio');
      await twilio.send(req, noAbort());
      expect(await fake.postStatusCallback(req.callbackUrl, fake.callbackParams(fake.creates.at(-1)!, 'delivered'))).toBe(503);
      expect(restarting.receipts).toHaveLength(1);
    } finally {
      await restarting.close();
    }
  });
});

describe('twilio lookup (Message resource list and fetch)', () => {
  const window = () => ({ sentAfter: Date.now() - 60_000, sentBefore: Date.now() + 60_000 });

  it('finds a send whose answer was lost by its number and time, with its status', async () => {
    const to = '+447700900901';
    const req = sendRequest(capture.url, 'twilio', { to });
    await twilio.send(req, noAbort());
    const sid = fake.creates.at(-1)!.sid!;
    expect(await twilio.lookup!({ smsId: req.smsId, to, ...window(), otherProviderIds: [] }, noAbort())).toEqual({
      answer: 'found',
      providerMessageIds: [sid],
      providerStatus: 'queued',
      status: 'intermediate',
    });
    expect(fake.lookups.at(-1)).toEqual({ kind: 'list', to });
  });

  it('answers absent when no message went to that number in the window', async () => {
    expect(await twilio.lookup!({ smsId: 'x', to: '+447700900902', ...window(), otherProviderIds: [] }, noAbort())).toEqual({ answer: 'absent' });
  });

  it('leaves out the messages the gateway knows under other sends, and cannot tell between two unknown ones', async () => {
    const to = '+447700900903';
    await twilio.send(sendRequest(capture.url, 'twilio', { to }), noAbort());
    const first = fake.creates.at(-1)!.sid!;
    await twilio.send(sendRequest(capture.url, 'twilio', { to }), noAbort());
    const second = fake.creates.at(-1)!.sid!;
    expect(await twilio.lookup!({ smsId: 'x', to, ...window(), otherProviderIds: [first] }, noAbort())).toMatchObject({
      answer: 'found',
      providerMessageIds: [second],
    });
    expect(await twilio.lookup!({ smsId: 'x', to, ...window(), otherProviderIds: [] }, noAbort())).toMatchObject({
      answer: 'unknown',
      reason: expect.stringMatching(/2 messages/),
    });
  });

  it('fetches a known sid for its status, final ones mapped like a callback', async () => {
    const req = sendRequest(capture.url, 'twilio', { to: '+447700900904' });
    await twilio.send(req, noAbort());
    const create = fake.creates.at(-1)!;
    await fake.postStatusCallback(req.callbackUrl, fake.callbackParams(create, 'undelivered'));
    expect(await twilio.lookup!({ smsId: req.smsId, to: req.to, ...window(), providerMessageId: create.sid!, otherProviderIds: [] }, noAbort())).toEqual({
      answer: 'found',
      providerMessageIds: [create.sid],
      providerStatus: 'undelivered',
      status: 'undelivered',
      errorCode: '30003',
    });
    expect(await twilio.lookup!({ smsId: 'x', to: req.to, ...window(), providerMessageId: randomSid('SM'), otherProviderIds: [] }, noAbort())).toEqual({
      answer: 'absent',
    });
  });

  it('cannot tell when Twilio does not answer', async () => {
    const down = createPlugin('twilio', { account_sid: fake.accountSid, auth_token: 'wrong', from: '+15005550006', base_url: fake.url });
    expect(await down.lookup!({ smsId: 'x', to: '+447700900905', ...window(), otherProviderIds: [] }, noAbort())).toMatchObject({
      answer: 'unknown',
      reason: 'list answered HTTP 401',
    });
    await down.close?.();
  });

  const at = Date.parse('2026-11-25T12:00:00Z');
  const m = (sid: string, overrides: Record<string, unknown> = {}) => ({
    sid,
    to: '+44',
    body: 'hi',
    status: 'sent',
    direction: 'outbound-api',
    date_created: 'Wed, 25 Nov 2026 12:00:30 +0000',
    ...overrides,
  });
  it.each<[string, Array<ReturnType<typeof m>>, { text?: string; otherProviderIds?: string[] }, string[]]>([
    ['one in the window is a candidate', [m('A')], {}, ['A']],
    ['one created before the window is not', [m('A', { date_created: 'Wed, 25 Nov 2026 11:58:00 +0000' })], {}, []],
    ['one created after the window is not', [m('A', { date_created: 'Wed, 25 Nov 2026 12:02:00 +0000' })], {}, []],
    ['an inbound message is not', [m('A', { direction: 'inbound' })], {}, []],
    ['another number is not', [m('A', { to: '+45' })], {}, []],
    ['one the gateway knows under another send is not', [m('A'), m('B')], { otherProviderIds: ['A'] }, ['B']],
    ['with the text kept, another text is not', [m('A'), m('B', { body: 'other' })], { text: 'hi' }, ['A']],
  ])('%s', (_label, messages, extra, sids) => {
    const request = { to: '+44', sentAfter: at, sentBefore: at + 60_000, otherProviderIds: [], ...extra };
    expect(twilioCandidates(messages, request).map((c) => c.sid)).toEqual(sids);
  });
});
