/**
 * A Sinch SMS REST API (XMS) fake speaking its wire format (developers.sinch.com "Batches", "Delivery reports",
 * "Webhooks"): `POST /xms/v1/{service_plan_id}/batches` with a Bearer token and a JSON batch; 201 with the batch
 * (its `id`), or `{code, text}` errors chosen by magic numbers. Callbacks are `recipient_delivery_report_sms` JSON
 * posts to the batch's callback_url, carrying its client_reference, optionally with basic auth.
 */
import { randomBytes } from 'node:crypto';
import { readBody, sendJson, startFakeServer } from './http.js';

/** Answers by recipient. */
export const SINCH_MAGIC_NUMBERS: ReadonlyMap<string, { http: number; code: string; text: string }> = new Map([
  ['+15005550001', { http: 400, code: 'syntax_invalid_parameter_format', text: 'The recipient is not a valid phone number' }],
  ['+15005550403', { http: 403, code: 'unprovisioned_region', text: 'Region not provisioned for this service plan' }],
  ['+15005550429', { http: 429, code: 'too_many_requests', text: 'Too many requests' }],
  ['+15005550500', { http: 500, code: 'internal_error', text: 'Internal error' }],
]);

/** Delivery report codes per status (Sinch "Delivery reports", error codes table). */
const CODES: ReadonlyMap<string, number> = new Map([
  ['Queued', 400],
  ['Dispatched', 401],
  ['Delivered', 0],
  ['Failed', 404],
  ['Rejected', 408],
  ['Expired', 406],
]);

export interface SinchBatch {
  id: string;
  to: string;
  from?: string;
  body: string;
  callbackUrl: string;
  clientReference: string;
}

export interface SinchFake {
  url: string;
  servicePlanId: string;
  apiToken: string;
  batches: SinchBatch[];
  /** Callbacks posted by the fake, with the gateway's HTTP answer. */
  callbacks: Array<{ url: string; status: number }>;
  report(batch: SinchBatch, status: string, overrides?: Record<string, unknown>): Record<string, unknown>;
  postCallback(url: string, report: Record<string, unknown>, headers?: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

export interface SinchFakeOptions {
  /** Statuses called back for each accepted batch after the answer, in order. */
  callbackStatuses?: string[];
  /** Basic auth the fake adds to its callbacks (Sinch sets this up per account on request). */
  callbackAuth?: { username: string; password: string };
}

export async function startSinchFake(options: SinchFakeOptions = {}): Promise<SinchFake> {
  const servicePlanId = 'a1b2c3d4e5f6';
  const apiToken = 'sinch-test-token';
  const batches: SinchBatch[] = [];
  const callbacks: SinchFake['callbacks'] = [];
  const auth: Record<string, string> = options.callbackAuth ? { authorization: `Basic ${Buffer.from(`${options.callbackAuth.username}:${options.callbackAuth.password}`).toString('base64')}` } : {};

  const report = (batch: SinchBatch, status: string, overrides: Record<string, unknown> = {}) => ({
    type: 'recipient_delivery_report_sms',
    batch_id: batch.id,
    recipient: batch.to,
    code: CODES.get(status) ?? 400,
    status,
    at: '2026-11-24T04:00:02.000Z',
    operator_status_at: '2026-11-24T04:00:01.000Z',
    client_reference: batch.clientReference,
    ...overrides,
  });

  const postCallback = async (url: string, body: Record<string, unknown>, headers: Record<string, string> = auth) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    await res.arrayBuffer();
    callbacks.push({ url, status: res.status });
    return res.status;
  };

  const server = await startFakeServer(async (req, res) => {
    const raw = await readBody(req);
    if (req.method !== 'POST' || req.url !== `/xms/v1/${servicePlanId}/batches`) return sendJson(res, 404, { code: 'not_found', text: 'Not found' });
    if (req.headers.authorization !== `Bearer ${apiToken}`) return sendJson(res, 401, { code: 'unauthorized', text: 'Unauthorized' });
    const body = JSON.parse(raw.toString('utf8')) as { to: string[]; from?: string; body: string; callback_url: string; client_reference: string; delivery_report: string };
    const to = body.to[0]!;
    const canned = SINCH_MAGIC_NUMBERS.get(to);
    if (canned) return sendJson(res, canned.http, { code: canned.code, text: canned.text });
    const batch: SinchBatch = { id: randomBytes(13).toString('hex').toUpperCase(), to, from: body.from, body: body.body, callbackUrl: body.callback_url, clientReference: body.client_reference };
    batches.push(batch);
    sendJson(res, 201, {
      id: batch.id, to: body.to, from: body.from, canceled: false, body: body.body, type: 'mt_text',
      created_at: '2026-11-24T04:00:00.000Z', modified_at: '2026-11-24T04:00:00.000Z',
      delivery_report: body.delivery_report, callback_url: body.callback_url, client_reference: body.client_reference,
    });
    if (options.callbackStatuses?.length) {
      void (async () => {
        for (const status of options.callbackStatuses!) await postCallback(batch.callbackUrl, report(batch, status));
      })().catch(() => undefined);
    }
  });

  return { url: server.url, servicePlanId, apiToken, batches, callbacks, report, postCallback, close: () => server.close() };
}
