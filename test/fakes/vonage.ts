/**
 * A Vonage SMS API fake that speaks the wire format (docs/providers.md §3.1, §3.3, §3.4, §6): `POST /sms/json` taking
 * JSON (what the SDK sends) or a form, Basic auth or api_key/api_secret fields, HTTP 200 with `message-count` as a
 * string and one entry per SMS part; per-part status codes chosen by magic recipients; and delivery receipts sent
 * by GET query, POST form or POST JSON, signed with `sig` when the fake has a signature secret.
 *
 * The signing here is written from Vonage's description (docs/providers.md §3.4) independently of the plugin's checker; the tests
 * confirm these signatures with @vonage/sms's own verifySignature.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { basicCredentials, readBody, sendJson, startFakeServer } from './http.js';

export type VonageSigningMethod = 'md5hash' | 'md5' | 'sha1' | 'sha256' | 'sha512';
export type ReceiptTransport = 'get' | 'form' | 'json';

/**
 * Per-part submit status by the recipient's last four digits (the fake's own convention). `…9902` accepts the
 * first part and refuses the others with status 5, the partial case of docs/providers.md §4.2. `…9429`/`…9500` answer at HTTP level.
 */
export const VONAGE_MAGIC_SUFFIXES: Readonly<Record<string, { status: string; text: string } | { http: number }>> = {
  '9901': { status: '1', text: 'Throughput Rate Exceeded - please wait [ 30 ] and retry' },
  '9902': { status: '5', text: 'Internal Error' },
  '9904': { status: '4', text: 'Bad Credentials' },
  '9905': { status: '5', text: 'Internal Error' },
  '9906': { status: '6', text: 'Unroutable message - rejected' },
  '9907': { status: '7', text: 'Number barred.' },
  '9910': { status: '10', text: 'Too many existing binds' },
  '9917': { status: '17', text: 'Message blocked by provider' },
  '9933': { status: '33', text: 'Number de-activated' },
  '9429': { http: 429 },
  '9500': { http: 500 },
};

export interface VonageSubmitCall {
  transport: 'json' | 'form';
  /** The request fields with string values, as received. */
  fields: Record<string, string>;
  /** message-id of each accepted part, in part order. */
  messageIds: string[];
}

export interface VonageFakeOptions {
  apiKey?: string;
  apiSecret?: string;
  signatureSecret?: string;
  signatureMethod?: VonageSigningMethod;
  /** A DLR for every accepted part, sent to the submit's `callback`: part i gets statuses[i] (the last one repeats). */
  autoReceipts?: { statuses: string[]; transport: ReceiptTransport; beforeAnswer?: boolean };
}

export interface ReceiptOptions {
  transport: ReceiptTransport;
  /** Unix seconds for `timestamp` (default: now). */
  timestamp?: number;
  /** Sign with this secret instead of the fake's (forgery tests); null sends the receipt unsigned. */
  signatureSecret?: string | null;
}

export interface VonageFake {
  url: string;
  apiKey: string;
  apiSecret: string;
  submits: VonageSubmitCall[];
  /** DLR fields Vonage sends for one part of `submit` (docs/providers.md §3.3). */
  receiptFields(submit: VonageSubmitCall, partIndex: number, status: string, errCode?: string): Record<string, string>;
  /** Adds timestamp, nonce and sig when signing; returns exactly the parameters that go on the wire. */
  signReceipt(fields: Record<string, string>, options: ReceiptOptions): Record<string, string>;
  sendReceipt(url: string, fields: Record<string, string>, options: ReceiptOptions): Promise<number>;
  /**
   * The fields of an inbound SMS as the SMS API posts them to the account's inbound URL (Vonage docs "Receiving
   * an SMS"): `msisdn` the sender and `to` our number, digits without `+`. Sent and signed like receipts (sendReceipt).
   */
  inboundFields(from: string, to: string, text: string): Record<string, string>;
  close(): Promise<void>;
}

export function fakeSignature(params: Record<string, string>, secret: string, method: VonageSigningMethod): string {
  let text = '';
  for (const key of Object.keys(params).sort()) if (key !== 'sig') text += `&${key}=${params[key]!.replace(/&|=/g, '_')}`;
  if (method === 'md5hash')
    return createHash('md5')
      .update(text + secret)
      .digest('hex');
  return createHmac(method, secret).update(text).digest('hex');
}

/** Part count as Vonage bills it: text 160 / 153 per part, unicode 70 / 67 UTF-16 units (docs/providers.md §5). */
export function vonagePartCount(text: string, type: string): number {
  const [single, perPart] = type === 'unicode' ? [70, 67] : [160, 153];
  return text.length <= single ? 1 : Math.ceil(text.length / perPart);
}

export async function startVonageFake(options: VonageFakeOptions = {}): Promise<VonageFake> {
  const apiKey = options.apiKey ?? 'fakekey1';
  const apiSecret = options.apiSecret ?? 'fake-secret-1';
  const submits: VonageSubmitCall[] = [];
  const pending = new Set<Promise<unknown>>();

  const server = await startFakeServer(async (req, res) => {
    const body = (await readBody(req)).toString('utf8');
    if (req.method !== 'POST' || req.url !== '/sms/json') return sendJson(res, 404, { error: 'not found' });
    const isJson = /json/i.test(req.headers['content-type'] ?? '');
    const raw: Record<string, unknown> = isJson ? (JSON.parse(body) as Record<string, unknown>) : Object.fromEntries(new URLSearchParams(body));
    const fields = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, String(v)]));
    const auth = basicCredentials(req.headers.authorization) ?? { user: fields.api_key, password: fields.api_secret };
    if (auth.user !== apiKey || auth.password !== apiSecret) {
      return sendJson(res, 200, { 'message-count': '1', messages: [{ status: '4', 'error-text': 'Bad Credentials' }] });
    }
    const submit: VonageSubmitCall = { transport: isJson ? 'json' : 'form', fields, messageIds: [] };
    submits.push(submit);
    const to = fields.to ?? '';
    if (!/^\d{7,15}$/.test(to) || !fields.from || !fields.text) {
      return sendJson(res, 200, { 'message-count': '1', messages: [{ status: '3', 'error-text': 'Invalid to, from or text' }] });
    }
    const magic = VONAGE_MAGIC_SUFFIXES[to.slice(-4)];
    if (magic && 'http' in magic) return sendJson(res, magic.http, { 'error-code': String(magic.http), 'error-code-label': 'fake HTTP error' });
    const parts = vonagePartCount(fields.text, fields.type ?? 'text');
    const messages = Array.from({ length: parts }, (_, i) => {
      const refused = magic && 'status' in magic && !(to.endsWith('9902') && i === 0);
      if (refused) return { status: magic.status, 'error-text': magic.text };
      const id = randomUUID().toUpperCase();
      submit.messageIds.push(id);
      return {
        to,
        'message-id': id,
        status: '0',
        'remaining-balance': '10.50',
        'message-price': '0.0333',
        network: '23410',
        ...(fields['client-ref'] ? { 'client-ref': fields['client-ref'] } : {}),
      };
    });
    const auto = options.autoReceipts;
    const sendAutoReceipts = async () => {
      for (let part = 0; part < submit.messageIds.length; part++) {
        const status = auto!.statuses[Math.min(part, auto!.statuses.length - 1)]!;
        await sendReceipt(fields.callback!, receiptFields(submit, part, status), { transport: auto!.transport }).catch(() => 0);
      }
    };
    if (auto && fields.callback && auto.beforeAnswer) await sendAutoReceipts();
    sendJson(res, 200, { 'message-count': String(parts), messages });
    if (auto && fields.callback && !auto.beforeAnswer) {
      const p = sendAutoReceipts().finally(() => pending.delete(p));
      pending.add(p);
    }
  });

  function receiptFields(submit: VonageSubmitCall, partIndex: number, status: string, errCode = status === 'delivered' ? '0' : '1') {
    return {
      msisdn: submit.fields.to ?? '',
      to: submit.fields.from ?? '',
      'network-code': '23410',
      messageId: submit.messageIds[partIndex] ?? '',
      price: '0.03330000',
      status,
      scts: '2611230412',
      'err-code': errCode,
      'api-key': apiKey,
      'message-timestamp': '2026-11-23 04:12:37',
      ...(submit.fields['client-ref'] ? { 'client-ref': submit.fields['client-ref'] } : {}),
    };
  }

  function signReceipt(fields: Record<string, string>, receiptOptions: ReceiptOptions): Record<string, string> {
    const secret = receiptOptions.signatureSecret === undefined ? options.signatureSecret : receiptOptions.signatureSecret;
    if (!secret) return { ...fields };
    const signed = { ...fields, timestamp: String(receiptOptions.timestamp ?? Math.floor(Date.now() / 1000)), nonce: randomUUID() };
    return { ...signed, sig: fakeSignature(signed, secret, options.signatureMethod ?? 'md5hash') };
  }

  async function sendReceipt(url: string, fields: Record<string, string>, receiptOptions: ReceiptOptions): Promise<number> {
    const params = signReceipt(fields, receiptOptions);
    let res: Response;
    if (receiptOptions.transport === 'get') {
      const target = new URL(url);
      for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
      res = await fetch(target);
    } else if (receiptOptions.transport === 'form') {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(params).toString(),
      });
    } else {
      res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params) });
    }
    await res.arrayBuffer();
    return res.status;
  }

  return {
    url: server.url,
    apiKey,
    apiSecret,
    submits,
    receiptFields,
    signReceipt,
    sendReceipt,
    inboundFields: (from, to, text) => ({
      msisdn: from.replace(/^\+/, ''),
      to: to.replace(/^\+/, ''),
      messageId: randomUUID().toUpperCase().replace(/-/g, '').slice(0, 16),
      text,
      type: 'text',
      keyword: text.trim().split(/\s+/)[0]!.toUpperCase(),
      'api-key': apiKey,
      'message-timestamp': new Date().toISOString().replace('T', ' ').slice(0, 19),
    }),
    async close() {
      await Promise.allSettled([...pending]);
      await server.close();
    },
  };
}
