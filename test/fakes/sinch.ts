/**
 * A Sinch SMS REST API (XMS) fake speaking its wire format (developers.sinch.com "Batches", "Delivery reports",
 * "Webhooks"): `POST /xms/v1/{service_plan_id}/batches` with a Bearer token and a JSON batch; 201 with the batch
 * (its `id`), or `{code, text}` errors chosen by magic numbers. Callbacks are `recipient_delivery_report_sms` JSON
 * posts to the batch's callback_url, carrying its client_reference, optionally with basic auth. "List Batches"
 * (`GET …/batches?client_reference=…&start_date=…`) answers `{count, page, page_size, batches}`, "Get a batch"
 * (`GET …/batches/{id}`) the batch or 404, and "Retrieve a recipient delivery report"
 * (`GET …/batches/{id}/delivery_report/{msisdn}`) the recipient's latest status (Queued until a callback said more).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { readBody, sendJson, startFakeServer } from './http.js';

/** Answers by recipient. */
export const SINCH_MAGIC_NUMBERS: ReadonlyMap<string, { http: number; code: string; text: string }> = new Map([
  ['+15005550001', { http: 400, code: 'syntax_invalid_parameter_format', text: 'The recipient is not a valid phone number' }],
  ['+15005550403', { http: 403, code: 'unprovisioned_region', text: 'Region not provisioned for this service plan' }],
  ['+15005550429', { http: 429, code: 'too_many_requests', text: 'Too many requests' }],
  ['+15005550500', { http: 500, code: 'internal_error', text: 'Internal error' }],
]);

/** This recipient makes the fake hold the request without creating a batch: Sinch never got the message. */
export const SINCH_HANG_NUMBER = '+15005550666';

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
  /** Epoch ms of creation. */
  createdAt: number;
  /** The latest status called back for it (Queued until then). */
  status: string;
  /** expire_at as sent (ISO 8601), when it was. */
  expireAt?: string;
}

export interface SinchFake {
  url: string;
  servicePlanId: string;
  apiToken: string;
  batches: SinchBatch[];
  /** The recipient of every batch POST, created or not (a hanging one too). */
  posts: string[];
  /** Each lookup request: a list by client_reference, a batch fetched, a recipient report read. */
  lookups: Array<{ kind: 'list'; clientReference: string | null } | { kind: 'batch' | 'report'; batchId: string }>;
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
  /** Holds each answer this long after the batch is created (a caller that dies waiting has still sent it). */
  answerDelayMs?: number;
  /** The first this many batch POSTs are held like SINCH_HANG_NUMBER's: never created, never answered. */
  loseFirst?: number;
}

export async function startSinchFake(options: SinchFakeOptions = {}): Promise<SinchFake> {
  const servicePlanId = 'a1b2c3d4e5f6';
  const apiToken = 'sinch-test-token';
  const batches: SinchBatch[] = [];
  const callbacks: SinchFake['callbacks'] = [];
  const posts: string[] = [];
  const lookups: SinchFake['lookups'] = [];
  const auth: Record<string, string> = options.callbackAuth
    ? { authorization: `Basic ${Buffer.from(`${options.callbackAuth.username}:${options.callbackAuth.password}`).toString('base64')}` }
    : {};

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
    const called = batches.find((b) => b.id === body.batch_id);
    if (called && typeof body.status === 'string') called.status = body.status;
    return res.status;
  };

  const batchJson = (b: SinchBatch) => ({
    id: b.id,
    to: [b.to],
    from: b.from,
    canceled: false,
    body: b.body,
    type: 'mt_text',
    created_at: new Date(b.createdAt).toISOString(),
    modified_at: new Date(b.createdAt).toISOString(),
    delivery_report: 'per_recipient',
    callback_url: b.callbackUrl,
    client_reference: b.clientReference,
  });

  /** The GET operations a lookup uses; false for any other request. */
  function answerLookup(method: string, url: URL, res: ServerResponse): boolean {
    const base = `/xms/v1/${servicePlanId}/batches`;
    if (method !== 'GET' || !url.pathname.startsWith(base)) return false;
    const rest = url.pathname.slice(base.length);
    if (rest === '') {
      const clientReference = url.searchParams.get('client_reference');
      lookups.push({ kind: 'list', clientReference });
      // start_date defaults to a day ago (Sinch "List Batches").
      const startDate = url.searchParams.get('start_date');
      const since = startDate ? Date.parse(startDate) : Date.now() - 86_400_000;
      const page = Number(url.searchParams.get('page') ?? 0);
      const pageSize = Number(url.searchParams.get('page_size') ?? 30);
      const matching = batches.filter((b) => b.createdAt >= since && (clientReference === null || b.clientReference === clientReference)).reverse();
      sendJson(res, 200, { count: matching.length, page, page_size: pageSize, batches: matching.slice(page * pageSize, (page + 1) * pageSize).map(batchJson) });
      return true;
    }
    const one = /^\/([A-Z0-9]+)$/.exec(rest);
    const report = /^\/([A-Z0-9]+)\/delivery_report\/([^/]+)$/.exec(rest);
    const batchId = (one ?? report)?.[1];
    if (!batchId) return false;
    lookups.push({ kind: one ? 'batch' : 'report', batchId });
    const batch = batches.find((b) => b.id === batchId);
    const recipient = report ? decodeURIComponent(report[2]!) : undefined;
    if (!batch || (recipient !== undefined && recipient !== batch.to && `+${recipient}` !== batch.to)) {
      sendJson(res, 404, { code: 'not_found', text: `Batch ${batchId} not found` });
      return true;
    }
    sendJson(res, 200, one ? batchJson(batch) : recipientReport(batch));
    return true;
  }
  const recipientReport = (batch: SinchBatch) => ({
    type: 'recipient_delivery_report_sms',
    batch_id: batch.id,
    recipient: batch.to,
    code: CODES.get(batch.status) ?? 400,
    status: batch.status,
    at: new Date(batch.createdAt).toISOString(),
    client_reference: batch.clientReference,
  });

  const server = await startFakeServer(async (req, res) => {
    const raw = await readBody(req);
    if (req.headers.authorization !== `Bearer ${apiToken}` && req.method === 'GET') return sendJson(res, 401, { code: 'unauthorized', text: 'Unauthorized' });
    if (answerLookup(req.method ?? '', new URL(req.url ?? '/', 'http://fake'), res)) return;
    if (req.method !== 'POST' || req.url !== `/xms/v1/${servicePlanId}/batches`) return sendJson(res, 404, { code: 'not_found', text: 'Not found' });
    if (req.headers.authorization !== `Bearer ${apiToken}`) return sendJson(res, 401, { code: 'unauthorized', text: 'Unauthorized' });
    const body = JSON.parse(raw.toString('utf8')) as {
      to: string[];
      from?: string;
      body: string;
      callback_url: string;
      client_reference: string;
      delivery_report: string;
      expire_at?: string;
    };
    const to = body.to[0]!;
    posts.push(to);
    if (to === SINCH_HANG_NUMBER || posts.length <= (options.loseFirst ?? 0)) return; // never answers and never creates; the client's timeout must fire
    const canned = SINCH_MAGIC_NUMBERS.get(to);
    if (canned) return sendJson(res, canned.http, { code: canned.code, text: canned.text });
    const batch: SinchBatch = {
      id: randomBytes(13).toString('hex').toUpperCase(),
      to,
      from: body.from,
      body: body.body,
      callbackUrl: body.callback_url,
      clientReference: body.client_reference,
      createdAt: Date.now(),
      status: 'Queued',
      ...(body.expire_at === undefined ? {} : { expireAt: body.expire_at }),
    };
    batches.push(batch);
    if (options.answerDelayMs) await new Promise((resolve) => setTimeout(resolve, options.answerDelayMs));
    sendJson(res, 201, { ...batchJson(batch), to: body.to, delivery_report: body.delivery_report, callback_url: body.callback_url });
    if (options.callbackStatuses?.length) {
      void (async () => {
        for (const status of options.callbackStatuses!) await postCallback(batch.callbackUrl, report(batch, status));
      })().catch(() => undefined);
    }
  });

  return { url: server.url, servicePlanId, apiToken, batches, posts, lookups, callbacks, report, postCallback, close: () => server.close() };
}
