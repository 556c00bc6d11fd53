import { createHash, createHmac } from 'node:crypto';
import { AlgorithmTypes, Auth } from '@vonage/auth';
import { verifySignature as verifyJwtSignature } from '@vonage/jwt';
import { SMS } from '@vonage/sms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingReceipt, SmsProvider } from '../../providers/types.js';
import { fakeSignature, startVonageFake, type ReceiptTransport, type VonageFake, type VonageSigningMethod } from '../fakes/vonage.js';
import { createPlugin, noAbort, sendRequest } from '../helpers/providers.js';
import { startReceiptCapture, type ReceiptCapture } from '../helpers/receipt-capture.js';

const SECRET = 'signature-secret-1';
const now = Date.now();
let fake: VonageFake;
let capture: ReceiptCapture;
let vonage: SmsProvider;

beforeAll(async () => {
  fake = await startVonageFake({ signatureSecret: SECRET, signatureMethod: 'sha256' });
  capture = await startReceiptCapture();
  vonage = createPlugin(
    'vonage',
    { api_key: fake.apiKey, api_secret: fake.apiSecret, base_url: fake.url, signature_secret: SECRET, signature_method: 'sha256' },
    () => now,
  );
});
afterAll(async () => {
  await vonage.close?.();
  await fake.close();
  await capture.close();
});

describe('vonage send: field mapping', () => {
  it('posts a form with the credentials in it (the SMS API document): to without +, type text, client-ref = sms_id, callback without the sms_id query', async () => {
    const req = sendRequest(capture.url, 'vonage');
    const result = await vonage.send(req, noAbort());
    const submit = fake.submits.at(-1)!;
    expect(result).toEqual({
      ok: true,
      providerMessageIds: submit.messageIds,
      providerStatus: 'accepted',
      price: { micros: 33_300n, currency: 'EUR' },
      balance: { micros: 10_500_000n, currency: 'EUR' },
    });
    expect(submit.transport).toBe('form');
    expect(submit.fields).toEqual({
      api_key: fake.apiKey,
      api_secret: fake.apiSecret,
      from: 'Casino',
      to: '447700900123',
      text: 'Your bonus is waiting',
      type: 'text',
      'client-ref': req.smsId,
      callback: `${capture.url}/dlr/vonage`,
    });
  });

  it('sends type unicode for UCS-2 messages', async () => {
    await vonage.send(sendRequest(capture.url, 'vonage', { text: 'Привет', encoding: 'ucs2' }), noAbort());
    expect(fake.submits.at(-1)!.fields.type).toBe('unicode');
  });

  it("records every part's message-id, in part order, for a long text", async () => {
    const result = await vonage.send(sendRequest(capture.url, 'vonage', { text: 'x'.repeat(400), segments: 3 }), noAbort());
    const submit = fake.submits.at(-1)!;
    expect(submit.messageIds).toHaveLength(3);
    expect(result).toEqual({
      ok: true,
      providerMessageIds: submit.messageIds,
      providerStatus: 'accepted',
      price: { micros: 99_900n, currency: 'EUR' },
      balance: { micros: 10_500_000n, currency: 'EUR' },
    });
  });

  it('uses the configured from without a sender_name, and refuses permanently with neither', async () => {
    const withFrom = createPlugin('vonage', { api_key: fake.apiKey, api_secret: fake.apiSecret, base_url: fake.url, from: 'Brand' });
    await withFrom.send(sendRequest(capture.url, 'vonage', { from: undefined }), noAbort());
    expect(fake.submits.at(-1)!.fields.from).toBe('Brand');
    expect(await vonage.send(sendRequest(capture.url, 'vonage', { from: undefined }), noAbort())).toMatchObject({
      ok: false,
      kind: 'permanent',
      code: 'no_sender',
    });
    await withFrom.close?.();
  });
});

describe('vonage send: error classes', () => {
  it.each([
    ['447700909901', 'transient', '1', /throttled: Throughput Rate Exceeded/],
    ['447700909905', 'transient', '5', /internal error/],
    ['447700909910', 'transient', '10', /binds/],
    ['447700909904', 'permanent', '4', /invalid credentials/],
    ['447700909906', 'permanent', '6', /invalid message/],
    ['447700909907', 'permanent', '7', /barred/],
    ['447700909917', 'permanent', '17', /blocked/],
    ['447700909933', 'permanent', '33', /de-activated/],
    ['447700909429', 'transient', 'http_429', /HTTP 429/],
    // A 5xx may come after the message was accepted: a retry waits for its receipt first.
    ['447700909500', 'transient', 'http_500', /HTTP 500/, true],
  ])("the fake's +%s answers %s with code %s", async (to, kind, code, error, ambiguous?: boolean) => {
    const result = await vonage.send(sendRequest(capture.url, 'vonage', { to: `+${to}` }), noAbort());
    expect(result).toEqual({ ok: false, kind, code, error: expect.stringMatching(error), ...(ambiguous ? { ambiguous } : {}) });
  });

  it('a partially accepted long text is permanent and says how many parts went out', async () => {
    const result = await vonage.send(sendRequest(capture.url, 'vonage', { to: '+447700909902', text: 'y'.repeat(320), segments: 3 }), noAbort());
    expect(result).toMatchObject({ ok: false, kind: 'permanent', code: '5', error: expect.stringMatching(/1 of 3 parts were accepted/) });
  });

  it('wrong credentials come back as status 4 (permanent)', async () => {
    const wrong = createPlugin('vonage', { api_key: fake.apiKey, api_secret: 'nope', base_url: fake.url });
    expect(await wrong.send(sendRequest(capture.url, 'vonage'), noAbort())).toMatchObject({ ok: false, kind: 'permanent', code: '4' });
    await wrong.close?.();
  });

  it('an unreachable API and an aborted request are transient', async () => {
    const down = createPlugin('vonage', { api_key: 'k', api_secret: 's', base_url: 'http://127.0.0.1:9' });
    expect(await down.send(sendRequest(capture.url, 'vonage'), noAbort())).toMatchObject({
      ok: false,
      kind: 'transient',
      error: expect.stringMatching(/connection failed/),
    });
    expect(await vonage.send(sendRequest(capture.url, 'vonage'), AbortSignal.abort())).toMatchObject({ ok: false, kind: 'transient', code: 'timeout' });
    await down.close?.();
  });
});

describe('vonage delivery receipts (sig)', () => {
  async function sentMessage(text = 'hello') {
    const req = sendRequest(capture.url, 'vonage', { text });
    await vonage.send(req, noAbort());
    return { req, submit: fake.submits.at(-1)! };
  }
  async function receive(
    url: string,
    fields: Record<string, string>,
    transport: ReceiptTransport,
    options: { timestamp?: number; signatureSecret?: string | null } = {},
  ) {
    await fake.sendReceipt(url, fields, { transport, ...options });
    return capture.receipts.at(-1)!;
  }

  it.each<ReceiptTransport>(['get', 'form', 'json'])('a signed %s receipt parses into one event per part', async (transport) => {
    const { req, submit } = await sentMessage();
    const receipt = await receive(`${capture.url}/dlr/vonage`, fake.receiptFields(submit, 0, 'delivered'), transport);
    expect(await vonage.parseReceipt(receipt)).toEqual({
      ok: true,
      events: [
        {
          smsId: req.smsId,
          providerMessageId: submit.messageIds[0],
          providerStatus: 'delivered',
          status: 'delivered',
          errorCode: '0',
          price: { micros: 33_300n, currency: 'EUR' },
          perPart: true,
        },
      ],
    });
  });

  it('a JSON receipt with number values verifies over their text', async () => {
    const { submit } = await sentMessage();
    const signed = fake.signReceipt({ ...fake.receiptFields(submit, 0, 'failed', '8') }, { transport: 'json' });
    const body = JSON.stringify({ ...signed, 'err-code': 8, timestamp: Number(signed.timestamp) });
    const receipt: IncomingReceipt = {
      method: 'POST',
      publicUrl: `${capture.url}/dlr/vonage`,
      query: {},
      headers: { 'content-type': 'application/json' },
      contentType: 'application/json',
      rawBody: Buffer.from(body),
    };
    expect(await vonage.parseReceipt(receipt)).toMatchObject({ ok: true, events: [{ status: 'undelivered', errorCode: '8' }] });
  });

  it.each<VonageSigningMethod>(['md5hash', 'md5', 'sha1', 'sha256', 'sha512'])(
    "checks %s signatures, which @vonage/sms's own verifier accepts too",
    async (method) => {
      const plugin = createPlugin('vonage', { api_key: 'k', api_secret: 's', signature_secret: SECRET, signature_method: method }, () => now);
      const fields = {
        messageId: 'ABC',
        status: 'delivered',
        'client-ref': 'x',
        'message-timestamp': '2026-11-23 04:12:37',
        text: 'a&b=c',
        timestamp: String(Math.floor(now / 1000)),
        nonce: 'n1',
      };
      const params = { ...fields, sig: fakeSignature(fields, SECRET, method) };
      const algorithm = {
        md5hash: AlgorithmTypes.md5hash,
        md5: AlgorithmTypes.md5hmac,
        sha1: AlgorithmTypes.sha1hmac,
        sha256: AlgorithmTypes.sha256hmac,
        sha512: AlgorithmTypes.sha512hmac,
      }[method];
      expect(new SMS(new Auth({ apiKey: 'k', apiSecret: 's' })).verifySignature(params.sig, params, SECRET, algorithm)).toBe(true);
      const receipt: IncomingReceipt = { method: 'GET', publicUrl: capture.url, query: params, headers: {}, contentType: '', rawBody: Buffer.alloc(0) };
      expect(await plugin.parseReceipt(receipt)).toMatchObject({ ok: true });
      expect(await plugin.parseReceipt({ ...receipt, query: { ...params, sig: params.sig.toUpperCase() } })).toMatchObject({ ok: true });
      expect(await plugin.parseReceipt({ ...receipt, query: { ...params, status: 'failed' } })).toMatchObject({ ok: false });
    },
  );

  it.each<[string, () => Promise<IncomingReceipt>, RegExp]>([
    ['unsigned', async () => receive(`${capture.url}/dlr/vonage`, { messageId: 'A', status: 'delivered' }, 'get', { signatureSecret: null }), /sig is missing/],
    [
      'signed with another secret',
      async () => receive(`${capture.url}/dlr/vonage`, { messageId: 'A', status: 'delivered' }, 'form', { signatureSecret: 'other' }),
      /sig does not match/,
    ],
    [
      'six minutes old',
      async () => receive(`${capture.url}/dlr/vonage`, { messageId: 'A', status: 'delivered' }, 'json', { timestamp: Math.floor(now / 1000) - 360 }),
      /window/,
    ],
    [
      'six minutes in the future',
      async () => receive(`${capture.url}/dlr/vonage`, { messageId: 'A', status: 'delivered' }, 'get', { timestamp: Math.floor(now / 1000) + 360 }),
      /window/,
    ],
    [
      'with a field changed after signing',
      async () => {
        const r = await receive(`${capture.url}/dlr/vonage`, { messageId: 'A', status: 'failed' }, 'form');
        return { ...r, rawBody: Buffer.from(r.rawBody.toString().replace('status=failed', 'status=delivered')) };
      },
      /sig does not match/,
    ],
  ])('refuses a receipt %s', async (_label, make, reason) => {
    expect(await vonage.parseReceipt(await make())).toEqual({ ok: false, reason: expect.stringMatching(reason) });
  });

  it('accepts a receipt four minutes old (inside the window)', async () => {
    const receipt = await receive(`${capture.url}/dlr/vonage`, { messageId: 'A', status: 'delivered' }, 'get', { timestamp: Math.floor(now / 1000) - 240 });
    expect(await vonage.parseReceipt(receipt)).toMatchObject({ ok: true });
  });

  it('refuses every receipt when no signature_secret is configured, since anyone could have sent it', async () => {
    const open = createPlugin('vonage', { api_key: 'k', api_secret: 's' });
    const receipt = await receive(`${capture.url}/dlr/vonage`, { messageId: 'A', status: 'buffered', 'client-ref': 'r1' }, 'form', { signatureSecret: null });
    expect(await open.parseReceipt(receipt)).toEqual({ ok: false, reason: expect.stringMatching(/signature_secret/) });
  });

  it('per-part receipts, duplicated and out of order, each parse to their own part event', async () => {
    const { req, submit } = await sentMessage('z'.repeat(320));
    const sends: Array<[number, string]> = [
      [1, 'delivered'],
      [0, 'delivered'],
      [0, 'accepted'],
      [1, 'delivered'],
    ];
    const events = [];
    for (const [part, status] of sends) {
      const parsed = await vonage.parseReceipt(await receive(`${capture.url}/dlr/vonage`, fake.receiptFields(submit, part, status), 'get'));
      expect(parsed.ok).toBe(true);
      if (parsed.ok) events.push(...parsed.events);
    }
    expect(events.map((e) => [e.providerMessageId, e.status, e.smsId])).toEqual([
      [submit.messageIds[1], 'delivered', req.smsId],
      [submit.messageIds[0], 'delivered', req.smsId],
      [submit.messageIds[0], 'intermediate', req.smsId],
      [submit.messageIds[1], 'delivered', req.smsId],
    ]);
  });
});

describe('vonage Messages API webhooks (JWT, docs/providers.md §3.6)', () => {
  const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
  function jwt(claims: Record<string, unknown>, secret = SECRET, alg = 'HS256') {
    const head = b64({ alg, typ: 'JWT' });
    const body = b64(claims);
    const sig =
      alg === 'none'
        ? ''
        : createHmac(alg === 'HS512' ? 'sha512' : 'sha256', secret)
            .update(`${head}.${body}`)
            .digest('base64url');
    return `${head}.${body}.${sig}`;
  }
  function webhook(payload: object, claims: (hash: string) => Record<string, unknown>, secret?: string, alg?: string): IncomingReceipt {
    const rawBody = Buffer.from(JSON.stringify(payload));
    const hash = createHash('sha256').update(rawBody).digest('hex');
    return {
      method: 'POST',
      publicUrl: 'https://gw.example/dlr/vonage',
      query: {},
      headers: { authorization: `Bearer ${jwt(claims(hash), secret, alg)}`, 'content-type': 'application/json' },
      contentType: 'application/json',
      rawBody,
    };
  }
  const payload = {
    message_uuid: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
    to: '447700900123',
    from: 'Casino',
    timestamp: '2026-11-23T04:12:37Z',
    status: 'rejected',
    channel: 'sms',
    client_ref: 'sms-1',
    error: { type: 'https://developer.vonage.com/api-errors/messages#1360', title: '1360' },
  };
  const fresh = () => Math.floor(now / 1000);

  it('a fresh, signed webhook with the right payload_hash parses', async () => {
    const parsed = await vonage.parseReceipt(webhook(payload, (h) => ({ iat: fresh(), jti: 'j1', api_key: 'k', payload_hash: h })));
    expect(parsed).toEqual({
      ok: true,
      events: [{ smsId: 'sms-1', providerMessageId: payload.message_uuid, providerStatus: 'rejected', status: 'undelivered', errorCode: '1360' }],
    });
  });

  it.each<[string, () => IncomingReceipt, RegExp]>([
    ['a replayed old token (the package alone lets it pass)', () => webhook(payload, (h) => ({ iat: fresh() - 3_600, payload_hash: h })), /iat/],
    ['a token for another body', () => webhook(payload, () => ({ iat: fresh(), payload_hash: 'ab'.repeat(32) })), /payload_hash/],
    ['a token without payload_hash', () => webhook(payload, () => ({ iat: fresh() })), /payload_hash/],
    ['a token signed with another secret', () => webhook(payload, (h) => ({ iat: fresh(), payload_hash: h }), 'other'), /JWT signature/],
    ['an unsigned alg:none token', () => webhook(payload, (h) => ({ iat: fresh(), payload_hash: h }), SECRET, 'none'), /JWT signature/],
    ['a token signed with HS512 (only HS256 is taken)', () => webhook(payload, (h) => ({ iat: fresh(), payload_hash: h }), SECRET, 'HS512'), /JWT signature/],
    ['a token whose exp has passed', () => webhook(payload, (h) => ({ iat: fresh(), exp: fresh() - 1, payload_hash: h })), /JWT signature/],
    ['a token not valid before a later time (nbf)', () => webhook(payload, (h) => ({ iat: fresh(), nbf: fresh() + 60, payload_hash: h })), /JWT signature/],
    [
      'a token of two parts',
      () => ({ ...webhook(payload, (h) => ({ iat: fresh(), payload_hash: h })), headers: { authorization: 'Bearer a.b', 'content-type': 'application/json' } }),
      /JWT signature/,
    ],
    [
      'no Authorization header',
      () => ({ ...webhook(payload, (h) => ({ iat: fresh(), payload_hash: h })), headers: { 'content-type': 'application/json' } }),
      /Bearer token is missing/,
    ],
  ])('refuses %s', async (_label, make, reason) => {
    expect(await vonage.parseReceipt(make())).toEqual({ ok: false, reason: expect.stringMatching(reason) });
  });

  it('a token @vonage/jwt accepts, with exp ahead, parses here too (the check is ours, the signature is theirs)', async () => {
    const parsed = await vonage.parseReceipt(webhook(payload, (h) => ({ iat: fresh(), exp: fresh() + 60, payload_hash: h })));
    expect(verifyJwtSignature(webhook(payload, (h) => ({ iat: fresh(), exp: fresh() + 60, payload_hash: h })).headers.authorization!.slice(7), SECRET)).toBe(
      true,
    );
    expect(parsed.ok).toBe(true);
  });

  it('@vonage/jwt alone accepts the replayed old token, which is why iat is checked here', () => {
    const old = webhook(payload, (h) => ({ iat: fresh() - 3_600, payload_hash: h }));
    expect(verifyJwtSignature(old.headers.authorization!.slice(7), SECRET)).toBe(true);
  });
});
