/**
 * Infobip SMS over HTTP, version 3 of its SMS API: "Send SMS message" (POST /sms/3/messages), "Get outbound SMS
 * message logs" (GET /sms/3/logs), the delivery-report webhook, and "Response status and error codes" on
 * infobip.com/docs. Infobip's OpenAPI document no longer lists the version 2 and 1 operations this plugin used
 * before (docs/providers.md §8.4).
 *
 * Send: a JSON POST with `Authorization: App {api_key}` over a pooled undici client (no SDK). Each message carries
 * our sms_id three times: as the destination's `messageId` (the API lets the client choose it, so Infobip's id for
 * the message is ours), as `webhooks.callbackData`, which Infobip echoes in every report, and in
 * `webhooks.delivery.url`, the report URL (with `webhooks.contentType: application/json`). The answer holds one entry per destination, with Infobip's
 * messageId and a first status; a REJECTED status there means it was refused before it went anywhere.
 * Receipts: JSON `{results: [...]}` posted to that URL. Infobip signs nothing per message, so the URL carries a
 * token derived from `webhook_secret` (providers/kit/callback-token.ts); a report is believed only for the sms_id its URL vouches
 * for, and its callbackData must name that same sms_id.
 * Lookup: "Get outbound SMS message logs" (GET /sms/3/logs?messageId=…) by that messageId; Infobip keeps logs 48 hours.
 * Secrets to keep out of logs: api_key, webhook_secret.
 */
import { validityLeft } from './kit/validity.js';
import { z } from 'zod';
import { tokenisedCallbackUrl, verifyCallbackToken } from './kit/callback-token.js';
import { createProviderPool, lookupFailure, mayHaveCreated, postMessage } from './kit/http-pool.js';
import {
  providerCommonConfig,
  sendFailure,
  type IncomingReceipt,
  type LookupRequest,
  type LookupResult,
  type MappedStatus,
  type ProviderPlugin,
  type ReceiptEvent,
  type ReceiptParse,
  type SendRequest,
  type SendResult,
  type ReportedPrice,
} from './types.js';
import { CURRENCY_PATTERN, microsOfNumber } from '../src/kit/money.js';

/**
 * The message's price from a delivery report: `price.pricePerMessage` (per SMS part) times the report's part count,
 * `messageCount` in version 3 of the SMS API and `smsCount` in version 2 (Infobip's "Receive outbound SMS message
 * reports" for each version), in `price.currency`. Absent when the report has no price or a part count it cannot read.
 */
export function infobipReportPrice(report: { price?: unknown; messageCount?: unknown; smsCount?: unknown }): ReportedPrice | undefined {
  const price = report.price as { pricePerMessage?: unknown; currency?: unknown } | undefined;
  if (!price || typeof price.pricePerMessage !== 'number' || typeof price.currency !== 'string' || !CURRENCY_PATTERN.test(price.currency)) return undefined;
  const perPart = microsOfNumber(price.pricePerMessage);
  const count = report.messageCount ?? report.smsCount ?? 1;
  if (perPart === null || perPart < 0n || typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1) return undefined;
  return { micros: perPart * BigInt(count), currency: price.currency };
}

const configSchema = z.strictObject({
  type: z.literal('infobip'),
  ...providerCommonConfig,
  base_url: z.url().default('https://api.infobip.com').describe("Your account's API host (`https://{id}.api.infobip.com`); the global host works too."),
  api_key: z.string().min(1).describe('The API key (`Authorization: App …`).'),
  from: z.string().min(1).optional().describe('The sender when neither a country rule nor the CRM gives one.'),
  webhook_secret: z
    .string()
    .min(16, 'must be at least 16 characters')
    .describe('Key of the per-message token in each report URL: Infobip signs no report, so without it none could be believed.'),
  validity_period_minutes: z.number().int().min(1).max(2880).optional().describe("Minutes Infobip keeps trying to deliver; unset: Infobip's 48 hours."),
});
export type InfobipConfig = z.infer<typeof configSchema>;

/**
 * Status names that do not follow their group's meaning. DELIVERED_TO_OPERATOR sits in the DELIVERED group, but
 * only the operator took it; the handset has not confirmed (Infobip's status table lists it as intermediate).
 * EXPIRED_DLR_UNKNOWN: sent, but the operator never reported, so the outcome is unknown rather than undelivered.
 */
export const INFOBIP_STATUS_NAMES: ReadonlyMap<string, MappedStatus> = new Map([
  ['DELIVERED_TO_HANDSET', 'delivered'],
  ['DELIVERED_TO_OPERATOR', 'intermediate'],
  ['EXPIRED_DLR_UNKNOWN', 'delivery_unknown'],
]);

/** Status group → CRM status: PENDING 1, UNDELIVERABLE 2, DELIVERED 3, EXPIRED 4, REJECTED 5 (ACCEPTED 0 on old accounts). */
export const INFOBIP_STATUS_GROUPS: ReadonlyMap<string, MappedStatus> = new Map([
  ['ACCEPTED', 'intermediate'],
  ['PENDING', 'intermediate'],
  ['UNDELIVERABLE', 'undelivered'],
  ['DELIVERED', 'delivered'],
  ['EXPIRED', 'undelivered'], // validity ran out without a delivery
  ['REJECTED', 'failed'],
]);

/** A report's status → CRM status; unknown names and groups stay intermediate until the unknown-timeout sweep. */
export function mapInfobipStatus(groupName: string, name: string): MappedStatus {
  return INFOBIP_STATUS_NAMES.get(name) ?? INFOBIP_STATUS_GROUPS.get(groupName) ?? 'intermediate';
}

/**
 * REJECTED statuses in the send answer that a retry can fix: nothing was sent, and the cause is the account or
 * Infobip's side, not the message (credit, a flooding filter, a route that is down, their own error).
 */
export const INFOBIP_TRANSIENT_REJECTIONS: ReadonlySet<string> = new Set([
  'REJECTED_NOT_ENOUGH_CREDITS',
  'REJECTED_PREPAID_PACKAGE_EXPIRED',
  'REJECTED_FLOODING_FILTER',
  'REJECTED_ROUTE_NOT_AVAILABLE',
  'REJECTED_SYSTEM_ERROR',
]);

export type InfobipFailure = { httpStatus?: number; rejection?: string; network?: string; ambiguous?: boolean };

/**
 * Pure classification of a failed send. HTTP 400 is the message's fault (permanent); 401/403 are our credentials
 * or permissions and 429 Infobip's rate limit: nothing was sent, a retry may work. 5xx and network failures are
 * transient (and may have sent, see `ambiguous` from the caller).
 */
export function classifyInfobipFailure(failure: InfobipFailure): 'permanent' | 'transient' {
  if (failure.network) return 'transient';
  if (failure.rejection !== undefined) return INFOBIP_TRANSIENT_REJECTIONS.has(failure.rejection) ? 'transient' : 'permanent';
  const status = failure.httpStatus ?? 0;
  if (status === 401 || status === 403 || status === 429 || status >= 500) return 'transient';
  if (status >= 400) return 'permanent';
  return 'transient'; // a 2xx we cannot read: the message may exist
}

type InfobipStatus = { groupName?: unknown; name?: unknown; description?: unknown };
const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 && v.length <= 500 ? v : undefined);

/** An error answer's words: the platform's ApiError (`errorCode`, `description`) or the older requestError.serviceException. */
function readServiceException(json: unknown): string | undefined {
  const body = json as
    | { errorCode?: unknown; description?: unknown; requestError?: { serviceException?: { messageId?: unknown; text?: unknown } } }
    | undefined;
  const e = body?.requestError?.serviceException;
  return [text(body?.errorCode) ?? text(e?.messageId), text(body?.description) ?? text(e?.text)].filter(Boolean).join(': ') || undefined;
}

/** How long Infobip keeps message logs ("Get outbound SMS message logs": the last 48 hours). */
export const INFOBIP_LOGS_KEPT_MS = 48 * 3_600_000;

/** A report's error as our error code: its name, or its id when unnamed; none for id 0 (NO_ERROR). */
function errorCodeOf(error: { id?: unknown; name?: unknown } | undefined): string | undefined {
  return typeof error?.id === 'number' && error.id !== 0 ? (text(error.name) ?? String(error.id)) : undefined;
}

/**
 * A message-logs answer (`{results: [...]}`) as a lookup's answer. `messageId` is the id we set at send (our sms_id)
 * or the one a status query knows; `sentAfter` is when the send began, `now` the present: an empty answer is
 * `absent` only while the logs still cover the send (INFOBIP_LOGS_KEPT_MS), `unknown` after.
 */
export function infobipLogsAnswer(json: unknown, messageId: string, sentAfter: number, now: number): LookupResult {
  const results = (json as { results?: unknown } | null | undefined)?.results;
  if (!Array.isArray(results)) return { answer: 'unknown', reason: 'logs answer has no results list' };
  const log = (results as Array<{ messageId?: unknown; status?: InfobipStatus; error?: { id?: unknown; name?: unknown } } | null>).find(
    (r) => r?.messageId === messageId,
  );
  if (!log) {
    if (now - sentAfter >= INFOBIP_LOGS_KEPT_MS)
      return { answer: 'unknown', reason: 'not in the message logs, which Infobip keeps 48 hours, and the send is older' };
    return { answer: 'absent' };
  }
  const groupName = text(log.status?.groupName) ?? '';
  const statusName = text(log.status?.name) ?? groupName;
  if (!statusName) return { answer: 'unknown', reason: 'the log of this message has no status' };
  const errorCode = errorCodeOf(log.error);
  return {
    answer: 'found',
    providerMessageIds: [messageId],
    providerStatus: statusName,
    status: mapInfobipStatus(groupName, statusName),
    ...(errorCode ? { errorCode } : {}),
  };
}

/** At most this many results per report request (Infobip's default bucket is 100; their maximum is far below). */
const MAX_RESULTS = 1_000;

export const infobip: ProviderPlugin<typeof configSchema> = {
  type: 'infobip',
  configSchema,
  create(name, config: InfobipConfig, deps) {
    const pool = createProviderPool(config.base_url, config.max_concurrency ?? 64);
    const headers = { authorization: `App ${config.api_key}`, 'content-type': 'application/json', accept: 'application/json' };
    const failure = (kind: 'permanent' | 'transient', error: string, code: string, ambiguous?: boolean) => sendFailure('infobip', kind, error, code, ambiguous);

    /** Infobip's validityPeriod: 1 minute to 48 hours (its SMS API; test/fakes/openapi/infobip.json ValidityPeriod). */
    function validityMinutes(req: SendRequest): number | undefined {
      const left = validityLeft(req.validUntil, deps.now(), { minMs: 60_000, maxMs: 2_880 * 60_000 });
      return left === undefined ? config.validity_period_minutes : Math.floor(left / 60_000);
    }

    function bodyFor(req: SendRequest): string {
      const from = req.from ?? config.from;
      return JSON.stringify({
        messages: [
          {
            ...(from ? { sender: from } : {}),
            // Our sms_id as Infobip's message id, so a lost send can be found in the message logs by it.
            destinations: [{ to: req.to.replace(/^\+/, ''), messageId: req.smsId }],
            content: { text: req.text },
            webhooks: {
              delivery: { url: tokenisedCallbackUrl(req.callbackUrl, config.webhook_secret, name, req.smsId) },
              contentType: 'application/json',
              callbackData: req.smsId,
            },
            ...(validityMinutes(req) ? { options: { validityPeriod: { amount: validityMinutes(req), timeUnit: 'MINUTES' } } } : {}),
          },
        ],
      });
    }

    /** The message logs by our messageId (a status query's known id when it has one: sends made before we set it). */
    async function lookup(req: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
      const messageId = req.providerMessageId ?? req.smsId;
      try {
        const res = await pool.get(
          `/sms/3/logs?${new URLSearchParams({ messageId }).toString()}`,
          { authorization: headers.authorization, accept: 'application/json' },
          signal,
        );
        if (res.status !== 200) return { answer: 'unknown', reason: `logs answered HTTP ${res.status}` };
        return infobipLogsAnswer(res.json, messageId, req.sentAfter, deps.now());
      } catch (error) {
        return lookupFailure(error);
      }
    }

    return {
      name,
      type: 'infobip',
      // A report is taken only through the tokenised URL of its send, and its callbackData must be that sms_id.
      receiptsNameSmsId: true,
      async send(req: SendRequest, signal: AbortSignal): Promise<SendResult> {
        const send = { type: 'infobip', pool, path: '/sms/3/messages', headers, body: bodyFor(req) };
        const posted = await postMessage(send, signal, classifyInfobipFailure);
        if (!posted.ok) return posted.result;
        const { res } = posted;
        if (res.status >= 200 && res.status < 300) {
          const entry = (res.json as { messages?: Array<{ messageId?: unknown; status?: InfobipStatus }> } | undefined)?.messages?.[0];
          const status = entry?.status;
          const statusName = text(status?.name);
          if (text(status?.groupName) === 'REJECTED' && statusName) {
            const kind = classifyInfobipFailure({ rejection: statusName });
            return failure(kind, `rejected: ${statusName}${text(status?.description) ? ` (${text(status?.description)})` : ''}`, statusName);
          }
          const messageId = text(entry?.messageId);
          if (messageId) return { ok: true, providerMessageIds: [messageId], providerStatus: statusName };
        }
        const detail = readServiceException(res.json) ?? (res.text.slice(0, 200) || 'no body');
        return failure(classifyInfobipFailure({ httpStatus: res.status }), `HTTP ${res.status} (${detail})`, `http_${res.status}`, mayHaveCreated(res.status));
      },

      // The URL is one message's (its token vouches for one sms_id), so a report holds that message's result: about
      // 1 KB of JSON. Anything larger is no report of Infobip's (docs/public-doors.md).
      callbackBodyLimit: { dlr: 16 * 1024, mo: 16 * 1024 },

      parseReceipt(receipt: IncomingReceipt): ReceiptParse {
        const vouched = verifyCallbackToken(receipt, config.webhook_secret, name);
        if (!vouched.ok) return vouched;
        if (receipt.method !== 'POST' || !/^application\/json/i.test(receipt.contentType)) {
          return { ok: false, reason: `Infobip reports are JSON posts, got ${receipt.method} ${JSON.stringify(receipt.contentType)}` };
        }
        let body: unknown;
        try {
          body = JSON.parse(receipt.rawBody.toString('utf8'));
        } catch {
          return { ok: false, reason: 'body is not JSON' };
        }
        const results = (body as { results?: unknown } | null)?.results;
        if (!Array.isArray(results) || results.length === 0 || results.length > MAX_RESULTS)
          return { ok: false, reason: `results: must be a list of 1 to ${MAX_RESULTS} reports` };
        const events: ReceiptEvent[] = [];
        for (const [i, raw] of results.entries()) {
          const r = (raw ?? {}) as {
            messageId?: unknown;
            callbackData?: unknown;
            status?: InfobipStatus;
            error?: { id?: unknown; name?: unknown };
            price?: unknown;
            messageCount?: unknown;
            smsCount?: unknown;
          };
          // The token vouches for one sms_id: a report about any other message in the same post is not believed.
          if (r.callbackData !== vouched.smsId) return { ok: false, reason: `results[${i}].callbackData: is not the sms_id this report URL was issued for` };
          const groupName = text(r.status?.groupName);
          const statusName = text(r.status?.name);
          if (!groupName || !statusName) return { ok: false, reason: `results[${i}].status: groupName and name are required` };
          const status = mapInfobipStatus(groupName, statusName);
          if (!INFOBIP_STATUS_NAMES.has(statusName) && !INFOBIP_STATUS_GROUPS.has(groupName))
            deps.logger.warn({ provider: name, groupName, statusName }, 'unknown Infobip status; kept as intermediate');
          const errorName = errorCodeOf(r.error);
          const price = infobipReportPrice(r);
          events.push({
            smsId: vouched.smsId,
            providerMessageId: text(r.messageId),
            providerStatus: statusName,
            status,
            ...(errorName ? { errorCode: errorName } : {}),
            ...(price ? { price } : {}),
          });
        }
        return { ok: true, events };
      },

      lookup,

      close: () => pool.close(),
    };
  },
};
