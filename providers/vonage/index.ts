/**
 * Vonage SMS API (https://rest.nexmo.com/sms/json). Facts from docs/providers.md §3 and §4.2; vendor docs:
 * https://developer.vonage.com/messaging/sms/guides/delivery-receipts and
 * https://developer.vonage.com/messaging/sms/guides/troubleshooting-sms
 *
 * Send: a form POST with api_key and api_secret in it, as the SMS API document describes (docs/providers.md §3.1; the
 * SDK's JSON with Basic auth is not in the document), over a pooled undici client; one answer entry per SMS
 * part, each with its own message-id and status. Receipts: one per part, by GET query, POST form or POST JSON
 * (the transport is an account setting, so all three are accepted), optionally signed with `sig` (docs/providers.md §3.4).
 * Messages-API-style status webhooks (JSON with message_uuid, Bearer JWT) are accepted too (docs/providers.md §3.5, §3.6).
 * Parts are rolled up into one status by aggregatePartStatuses (src/delivery/parts.ts).
 * Secrets to keep out of logs: api_secret, signature_secret.
 */
import { validityLeft } from '../kit/validity.js';
import type { SMSMessageResponse, SMSStatus } from '@vonage/sms';
import { z } from 'zod';
import { callbackUrlWithoutSmsId } from '../kit/callback-url.js';
import { createProviderPool, postMessage } from '../kit/http-pool.js';
import { ownValue } from '../kit/own-key.js';
import { headerValue, readFormFields } from '../kit/receipt-input.js';
import {
  providerCommonConfig,
  sendFailure,
  type IncomingReceipt,
  type InboundParse,
  type MappedStatus,
  type ProviderPlugin,
  type ReceiptParse,
  type ReportedPrice,
  type SendRequest,
  type SendResult,
} from '../types.js';
import { verifyVonageJwt, verifyVonageSig } from './signature.js';
import { parseMicros } from '../../src/kit/money.js';

const configSchema = z.strictObject({
  type: z.literal('vonage'),
  ...providerCommonConfig,
  base_url: z.url().default('https://rest.nexmo.com').describe('The API host.'),
  api_key: z.string().min(1).describe('The API key (a field of every send).'),
  api_secret: z.string().min(1).describe('The API secret.'),
  from: z.string().min(1).optional().describe('The sender when the CRM gives no sender_name (alphanumeric senders are not allowed everywhere).'),
  signature_secret: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The dashboard's signature secret: receipts must be signed (`sig`, within 5 minutes of our clock), Messages-API webhooks must carry a valid Bearer JWT. Unset: every receipt is refused (403), and production refuses to start.",
    ),
  price_currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code in capitals')
    .default('EUR')
    .describe(
      "The currency of the prices Vonage reports (`message-price`, a receipt's `price`): the SMS API names none; they are in the account's, EUR by Vonage's documents.",
    ),
  signature_method: z
    .enum(['md5hash', 'md5', 'sha1', 'sha256', 'sha512'])
    .default('md5hash')
    .describe("The dashboard's signing method: the MD5 hash (Vonage's default) or one of the HMACs."),
});
export type VonageConfig = z.infer<typeof configSchema>;

/** Submit statuses: the SDK's enum plus 17, which the spec lists and the SDK leaves out (docs/providers.md §3.1). */
type SubmitStatus = Exclude<`${SMSStatus}` | '17', '0'>;

/** Per-part submit status → class (docs/providers.md §3.1, §4.2): throttled and temporary codes transient, the rest permanent. */
export const VONAGE_SUBMIT_STATUS: Readonly<Record<SubmitStatus, { kind: 'permanent' | 'transient'; meaning: string }>> = {
  '1': { kind: 'transient', meaning: 'throttled' },
  '2': { kind: 'permanent', meaning: 'missing parameters' },
  '3': { kind: 'permanent', meaning: 'invalid parameters' },
  '4': { kind: 'permanent', meaning: 'invalid credentials' },
  '5': { kind: 'transient', meaning: 'internal error' },
  '6': { kind: 'permanent', meaning: 'invalid message' },
  '7': { kind: 'permanent', meaning: 'number barred' },
  '8': { kind: 'permanent', meaning: 'partner account barred' },
  '9': { kind: 'permanent', meaning: 'partner quota violation (no credit)' },
  '10': { kind: 'transient', meaning: 'too many existing binds' },
  '11': { kind: 'permanent', meaning: 'account not enabled for HTTP' },
  '12': { kind: 'permanent', meaning: 'message too long' },
  '14': { kind: 'permanent', meaning: 'invalid signature' },
  '15': { kind: 'permanent', meaning: 'invalid sender address' },
  '17': { kind: 'permanent', meaning: 'message blocked by provider' },
  '22': { kind: 'permanent', meaning: 'invalid network code' },
  '23': { kind: 'permanent', meaning: 'invalid callback URL' },
  '29': { kind: 'permanent', meaning: 'non-whitelisted destination' },
  '32': { kind: 'permanent', meaning: 'signature and API secret both sent' },
  '33': { kind: 'permanent', meaning: 'number de-activated' },
};

export function classifyVonageSubmitStatus(status: string): 'accepted' | 'permanent' | 'transient' {
  if (status === '0') return 'accepted';
  return ownValue(VONAGE_SUBMIT_STATUS, status)?.kind ?? 'permanent';
}

/**
 * One answer for the whole message from its parts' statuses. Mixed answers are permanent: the accepted parts go
 * out anyway, so a retry would send them twice (docs/providers.md §4.2). With every part refused, transient only if all were.
 */
export function classifyVonageParts(statuses: readonly string[]): 'accepted' | 'permanent' | 'transient' {
  if (statuses.length === 0) return 'transient';
  const classes = statuses.map(classifyVonageSubmitStatus);
  if (classes.every((c) => c === 'accepted')) return 'accepted';
  if (classes.includes('accepted')) return 'permanent';
  return classes.every((c) => c === 'transient') ? 'transient' : 'permanent';
}

/** SMS API DLR `status` per part → CRM status (docs/providers.md §3.3, §4.2). */
export const VONAGE_DLR_STATUS: Readonly<Record<string, MappedStatus>> = {
  accepted: 'intermediate',
  buffered: 'intermediate',
  delivered: 'delivered',
  // Also what Vonage synthesises after 72 h without a final DLR; the payload cannot tell them apart (docs/providers.md §4.2).
  expired: 'undelivered',
  failed: 'undelivered',
  undelivered: 'undelivered', // older guides
  rejected: 'failed', // refused by the carrier before the handset network (judgement call, docs/providers.md §4.2)
  unknown: 'delivery_unknown',
};

/** Anything else (`deleted`, new values) is delivery_unknown. */
export function mapVonageDlrStatus(status: string): MappedStatus {
  return ownValue(VONAGE_DLR_STATUS, status.toLowerCase()) ?? 'delivery_unknown';
}

/**
 * Messages API status → CRM status (docs/providers.md §4.3). A plain `rejected` means undelivered after a `submitted` and failed
 * before one; a plugin sees one webhook at a time, so it takes the common SMS case, a carrier-side rejection.
 */
export function mapVonageMessagesStatus(status: string, errorCode: string | undefined): MappedStatus {
  switch (status.toLowerCase()) {
    case 'submitted':
      return 'intermediate';
    case 'delivered':
    case 'read':
      return 'delivered';
    case 'undeliverable':
      return 'failed';
    case 'rejected':
      return errorCode === '1330' ? 'delivery_unknown' : 'undelivered'; // 1330 = SMS `unknown`, 1360 = `expired`
    default:
      return 'delivery_unknown';
  }
}

/** The submit answer as the API sends it: `message-count` is a string (the SDK's type says number, docs/providers.md §0.3). */
interface SubmitAnswer {
  'message-count'?: string;
  messages?: Array<Partial<Omit<SMSMessageResponse, 'status'>> & { status?: string; 'error-text'?: string }>;
}

/**
 * The message's price from its send answer: the sum of each part's `message-price` (SMS API, "Send an SMS" response),
 * when every part has one that reads as a decimal. Exact: summed in micro-units (src/kit/money.ts).
 */
export function vonageAnswerPrice(parts: ReadonlyArray<{ 'message-price'?: unknown }>, currency: string): ReportedPrice | undefined {
  let micros = 0n;
  for (const part of parts) {
    const price = typeof part['message-price'] === 'string' ? parseMicros(part['message-price']) : null;
    if (price === null || price < 0n) return undefined;
    micros += price;
  }
  return parts.length > 0 ? { micros, currency } : undefined;
}

/** A receipt's `price` (the part's cost), when it reads as a decimal. */
function receiptPrice(text: string | undefined, currency: string): ReportedPrice | undefined {
  const micros = text === undefined ? null : parseMicros(text);
  return micros === null || micros < 0n ? undefined : { micros, currency };
}

/** Receipt parameters with every value a string, from whichever transport carried them (docs/providers.md §3.3). */
function readReceiptParams(receipt: IncomingReceipt): Record<string, string> | null {
  if (receipt.method === 'GET' || receipt.rawBody.length === 0) return { ...receipt.query };
  if (/json/i.test(receipt.contentType)) {
    let body: unknown;
    try {
      body = JSON.parse(receipt.rawBody.toString('utf8'));
    } catch {
      return null;
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
    // JSON receipts may carry numbers; the signature is over their text (docs/providers.md §0.5).
    return Object.fromEntries(
      Object.entries(body).map(([k, v]) => [k, typeof v === 'string' ? v : v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v)]),
    );
  }
  return Object.fromEntries(Object.entries(readFormFields(receipt.rawBody)).map(([k, v]) => [k, Array.isArray(v) ? v[0]! : v]));
}

/** Vonage's `callback` is limited to 100 characters and `client-ref` already carries our sms_id (docs/providers.md §3.1). */
const receiptUrlFor = callbackUrlWithoutSmsId;

export const vonage: ProviderPlugin<typeof configSchema> = {
  type: 'vonage',
  configSchema,
  create(name, config: VonageConfig, deps) {
    const pool = createProviderPool(config.base_url, config.max_concurrency ?? 64);
    // The SMS API document lists one body for a send: a form with the credentials in it (api_key is required there;
    // Basic auth and JSON, which the SDK uses, it does not describe). test/providers/provider-openapi.test.ts.
    const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    let warnedLongCallback = false;

    function bodyFor(req: SendRequest, from: string): string {
      const callback = receiptUrlFor(req.callbackUrl);
      const fits = callback.length <= 100;
      // Vonage's ttl: milliseconds, 20000 to 604800000 (its SMS API; test/fakes/openapi/vonage.json).
      const ttl = validityLeft(req.validUntil, deps.now(), { minMs: 20_000, maxMs: 604_800_000 });
      if (!fits && !warnedLongCallback) {
        warnedLongCallback = true;
        deps.logger.warn({ provider: name, callback }, "receipt URL is over Vonage's 100 characters; relying on the dashboard DLR URL");
      }
      return new URLSearchParams({
        api_key: config.api_key,
        api_secret: config.api_secret,
        from,
        to: req.to.replace(/^\+/, ''), // Vonage wants E.164 digits without '+'
        text: req.text,
        type: req.encoding === 'ucs2' ? 'unicode' : 'text', // Vonage never picks the encoding itself (docs/providers.md §5)
        'client-ref': req.smsId,
        ...(fits ? { callback } : {}),
        ...(ttl === undefined ? {} : { ttl: String(ttl) }),
      }).toString();
    }

    const failure = (kind: 'permanent' | 'transient', error: string, code: string, ambiguous?: boolean) => sendFailure('vonage', kind, error, code, ambiguous);

    function parseMessagesWebhook(receipt: IncomingReceipt): ReceiptParse {
      if (!config.signature_secret) return { ok: false, reason: 'Messages API webhooks are only accepted with signature_secret set' };
      const check = verifyVonageJwt(headerValue(receipt, 'authorization'), receipt.rawBody, config.signature_secret, deps.now());
      if (!check.ok) return check;
      let body: { message_uuid?: string; status?: string; client_ref?: string; error?: { title?: unknown; type?: unknown } };
      try {
        body = JSON.parse(receipt.rawBody.toString('utf8')) as typeof body;
      } catch {
        return { ok: false, reason: 'Messages API webhook body is not JSON' };
      }
      if (typeof body?.status !== 'string') return { ok: false, reason: 'status is missing' };
      const errorCode = /^\d+$/.test(String(body.error?.title)) ? String(body.error?.title) : /#(\d+)$/.exec(String(body.error?.type ?? ''))?.[1];
      const event = {
        smsId: body.client_ref || undefined,
        providerMessageId: body.message_uuid,
        providerStatus: body.status,
        status: mapVonageMessagesStatus(body.status, errorCode),
      };
      return { ok: true, events: [errorCode ? { ...event, errorCode } : event] };
    }

    return {
      name,
      type: 'vonage',
      // Every send carries `client-ref`, which Vonage echoes in each receipt (its DLRs and the Messages API's `client_ref`).
      receiptsNameSmsId: true,
      async send(req: SendRequest, signal: AbortSignal): Promise<SendResult> {
        const from = req.from ?? config.from;
        if (!from) return failure('permanent', 'no sender: the message has no sender_name and the provider has no `from`', 'no_sender');
        // A request that got no answer is transient whatever went wrong (ambiguous unless nothing was sent).
        const send = { type: 'vonage', pool, path: '/sms/json', headers, body: bodyFor(req, from) };
        const posted = await postMessage(send, signal, () => 'transient');
        if (!posted.ok) return posted.result;
        const { res } = posted;
        // A 5xx may come after the message was accepted; a 429 was refused before anything was sent.
        if (res.status === 429 || res.status >= 500) return failure('transient', `HTTP ${res.status}`, `http_${res.status}`, res.status >= 500);
        if (res.status >= 300) return failure('permanent', `HTTP ${res.status} (${res.text.slice(0, 200) || 'no body'})`, `http_${res.status}`);
        const parts = (res.json as SubmitAnswer | undefined)?.messages ?? [];
        const statuses = parts.map((p) => String(p.status ?? ''));
        const verdict = classifyVonageParts(statuses);
        if (verdict === 'accepted') {
          const ids = parts.map((p) => p['message-id']).filter((id): id is string => typeof id === 'string' && id.length > 0);
          if (ids.length === parts.length) {
            const price = vonageAnswerPrice(parts, config.price_currency);
            // Each part's answer carries the balance after it: the last part's is the account's now.
            const balance = receiptPrice(parts.at(-1)?.['remaining-balance'], config.price_currency);
            return { ok: true, providerMessageIds: ids, providerStatus: 'accepted', ...(price ? { price } : {}), ...(balance ? { balance } : {}) };
          }
          return failure('transient', 'answer lacks a message-id for some part', 'malformed_answer', true);
        }
        const refused = parts.find((p) => p.status !== '0');
        const code = String(refused?.status ?? 'malformed_answer');
        const meaning = ownValue(VONAGE_SUBMIT_STATUS, code)?.meaning ?? 'unknown status';
        const partial = statuses.includes('0') ? `; ${statuses.filter((s) => s === '0').length} of ${parts.length} parts were accepted and will be sent` : '';
        return failure(verdict, `status ${code} (${meaning}${refused?.['error-text'] ? `: ${refused['error-text']}` : ''})${partial}`, code);
      },

      parseReceipt(receipt: IncomingReceipt): ReceiptParse {
        // A JWT covers the body's bytes (payload_hash): it is checked before the body is parsed at all.
        if (/^Bearer\s/i.test(headerValue(receipt, 'authorization') ?? '')) return parseMessagesWebhook(receipt);
        const params = readReceiptParams(receipt);
        if (!params) return { ok: false, reason: 'body is not a JSON object' };
        if (params.message_uuid !== undefined) return parseMessagesWebhook(receipt);
        if (!config.signature_secret)
          return { ok: false, reason: 'receipts are only accepted with signature_secret set (unsigned ones could come from anyone)' };
        const check = verifyVonageSig(params, config.signature_secret, config.signature_method, deps.now());
        if (!check.ok) return check;
        const providerStatus = params.status;
        if (!providerStatus) return { ok: false, reason: 'status is missing: not a delivery receipt' };
        const status = mapVonageDlrStatus(providerStatus);
        if (!Object.hasOwn(VONAGE_DLR_STATUS, providerStatus.toLowerCase()))
          deps.logger.warn({ provider: name, providerStatus }, 'unknown Vonage DLR status; mapped to delivery_unknown');
        const errorCode = params['err-code'];
        const price = receiptPrice(params.price, config.price_currency);
        return {
          ok: true,
          events: [
            {
              smsId: params['client-ref'] || undefined,
              providerMessageId: params.messageId || params['message-id'] || undefined,
              providerStatus,
              status,
              ...(errorCode ? { errorCode } : {}),
              ...(price ? { price } : {}),
              perPart: true, // one DLR per part (docs/providers.md §3.3); Messages API webhooks (above) arrive already aggregated
            },
          ],
        };
      },

      /**
       * SMS API inbound messages, by GET, form or JSON like receipts (docs/providers.md §3.3, §3.4): only signed ones
       * are believed, so inbound needs signature_secret. `msisdn` is the sender, `to` our number.
       */
      parseInbound(request: IncomingReceipt): InboundParse {
        if (!config.signature_secret) return { ok: false, reason: 'inbound messages are only accepted with signature_secret set' };
        const params = readReceiptParams(request);
        if (!params) return { ok: false, reason: 'body is not a JSON object' };
        const check = verifyVonageSig(params, config.signature_secret, config.signature_method, deps.now());
        if (!check.ok) return check;
        // A delivery receipt sent here by a dashboard mix-up: authentic, but no message from a player.
        if (params.status !== undefined && params.text === undefined) return { ok: true, message: null };
        const id = params.messageId ?? params['message-id'];
        if (!id || !params.msisdn || !params.to) return { ok: false, reason: 'messageId, msisdn and to are required' };
        // Vonage writes numbers as digits without `+`.
        const e164 = (n: string) => (n.startsWith('+') ? n : `+${n}`);
        return { ok: true, message: { providerMessageId: id, from: e164(params.msisdn), to: e164(params.to), text: params.text ?? '' } };
      },

      // An SMS API receipt or inbound message is about a dozen short fields (one part each, docs/providers.md §3.3), a
      // Messages API status under 1 KB of JSON: a larger body is no webhook of Vonage's (docs/public-doors.md).
      callbackBodyLimit: { dlr: 8 * 1024, mo: 8 * 1024 },

      close: () => pool.close(),
    };
  },
};
