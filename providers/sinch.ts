/**
 * Sinch SMS REST API (XMS). Vendor docs on developers.sinch.com: "Batches" (send), "Delivery reports" (statuses
 * and codes) and "Webhooks" (callbacks).
 *
 * Send: a JSON POST to `{base_url}/xms/v1/{service_plan_id}/batches` with `Authorization: Bearer {api_token}`,
 * over a pooled undici client (no SDK); one recipient per batch, `delivery_report: per_recipient` so each status
 * change of the recipient is called back, our sms_id as `client_reference` and in `callback_url`. The 201 answer's
 * batch `id` is the provider message id. Receipts: `recipient_delivery_report_sms` JSON posts (and the batch report
 * `delivery_report_sms`, docs/providers.md §8.3). Sinch signs no SMS callback (its Webhooks page offers basic auth,
 * OAuth 2.0 or mTLS, set up per account by Sinch), so callback_url carries a token derived from `webhook_secret` (providers/kit/callback-token.ts), and when Sinch has been asked to add basic
 * auth, `webhook_basic_auth` makes the gateway require it too.
 * Lookup: "List Batches" filtered by `client_reference` (batches of the last 14 days), then "Retrieve a recipient
 * delivery report" for the batch found; a known batch id is asked directly.
 * Secrets to keep out of logs: api_token, webhook_secret, webhook_basic_auth.password.
 */
import { validityLeft } from './kit/validity.js';
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { tokenisedCallbackUrl, verifyCallbackToken } from './kit/callback-token.js';
import { createProviderPool, lookupFailure, mayHaveCreated, postMessage } from './kit/http-pool.js';
import { headerValue } from './kit/receipt-input.js';
import {
  providerCommonConfig,
  sendFailure,
  type IncomingReceipt,
  type LookupRequest,
  type LookupResult,
  type MappedStatus,
  type ProviderPlugin,
  type ReceiptParse,
  type SendRequest,
  type SendResult,
} from './types.js';

const configSchema = z.strictObject({
  type: z.literal('sinch'),
  ...providerCommonConfig,
  base_url: z.url().default('https://us.sms.api.sinch.com').describe("The region's API host (`https://eu.sms.api.sinch.com`, …)."),
  service_plan_id: z
    .string()
    .regex(/^[A-Za-z0-9]+$/, 'letters and digits only')
    .describe('The service plan.'),
  api_token: z.string().min(1).describe("The service plan's API token (Bearer)."),
  from: z.string().min(1).optional().describe('The sender when neither a country rule nor the CRM gives one.'),
  webhook_secret: z
    .string()
    .min(16, 'must be at least 16 characters')
    .describe('Key of the per-message token in each callback URL: Sinch signs no SMS callback, so without it none could be believed.'),
  webhook_basic_auth: z
    .strictObject({ username: z.string().min(1).describe('The user name.'), password: z.string().min(1).describe('The password.') })
    .optional()
    .describe('Credentials Sinch was asked to send with its callbacks; when set, callbacks without them are refused.'),
});
export type SinchConfig = z.infer<typeof configSchema>;

/** Delivery report status → CRM status (Sinch "Delivery reports": Queued and Dispatched are intermediate, the rest final). */
export const SINCH_STATUS_MAP: ReadonlyMap<string, MappedStatus> = new Map([
  ['Queued', 'intermediate'],
  ['Dispatched', 'intermediate'], // accepted by the SMSC, not yet on the handset
  ['Delivered', 'delivered'],
  ['Failed', 'undelivered'],
  ['Expired', 'undelivered'],
  ['Deleted', 'undelivered'], // a remote SMSC dropped it (invalid number or opted out)
  ['Rejected', 'failed'],
  ['Aborted', 'failed'], // never reached the SMSC
  ['Cancelled', 'failed'],
  ['Unknown', 'delivery_unknown'],
]);

/** Unknown statuses stay intermediate until the unknown-timeout sweep. */
export function mapSinchStatus(status: string): MappedStatus {
  return SINCH_STATUS_MAP.get(status) ?? 'intermediate';
}

export type SinchFailure = { httpStatus?: number; network?: string };

/**
 * Pure classification of a failed batch POST. 400 is the message's fault (permanent). 401/403/404 are our token,
 * permissions or service plan: nothing was sent and a fixed config makes a retry work. 429 is Sinch's rate limit
 * before acceptance. 5xx and network failures are transient (and may have sent: the caller says `ambiguous`).
 */
export function classifySinchFailure(failure: SinchFailure): 'permanent' | 'transient' {
  if (failure.network) return 'transient';
  const status = failure.httpStatus ?? 0;
  if (status >= 400 && status < 500) return SINCH_RETRYABLE_4XX.has(status) ? 'transient' : 'permanent';
  return 'transient';
}

/** 4xx answers that are not the message's fault: credentials, permissions, service plan, rate limit. */
const SINCH_RETRYABLE_4XX: ReadonlySet<number> = new Set([401, 403, 404, 429]);

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 && v.length <= 500 ? v : undefined);

/** How far back "List Batches" reaches (Sinch: batches created in the last 14 days). */
export const SINCH_BATCHES_KEPT_MS = 14 * 24 * 3_600_000;

/** One batch as "List Batches" answers it (the fields a lookup reads). */
export interface SinchListedBatch {
  id?: unknown;
  to?: unknown;
  client_reference?: unknown;
  canceled?: unknown;
}

/**
 * Which listed batches are this send: those carrying its sms_id as client_reference and going to its number (the
 * filter is Sinch's; it is checked again here so a looser match on their side cannot pass for ours).
 */
export function sinchBatchesFor(json: unknown, req: Pick<LookupRequest, 'smsId' | 'to'>): SinchListedBatch[] | undefined {
  const batches = (json as { batches?: unknown } | null | undefined)?.batches;
  if (!Array.isArray(batches)) return undefined;
  return (batches as Array<SinchListedBatch | null>).filter(
    (b): b is SinchListedBatch =>
      typeof b?.id === 'string' && b.client_reference === req.smsId && Array.isArray(b.to) && b.to.some((t) => t === req.to || `+${String(t)}` === req.to),
  );
}

/**
 * A found batch's status from its recipient delivery report: `report` is that answer's JSON, or undefined when
 * Sinch has none yet (HTTP 404: the batch is queued, or cancelled before it went out).
 */
export function sinchFoundAnswer(batchIds: string[], canceled: boolean, report: unknown): LookupResult {
  const r = (report ?? {}) as { status?: unknown; code?: unknown };
  const providerStatus = text(r.status) ?? (canceled ? 'Cancelled' : 'Queued');
  const status = mapSinchStatus(providerStatus);
  const errorCode = typeof r.code === 'number' && status !== 'delivered' && status !== 'intermediate' ? String(r.code) : undefined;
  return { answer: 'found', providerMessageIds: batchIds, providerStatus, status, ...(errorCode ? { errorCode } : {}) };
}

/** Batches per page asked for: a client_reference is one sms_id, so more than one match is already a duplicate. */
const LOOKUP_PAGE_SIZE = 10;

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const sinch: ProviderPlugin<typeof configSchema> = {
  type: 'sinch',
  configSchema,
  create(name, config: SinchConfig, deps) {
    const pool = createProviderPool(config.base_url, config.max_concurrency ?? 64);
    const path = `/xms/v1/${encodeURIComponent(config.service_plan_id)}/batches`;
    const headers = { authorization: `Bearer ${config.api_token}`, 'content-type': 'application/json', accept: 'application/json' };
    const expectedAuth = config.webhook_basic_auth
      ? `Basic ${Buffer.from(`${config.webhook_basic_auth.username}:${config.webhook_basic_auth.password}`).toString('base64')}`
      : undefined;
    const failure = (kind: 'permanent' | 'transient', error: string, code: string, ambiguous?: boolean) => sendFailure('sinch', kind, error, code, ambiguous);

    function bodyFor(req: SendRequest): string {
      const from = req.from ?? config.from;
      return JSON.stringify({
        to: [req.to],
        ...(from ? { from } : {}),
        body: req.text,
        delivery_report: 'per_recipient',
        // Sinch's expire_at: when it stops trying, at most 3 days after the send (its Batches API; test/fakes/openapi/sinch.json).
        ...(req.validUntil === undefined
          ? {}
          : { expire_at: new Date(deps.now() + validityLeft(req.validUntil, deps.now(), { minMs: 60_000, maxMs: 3 * 86_400_000 })!).toISOString() }),
        callback_url: tokenisedCallbackUrl(req.callbackUrl, config.webhook_secret, name, req.smsId),
        client_reference: req.smsId,
      });
    }

    const getHeaders = { authorization: headers.authorization, accept: 'application/json' };

    /** The batch's recipient delivery report: its JSON, undefined when there is none yet, or why it cannot be read. */
    async function recipientReport(batchId: string, to: string, signal: AbortSignal): Promise<{ json: unknown } | { unknown: string }> {
      const res = await pool.get(`${path}/${encodeURIComponent(batchId)}/delivery_report/${encodeURIComponent(to)}`, getHeaders, signal);
      if (res.status === 404) return { json: undefined };
      if (res.status !== 200) return { unknown: `delivery report answered HTTP ${res.status}` };
      return { json: res.json };
    }

    async function lookup(req: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
      try {
        if (req.providerMessageId) {
          const res = await pool.get(`${path}/${encodeURIComponent(req.providerMessageId)}`, getHeaders, signal);
          if (res.status === 404) return { answer: 'absent' };
          if (res.status !== 200) return { answer: 'unknown', reason: `batch answered HTTP ${res.status}` };
          const report = await recipientReport(req.providerMessageId, req.to, signal);
          if ('unknown' in report) return { answer: 'unknown', reason: report.unknown };
          return sinchFoundAnswer([req.providerMessageId], (res.json as { canceled?: unknown } | undefined)?.canceled === true, report.json);
        }
        // start_date defaults to a day ago: the send's window is given, a minute wider for clocks apart.
        const query = new URLSearchParams({
          client_reference: req.smsId,
          start_date: new Date(req.sentAfter - 60_000).toISOString(),
          page_size: String(LOOKUP_PAGE_SIZE),
        });
        const res = await pool.get(`${path}?${query.toString()}`, getHeaders, signal);
        if (res.status !== 200) return { answer: 'unknown', reason: `list answered HTTP ${res.status}` };
        const batches = sinchBatchesFor(res.json, req);
        if (!batches) return { answer: 'unknown', reason: 'list answer has no batches' };
        if (batches.length === 0) {
          if (deps.now() - req.sentAfter >= SINCH_BATCHES_KEPT_MS)
            return { answer: 'unknown', reason: 'no batch listed, and Sinch lists only the last 14 days' };
          return { answer: 'absent' };
        }
        const first = batches[0]!;
        const report = await recipientReport(String(first.id), req.to, signal);
        if ('unknown' in report) return { answer: 'unknown', reason: report.unknown };
        return sinchFoundAnswer(
          batches.map((b) => String(b.id)),
          first.canceled === true,
          report.json,
        );
      } catch (error) {
        return lookupFailure(error);
      }
    }

    return {
      name,
      type: 'sinch',
      // A report is taken only through the tokenised URL of its send, and its client_reference must be that sms_id.
      receiptsNameSmsId: true,
      async send(req: SendRequest, signal: AbortSignal): Promise<SendResult> {
        const posted = await postMessage({ type: 'sinch', pool, path, headers, body: bodyFor(req) }, signal, classifySinchFailure);
        if (!posted.ok) return posted.result;
        const { res } = posted;
        const body = res.json as { id?: unknown; code?: unknown; text?: unknown } | undefined;
        const batchId = text(body?.id);
        if (res.status >= 200 && res.status < 300 && batchId) return { ok: true, providerMessageIds: [batchId] };
        const code = text(body?.code);
        const detail = [code, text(body?.text)].filter(Boolean).join(': ') || res.text.slice(0, 200) || 'no body';
        return failure(
          classifySinchFailure({ httpStatus: res.status }),
          `HTTP ${res.status} (${detail})`,
          code ?? `http_${res.status}`,
          mayHaveCreated(res.status),
        );
      },

      // One recipient's delivery report (the URL's token vouches for one sms_id): a few hundred bytes of JSON.
      // Anything larger is no callback of Sinch's (docs/public-doors.md).
      callbackBodyLimit: { dlr: 8 * 1024, mo: 8 * 1024 },

      parseReceipt(receipt: IncomingReceipt): ReceiptParse {
        if (expectedAuth && !sameSecret(headerValue(receipt, 'authorization') ?? '', expectedAuth)) {
          return { ok: false, reason: 'Authorization does not carry webhook_basic_auth' };
        }
        const vouched = verifyCallbackToken(receipt, config.webhook_secret, name);
        if (!vouched.ok) return vouched;
        if (receipt.method !== 'POST' || !/^application\/json/i.test(receipt.contentType)) {
          return { ok: false, reason: `Sinch callbacks are JSON posts, got ${receipt.method} ${JSON.stringify(receipt.contentType)}` };
        }
        let body: unknown;
        try {
          body = JSON.parse(receipt.rawBody.toString('utf8'));
        } catch {
          return { ok: false, reason: 'body is not JSON' };
        }
        const report = (body ?? {}) as { type?: unknown; batch_id?: unknown; status?: unknown; code?: unknown; client_reference?: unknown; statuses?: unknown };
        // The document's deliveryReport webhook is the batch report (`delivery_report_sms`, statuses with counts), sent
        // when a batch asks for `summary` or `full` (or the account's default does); we ask for `per_recipient`, but a
        // batch of ours has one recipient, so a batch report with one status is that recipient's status.
        if (report.type === 'delivery_report_sms' || report.type === 'delivery_report_mms') {
          const statuses = Array.isArray(report.statuses) ? (report.statuses as Array<{ status?: unknown; code?: unknown } | null>) : [];
          if (statuses.length !== 1) return { ok: false, reason: `statuses: a batch report for one recipient has one status, got ${statuses.length}` };
          report.status = statuses[0]?.status;
          report.code = statuses[0]?.code;
        } else if (report.type !== 'recipient_delivery_report_sms' && report.type !== 'recipient_delivery_report_mms') {
          return { ok: false, reason: 'type: expected recipient_delivery_report_sms or delivery_report_sms' };
        }
        // The token vouches for one sms_id: a report naming another message is not believed.
        if (report.client_reference !== vouched.smsId) return { ok: false, reason: 'client_reference: is not the sms_id this callback URL was issued for' };
        const providerStatus = text(report.status);
        if (!providerStatus) return { ok: false, reason: 'status: is required' };
        const status = mapSinchStatus(providerStatus);
        if (!SINCH_STATUS_MAP.has(providerStatus)) deps.logger.warn({ provider: name, providerStatus }, 'unknown Sinch status; kept as intermediate');
        const errorCode = typeof report.code === 'number' && status !== 'delivered' && status !== 'intermediate' ? String(report.code) : undefined;
        return {
          ok: true,
          events: [{ smsId: vouched.smsId, providerMessageId: text(report.batch_id), providerStatus, status, ...(errorCode ? { errorCode } : {}) }],
        };
      },

      lookup,

      close: () => pool.close(),
    };
  },
};
