/**
 * Twilio Programmable Messaging (API 2010-04-01). Facts from docs/providers.md §1, §2 and §4.1; vendor docs:
 * https://www.twilio.com/docs/messaging/api/message-resource and
 * https://www.twilio.com/docs/usage/webhooks/webhooks-security
 *
 * Send: a form POST to `{base_url}/2010-04-01/Accounts/{account_sid}/Messages.json` with Basic auth over a pooled
 * undici client. The twilio SDK stays off this path (docs/design.md §6: its messages.create costs about ten times the CPU).
 * Receipts: status callbacks are form POSTs signed with X-Twilio-Signature; they are checked with node:crypto
 * (providers/twilio/signature.ts) against the public URL we handed out (never the Host header), with or without
 * the fragment we added to it, under the auth token or a Webhooks Rule's shared key (verifyTwilioRequest, signature.ts).
 * Secrets to keep out of logs: auth_token.
 */
import { validityLeft } from '../kit/validity.js';
import { z } from 'zod';
import { CALLBACK_SMS_ID_PARAM } from '../kit/callback-url.js';
import { createProviderPool, lookupFailure, mayHaveCreated, postMessage } from '../kit/http-pool.js';
import { ownValue } from '../kit/own-key.js';
import { statusCallbackWithRetries, verifyTwilioRequest } from './signature.js';
import {
  providerCommonConfig,
  sendFailure,
  type IncomingReceipt,
  type InboundParse,
  type LookupRequest,
  type LookupResult,
  type MappedStatus,
  type PriceFetch,
  type ProviderPlugin,
  type ReceiptParse,
  type SendRequest,
  type SendResult,
} from '../types.js';
import { CURRENCY_PATTERN, microsOfNumber, parseMicros } from '../../src/kit/money.js';

const configSchema = z
  .strictObject({
    type: z.literal('twilio'),
    ...providerCommonConfig,
    base_url: z.url().default('https://api.twilio.com').describe('The API host.'),
    account_sid: z
      .string()
      .regex(/^AC[0-9a-f]{32}$/i, 'must be AC followed by 32 hex digits')
      .describe('The account (`AC…`).'),
    auth_token: z.string().min(1).describe('Its auth token: Basic auth of sends, and the key Twilio signs callbacks with.'),
    from: z.string().min(1).optional().describe('The sender when the CRM gives no sender_name; set this, messaging_service_sid, or both.'),
    messaging_service_sid: z
      .string()
      .regex(/^MG[0-9a-f]{32}$/i, 'must be MG followed by 32 hex digits')
      .optional()
      .describe('Send through a Messaging Service (`MG…`): Twilio picks the sender from its pool when there is no From.'),
    validity_period: z
      .number()
      .int()
      .min(1)
      .max(36_000)
      .optional()
      .describe("Seconds a message may wait in Twilio's queue before Twilio fails it (error 30036); unset: Twilio's 36000."),
    smart_encoded: z
      .boolean()
      .optional()
      .describe("`true` lets Twilio replace look-alike characters with GSM-7 ones (docs/providers.md §5); unset: Twilio's default."),
    // Twilio spends at most 15 s on one callback and its retries: this covers a restart's refused connections and
    // brief 5xx answers, not a long outage.
    webhook_shared_keys: z
      .record(z.string().min(1), z.string().min(1))
      .optional()
      .describe(
        'SharedKey secrets of Twilio Webhooks Rules that match our URLs, by the key the header X-Twilio-Webhooks-Signature-Settings names (`key=…`); a callback with that header is checked with its key and algorithm instead of auth_token (docs/providers.md §2.4).',
      ),
    status_callback_retries: z
      .number()
      .int()
      .min(0)
      .max(5)
      .default(5)
      .describe('Retries Twilio makes of a failed status callback, asked for with `#rc=…&rp=all` on the StatusCallback URL (docs/crash-windows.md).'),
  })
  .refine((c) => c.from !== undefined || c.messaging_service_sid !== undefined, {
    message: 'set from or messaging_service_sid (Twilio needs a sender)',
    path: ['from'],
  });
export type TwilioConfig = z.infer<typeof configSchema>;

export type TwilioFailure = { httpStatus?: number; code?: number; network?: string };

/**
 * Send-time error codes that mean this message will never go out as it is (docs/providers.md §1.4,
 * https://www.twilio.com/docs/api/errors). The text is what the CRM reads in the 400 answer.
 */
export const TWILIO_PERMANENT_CODES: Readonly<Record<number, string>> = {
  21211: 'invalid To number',
  21212: 'invalid From number',
  21408: 'no permission to send to this region (geo permissions)',
  21602: 'message body is required',
  21603: 'From is required',
  21604: 'To is required',
  21606: 'From is not a valid message-capable sender for this destination',
  21608: 'unverified To on a trial account or no approved compliance profile',
  21610: 'recipient has unsubscribed (replied STOP)',
  21612: 'Twilio cannot route to this To number',
  21614: 'To is not a valid mobile number',
  21617: 'message body exceeds 1600 characters',
  21635: 'To is a landline',
};

/** Error 21610, "attempt to send to unsubscribed recipient". */
export const TWILIO_OPTED_OUT_CODE = 21610;

/**
 * Codes a retry can fix: 20429 too many concurrent requests (never processed, always safe to retry), 21611 the
 * sender's queue is over its backlog limit, 20003 authentication failed: a configuration fault of ours, which
 * must not burn the CRM's messages as permanent failures (docs/providers.md §1.4).
 */
export const TWILIO_TRANSIENT_CODES: ReadonlySet<number> = new Set([20003, 20429, 21611]);

/**
 * Pure classification of a failed create call. Network failures, timeouts, HTTP 429 and 5xx are transient (a 5xx
 * or a timeout may have created the message: Twilio has no idempotency key, so the CRM's retry risks a duplicate,
 * which we accept over losing the message); known permanent codes and other 4xx answers are permanent.
 */
export function classifyTwilioFailure(failure: TwilioFailure): 'permanent' | 'transient' {
  if (failure.network) return 'transient';
  if (failure.code !== undefined && TWILIO_TRANSIENT_CODES.has(failure.code)) return 'transient';
  const status = failure.httpStatus ?? 0;
  if (status === 429 || status >= 500) return 'transient';
  if (failure.code !== undefined && Object.hasOwn(TWILIO_PERMANENT_CODES, failure.code)) return 'permanent';
  if (status >= 400) return 'permanent';
  return 'transient'; // a 2xx/3xx we cannot read: the message may exist, the CRM decides on retry
}

/** MessageStatus → CRM status (docs/providers.md §2.2, §4.1). `ignore`: inbound statuses, nothing to record. */
export const TWILIO_STATUS_MAP: Readonly<Record<string, MappedStatus | 'ignore'>> = {
  accepted: 'intermediate',
  scheduled: 'intermediate',
  queued: 'intermediate',
  sending: 'intermediate',
  // The carrier took it; Twilio notes a message may stay `sent` forever, so the unknown-timeout sweep ends it.
  sent: 'intermediate',
  delivered: 'delivered',
  read: 'delivered', // WhatsApp/RCS read implies delivered
  undelivered: 'undelivered',
  failed: 'failed',
  canceled: 'failed', // a cancelled scheduled send never went out (judgement call, docs/providers.md §4.1)
  partially_delivered: 'delivery_unknown', // not described for SMS; some parts unconfirmed (judgement call)
  receiving: 'ignore',
  received: 'ignore',
};

/** Unknown values stay intermediate until the timeout: Twilio adds statuses without notice (docs/providers.md §4.1). */
export function mapTwilioStatus(status: string): MappedStatus | 'ignore' {
  return ownValue(TWILIO_STATUS_MAP, status.toLowerCase()) ?? 'intermediate';
}

/** Twilio answers errors as legacy JSON `{code, message, more_info, status}` or RFC 9457 `{type, title, detail, code}`. */
function readTwilioError(json: unknown): { code?: number; message?: string } {
  const body = (json ?? {}) as { code?: unknown; message?: unknown; title?: unknown; detail?: unknown };
  const code = typeof body.code === 'number' ? body.code : typeof body.code === 'string' && /^\d+$/.test(body.code) ? Number(body.code) : undefined;
  const message = [body.message, body.title, body.detail].find((m): m is string => typeof m === 'string' && m.length > 0);
  return { code, message };
}

const firstValue = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** One Message resource as the list and fetch calls answer it (the fields a lookup reads). */
interface TwilioMessage {
  sid?: unknown;
  to?: unknown;
  body?: unknown;
  status?: unknown;
  direction?: unknown;
  date_created?: unknown;
  error_code?: unknown;
}

/** A Message resource as a lookup's answer: its sid and status mapped like a status callback's. */
function foundMessage(m: TwilioMessage): LookupResult {
  const providerStatus = typeof m.status === 'string' ? m.status : 'unknown';
  const mapped = mapTwilioStatus(providerStatus);
  const errorCode = typeof m.error_code === 'number' || typeof m.error_code === 'string' ? String(m.error_code) : undefined;
  return {
    answer: 'found',
    providerMessageIds: [String(m.sid)],
    providerStatus,
    status: mapped === 'ignore' ? 'intermediate' : mapped,
    ...(errorCode ? { errorCode } : {}),
  };
}

/**
 * Which listed messages could be this send: outbound to its number, created in its window, none we know under
 * another message, and with its text when the ledger kept it. The Message resource does not show the StatusCallback
 * (which carries our sms_id), so number, time and text are all a lookup can match on (docs/providers.md §1).
 */
export function twilioCandidates(
  messages: TwilioMessage[],
  req: Pick<LookupRequest, 'to' | 'sentAfter' | 'sentBefore' | 'text' | 'otherProviderIds'>,
): TwilioMessage[] {
  const known = new Set(req.otherProviderIds);
  return messages.filter((m) => {
    if (typeof m.sid !== 'string' || known.has(m.sid) || m.to !== req.to) return false;
    if (typeof m.direction === 'string' && !m.direction.startsWith('outbound')) return false;
    const created = typeof m.date_created === 'string' ? Date.parse(m.date_created) : Number.NaN;
    // Twilio's dates have whole seconds: the window is widened by one on each side.
    if (!Number.isFinite(created) || created < req.sentAfter - 1_000 || created > req.sentBefore + 1_000) return false;
    return req.text === undefined || m.body === undefined || m.body === req.text;
  });
}

/**
 * The Message resource's `price` and `price_unit` (API v2010 "Message resource"): null until Twilio has priced the
 * message, some time after its final status; the price is written negative (money taken from the account), so its
 * absolute value is the cost. Pure.
 */
export function twilioResourcePrice(m: { price?: unknown; price_unit?: unknown }): PriceFetch {
  if (m.price === null || m.price === undefined || m.price === '') return { answer: 'not_yet' };
  const micros = typeof m.price === 'string' ? parseMicros(m.price) : typeof m.price === 'number' ? microsOfNumber(m.price) : null;
  const unit = typeof m.price_unit === 'string' ? m.price_unit.toUpperCase() : '';
  if (micros === null || !CURRENCY_PATTERN.test(unit))
    return { answer: 'failed', reason: `price ${JSON.stringify(m.price)} ${JSON.stringify(m.price_unit)} is not an amount in a currency` };
  return { answer: 'priced', price: { micros: micros < 0n ? -micros : micros, currency: unit } };
}

const LOOKUP_PAGE_SIZE = 100;

export const twilio: ProviderPlugin<typeof configSchema> = {
  type: 'twilio',
  configSchema,
  create(name, config: TwilioConfig, deps) {
    const pool = createProviderPool(config.base_url, config.max_concurrency ?? 64);
    const path = `/2010-04-01/Accounts/${encodeURIComponent(config.account_sid)}/Messages.json`;
    const headers = {
      authorization: `Basic ${Buffer.from(`${config.account_sid}:${config.auth_token}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    const getHeaders = { authorization: headers.authorization, accept: 'application/json' };
    const keys = { authToken: config.auth_token, sharedKeys: config.webhook_shared_keys, retries: config.status_callback_retries };

    /** Fetch by sid when the send's answer was recorded; else list by To and send date and match (twilioCandidates). */
    async function lookup(req: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
      try {
        if (req.providerMessageId) {
          const res = await pool.get(`${path.slice(0, -'.json'.length)}/${encodeURIComponent(req.providerMessageId)}.json`, getHeaders, signal);
          if (res.status === 404) return { answer: 'absent' };
          if (res.status !== 200) return { answer: 'unknown', reason: `fetch answered HTTP ${res.status}` };
          return foundMessage((res.json ?? {}) as TwilioMessage);
        }
        // No DateSent filter: a message still queued has no send date and would be missed. Newest first.
        const query = new URLSearchParams({ To: req.to, PageSize: String(LOOKUP_PAGE_SIZE) });
        const res = await pool.get(`${path}?${query.toString()}`, getHeaders, signal);
        if (res.status !== 200) return { answer: 'unknown', reason: `list answered HTTP ${res.status}` };
        const page = (res.json ?? {}) as { messages?: unknown; next_page_uri?: unknown };
        const messages = Array.isArray(page.messages) ? (page.messages as TwilioMessage[]) : [];
        const candidates = twilioCandidates(messages, req);
        if (candidates.length > 1) return { answer: 'unknown', reason: `${candidates.length} messages to this number in the send's window could be it` };
        if (candidates.length === 1) return foundMessage(candidates[0]!);
        // A further page may still hold messages from the send's window when this one ends after it began.
        const oldest =
          messages.length > 0 && typeof messages.at(-1)!.date_created === 'string' ? Date.parse(messages.at(-1)!.date_created as string) : Number.NaN;
        if (typeof page.next_page_uri === 'string' && page.next_page_uri && !(oldest < req.sentAfter - 1_000)) {
          return { answer: 'unknown', reason: 'more messages to this number since the send than one page' };
        }
        return { answer: 'absent' };
      } catch (error) {
        return lookupFailure(error);
      }
    }

    /** GET of the message by its sid: its price once Twilio has one (twilioResourcePrice). */
    async function fetchPrice(sid: string, signal: AbortSignal): Promise<PriceFetch> {
      try {
        const res = await pool.get(`${path.slice(0, -'.json'.length)}/${encodeURIComponent(sid)}.json`, getHeaders, signal);
        if (res.status !== 200) return { answer: 'failed', reason: `fetch answered HTTP ${res.status}` };
        return twilioResourcePrice((res.json ?? {}) as { price?: unknown; price_unit?: unknown });
      } catch (error) {
        return { answer: 'failed', reason: lookupFailure(error).reason };
      }
    }

    function formFor(req: SendRequest): string {
      const form = new URLSearchParams({ To: req.to });
      const from = req.from ?? config.from;
      if (from) form.set('From', from);
      if (config.messaging_service_sid) form.set('MessagingServiceSid', config.messaging_service_sid);
      form.set('Body', req.text);
      // The callback URL carries our sms_id, which the signature then covers (docs/providers.md §2.4).
      form.set('StatusCallback', statusCallbackWithRetries(req.callbackUrl, config.status_callback_retries));
      // Twilio's ValidityPeriod: seconds in its queue, 1 to 36000 (its Message resource; test/fakes/openapi/twilio.json).
      const left = validityLeft(req.validUntil, deps.now(), { minMs: 1_000, maxMs: 36_000_000 });
      const validity = left === undefined ? config.validity_period : Math.floor(left / 1_000);
      if (validity !== undefined) form.set('ValidityPeriod', String(validity));
      if (config.smart_encoded !== undefined) form.set('SmartEncoded', String(config.smart_encoded));
      return form.toString();
    }

    const failure = (kind: 'permanent' | 'transient', error: string, code: string, ambiguous?: boolean) => sendFailure('twilio', kind, error, code, ambiguous);

    return {
      name,
      type: 'twilio',
      // Every send names its own StatusCallback, `…/dlr/{name}?sms_id=…`, and Twilio signs the URL it calls.
      receiptsNameSmsId: true,
      async send(req: SendRequest, signal: AbortSignal): Promise<SendResult> {
        const posted = await postMessage({ type: 'twilio', pool, path, headers, body: formFor(req) }, signal, classifyTwilioFailure);
        if (!posted.ok) return posted.result;
        const { res } = posted;
        const body = res.json as { sid?: unknown; status?: unknown } | undefined;
        if (res.status >= 200 && res.status < 300 && typeof body?.sid === 'string') {
          return { ok: true, providerMessageIds: [body.sid], providerStatus: typeof body.status === 'string' ? body.status : undefined };
        }
        const { code, message } = readTwilioError(res.json);
        const kind = classifyTwilioFailure({ httpStatus: res.status, code });
        const meaning = code !== undefined ? ownValue(TWILIO_PERMANENT_CODES, code) : undefined;
        const detail = [meaning, message].filter(Boolean).join(': ') || res.text.slice(0, 200) || 'no body';
        const ambiguous = mayHaveCreated(res.status);
        const answer = <Extract<SendResult, { ok: false }>>(
          failure(kind, `HTTP ${res.status}${code !== undefined ? ` error ${code}` : ''} (${detail})`, String(code ?? `http_${res.status}`), ambiguous)
        );
        // The recipient replied STOP to this sender: the gateway opts the player out too (docs/providers.md §1.4).
        return code === TWILIO_OPTED_OUT_CODE ? { ...answer, recipientOptedOut: true } : answer;
      },

      parseReceipt(receipt: IncomingReceipt): ReceiptParse {
        const verified = verifyTwilioRequest(receipt, keys);
        if (!verified.ok) return verified;
        const { params } = verified;
        const providerStatus = firstValue(params.MessageStatus) ?? firstValue(params.SmsStatus);
        if (!providerStatus) return { ok: false, reason: 'MessageStatus is missing' };
        const status = mapTwilioStatus(providerStatus);
        if (status === 'ignore') return { ok: true, events: [] };
        if (!Object.hasOwn(TWILIO_STATUS_MAP, providerStatus.toLowerCase()))
          deps.logger.warn({ provider: name, providerStatus }, 'unknown Twilio MessageStatus; kept as intermediate');
        const errorCode = firstValue(params.ErrorCode);
        return {
          ok: true,
          events: [
            {
              smsId: receipt.query[CALLBACK_SMS_ID_PARAM] || undefined,
              providerMessageId: firstValue(params.MessageSid) ?? firstValue(params.SmsSid),
              providerStatus,
              status,
              ...(errorCode ? { errorCode } : {}),
            },
          ],
        };
      },

      parseInbound(request: IncomingReceipt): InboundParse {
        const verified = verifyTwilioRequest(request, keys);
        if (!verified.ok) return verified;
        const { params } = verified;
        // The Messaging webhook's fields (Twilio docs "TwiML for Programmable Messaging", request parameters).
        const sid = firstValue(params.MessageSid) ?? firstValue(params.SmsSid);
        const from = firstValue(params.From);
        const to = firstValue(params.To);
        if (!sid || !from || !to) return { ok: false, reason: 'MessageSid, From and To are required' };
        return { ok: true, message: { providerMessageId: sid, from, to, text: firstValue(params.Body) ?? '' } };
      },

      lookup,
      fetchPrice,

      // A status callback is a form of about fifteen short fields (docs/providers.md §2.1), well under 2 KB; a
      // player's message adds Body (at most 1,600 characters, docs/providers.md §1.1, up to 9 bytes each once
      // form-encoded) and up to ten media URLs. Anything larger is no webhook of Twilio's (docs/public-doors.md).
      callbackBodyLimit: { dlr: 8 * 1024, mo: 32 * 1024 },

      // Twilio reads the answer as TwiML: an empty Response sends no reply (Twilio answers STOP itself).
      inboundAnswer: { contentType: 'text/xml', body: '<?xml version="1.0" encoding="UTF-8"?><Response></Response>' },

      close: () => pool.close(),
    };
  },
};
