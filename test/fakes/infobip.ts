/**
 * An Infobip SMS fake speaking its wire format (infobip.com/docs "Send SMS message", "Receive outbound SMS message
 * report", "Response status and error codes"): `POST /sms/3/messages` (and the older `POST /sms/2/text/advanced`) with
 * `Authorization: App {key}` and a JSON body of messages and destinations; 200 with a PENDING_ACCEPTED status and a messageId per destination, or a
 * REJECTED status, or a `requestError.serviceException` body with an HTTP error, chosen by magic numbers. A
 * destination's own `messageId` is taken as the message's id, as Infobip does. Reports are JSON `{results: [...]}`
 * posts to each message's notifyUrl, carrying its callbackData. "Get outbound SMS message logs"
 * (`GET /sms/3/logs?messageId=…`, and the older `/sms/1/logs`) answers `{results: [...]}` with the accepted messages
 * of that id and their latest reported status (an empty list for an id it never accepted). Answers, logs and reports
 * have the fields of the API version the message was sent with (v3: `sender`, `destination`, `messageCount`).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson, startFakeServer } from './http.js';

type Canned = { http: 200; rejection: string } | { http: number; messageId: string; text: string };

/** Answers by destination (digits, as Infobip takes them). */
export const INFOBIP_MAGIC_NUMBERS: ReadonlyMap<string, Canned> = new Map<string, Canned>([
  ['15005550001', { http: 200, rejection: 'REJECTED_DESTINATION' }],
  ['15005550012', { http: 200, rejection: 'REJECTED_NOT_ENOUGH_CREDITS' }],
  ['15005550400', { http: 400, messageId: 'BAD_REQUEST', text: 'Bad request' }],
  ['15005550429', { http: 429, messageId: 'TOO_MANY_REQUESTS', text: 'Too many requests' }],
  ['15005550500', { http: 500, messageId: 'GENERAL_ERROR', text: 'Something went wrong' }],
]);

/** This destination makes the fake hold the request without accepting it: Infobip never got the message. */
export const INFOBIP_HANG_NUMBER = '15005550666';

const STATUSES: ReadonlyMap<string, { groupId: number; groupName: string; id: number; name: string; description: string }> = new Map([
  ['PENDING_ACCEPTED', { groupId: 1, groupName: 'PENDING', id: 26, name: 'PENDING_ACCEPTED', description: 'Message sent to next instance' }],
  ['DELIVERED_TO_OPERATOR', { groupId: 3, groupName: 'DELIVERED', id: 2, name: 'DELIVERED_TO_OPERATOR', description: 'Message delivered to operator' }],
  ['DELIVERED_TO_HANDSET', { groupId: 3, groupName: 'DELIVERED', id: 5, name: 'DELIVERED_TO_HANDSET', description: 'Message delivered to handset' }],
  [
    'UNDELIVERABLE_NOT_DELIVERED',
    { groupId: 2, groupName: 'UNDELIVERABLE', id: 9, name: 'UNDELIVERABLE_NOT_DELIVERED', description: 'Message sent not delivered' },
  ],
  ['EXPIRED_EXPIRED', { groupId: 4, groupName: 'EXPIRED', id: 15, name: 'EXPIRED_EXPIRED', description: 'Message expired' }],
  ['REJECTED_DESTINATION', { groupId: 5, groupName: 'REJECTED', id: 14, name: 'REJECTED_DESTINATION', description: 'Destination rejected' }],
  ['REJECTED_NOT_ENOUGH_CREDITS', { groupId: 5, groupName: 'REJECTED', id: 12, name: 'REJECTED_NOT_ENOUGH_CREDITS', description: 'Not enough credits' }],
]);

export interface InfobipSend {
  to: string;
  from?: string;
  text: string;
  notifyUrl: string;
  callbackData: string;
  /** Set once accepted: the destination's messageId when the request gave one, else one the fake made. */
  messageId?: string;
  /** The latest status reported for it (PENDING_ACCEPTED when accepted). */
  status?: string;
  /** The W3C traceparent header the gateway sent, if any (docs/tracing.md). */
  traceparent?: string;
  /** Epoch ms when the request arrived (tests count sends per second). */
  at: number;
  /** The send API's version: 3 for /sms/3/messages, 2 for /sms/2/text/advanced. */
  api: 2 | 3;
  /** The message's validity as asked for, in minutes (v2 `validityPeriod`, v3 `options.validityPeriod`). */
  validityMinutes?: number;
}

export interface InfobipFake {
  url: string;
  apiKey: string;
  sends: InfobipSend[];
  /** The most send requests the fake held open at once (with answerDelayMs). */
  maxInFlight: number;
  /** Reports posted by the fake, with the gateway's HTTP answer. */
  reports: Array<{ url: string; status: number }>;
  /** The messageId of each message-logs request. */
  logQueries: string[];
  /** One report result as Infobip writes it. */
  result(send: InfobipSend, statusName: string, overrides?: Record<string, unknown>): Record<string, unknown>;
  /** Posts `{results}` to `url` (default: the send's notifyUrl); answers the gateway's HTTP status. */
  postReport(url: string, results: Array<Record<string, unknown>>): Promise<number>;
  close(): Promise<void>;
}

export interface InfobipFakeOptions {
  apiKey?: string;
  /** Statuses reported to each accepted message's notifyUrl after the answer, in order. */
  reportStatuses?: string[];
  /**
   * Holds each send this long before answering, as a slow provider would (tests count requests in flight). The
   * message is accepted (in the logs) before the wait, so a caller that dies waiting has still sent it.
   */
  answerDelayMs?: number;
  /** The first this many send requests are held like INFOBIP_HANG_NUMBER's: never accepted, never answered. */
  loseFirst?: number;
}

export async function startInfobipFake(options: InfobipFakeOptions = {}): Promise<InfobipFake> {
  const apiKey = options.apiKey ?? 'infobip-test-key';
  const sends: InfobipSend[] = [];
  const reports: InfobipFake['reports'] = [];
  const logQueries: string[] = [];

  const result = (send: InfobipSend, statusName: string, overrides: Record<string, unknown> = {}) => ({
    bulkId: `bulk-${send.messageId}`,
    messageId: send.messageId,
    to: send.to,
    ...(send.api === 3 && send.from ? { sender: send.from } : {}),
    sentAt: '2026-11-24T04:00:00.000+0000',
    doneAt: '2026-11-24T04:00:02.000+0000',
    ...(send.api === 3 ? { messageCount: 1 } : { smsCount: 1 }),
    mccMnc: '23410',
    callbackData: send.callbackData,
    price: { pricePerMessage: 0.01, currency: 'EUR' },
    status: STATUSES.get(statusName) ?? { groupId: 1, groupName: 'PENDING', id: 7, name: statusName, description: '' },
    error: statusName.startsWith('UNDELIVERABLE')
      ? { groupId: 1, groupName: 'HANDSET_ERRORS', id: 27, name: 'EC_ABSENT_SUBSCRIBER', description: 'Absent subscriber', permanent: false }
      : { groupId: 0, groupName: 'OK', id: 0, name: 'NO_ERROR', description: 'No Error', permanent: false },
    ...overrides,
  });

  const postReport = async (url: string, results: Array<Record<string, unknown>>) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ results }) });
    await res.arrayBuffer();
    reports.push({ url, status: res.status });
    // The logs then show the latest status reported for each message.
    for (const r of results) {
      const name = (r.status as { name?: unknown } | undefined)?.name;
      const sent = sends.find((s) => s.messageId !== undefined && s.messageId === r.messageId);
      if (sent && typeof name === 'string') sent.status = name;
    }
    return res.status;
  };

  let inFlight = 0;
  const state = { maxInFlight: 0 };
  const server = await startFakeServer(async (req, res) => {
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    try {
      await answer(req, res);
    } finally {
      inFlight--;
    }
  });

  const unauthorized = (res: ServerResponse) =>
    sendJson(res, 401, { requestError: { serviceException: { messageId: 'UNAUTHORIZED', text: 'Invalid login details' } } });

  /** "Get outbound SMS message logs": the accepted messages of one messageId (the only filter the gateway uses). */
  function answerLogs(req: IncomingMessage, res: ServerResponse): void {
    if (req.headers.authorization !== `App ${apiKey}`) return unauthorized(res);
    const url = new URL(req.url ?? '/', 'http://fake');
    const messageId = url.searchParams.get('messageId');
    logQueries.push(messageId ?? '');
    const logged = sends.filter((s) => s.messageId !== undefined && (messageId === null || s.messageId === messageId));
    sendJson(res, 200, {
      results: logged.map((s) => {
        const { callbackData: _callbackData, to: _to, sender: _sender, ...log } = result(s, s.status ?? 'PENDING_ACCEPTED');
        const sentAt = new Date(s.at).toISOString().replace('Z', '+0000');
        return s.api === 3
          ? { ...log, sender: s.from, destination: s.to, content: { text: s.text }, sentAt }
          : { ...log, to: s.to, from: s.from, text: s.text, sentAt };
      }),
    });
  }

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    const body = await readBody(req);
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && (path === '/sms/3/logs' || path === '/sms/1/logs')) return answerLogs(req, res);
    if (req.method !== 'POST' || (req.url !== '/sms/3/messages' && req.url !== '/sms/2/text/advanced')) {
      if (options.answerDelayMs) await new Promise((resolve) => setTimeout(resolve, options.answerDelayMs));
      return sendJson(res, 404, { requestError: { serviceException: { messageId: 'NOT_FOUND', text: 'Not found' } } });
    }
    if (req.headers.authorization !== `App ${apiKey}`) return unauthorized(res);
    const api = req.url === '/sms/3/messages' ? 3 : 2;
    type V2 = {
      destinations: Array<{ to: string; messageId?: string }>;
      from?: string;
      text: string;
      notifyUrl: string;
      callbackData: string;
      validityPeriod?: number;
    };
    type V3 = {
      destinations: Array<{ to: string; messageId?: string }>;
      sender?: string;
      content: { text: string };
      webhooks?: { delivery?: { url?: string }; callbackData?: string };
      options?: { validityPeriod?: { amount: number; timeUnit?: string } };
    };
    const raw = (JSON.parse(body.toString('utf8')) as { messages: Array<V2 & V3> }).messages[0]!;
    const destination = raw.destinations[0]!;
    const to = destination.to;
    const validity = raw.options?.validityPeriod;
    const send: InfobipSend =
      api === 3
        ? {
            to,
            from: raw.sender,
            text: raw.content.text,
            notifyUrl: raw.webhooks?.delivery?.url ?? '',
            callbackData: raw.webhooks?.callbackData ?? '',
            at,
            api,
            ...(validity ? { validityMinutes: validity.amount * ({ SECONDS: 1 / 60, HOURS: 60 }[validity.timeUnit ?? ''] ?? 1) } : {}),
          }
        : {
            to,
            from: raw.from,
            text: raw.text,
            notifyUrl: raw.notifyUrl,
            callbackData: raw.callbackData,
            at,
            api,
            ...(raw.validityPeriod ? { validityMinutes: raw.validityPeriod } : {}),
          };
    if (typeof req.headers.traceparent === 'string') send.traceparent = req.headers.traceparent;
    sends.push(send);
    if (to === INFOBIP_HANG_NUMBER || sends.length <= (options.loseFirst ?? 0)) return; // never answers and never accepts; the client's timeout must fire
    const canned = INFOBIP_MAGIC_NUMBERS.get(to);
    if (!canned) {
      send.messageId = destination.messageId ?? randomUUID();
      send.status = 'PENDING_ACCEPTED';
    }
    if (options.answerDelayMs) await new Promise((resolve) => setTimeout(resolve, options.answerDelayMs));
    if (canned && 'rejection' in canned) {
      return sendJson(res, 200, {
        bulkId: randomUUID(),
        messages: [{ [api === 3 ? 'destination' : 'to']: to, status: STATUSES.get(canned.rejection), messageId: destination.messageId ?? randomUUID() }],
      });
    }
    if (canned) {
      // v3 answers errors in the platform's ApiError shape; v2 in requestError.serviceException.
      const error =
        api === 3
          ? { errorCode: canned.messageId, description: canned.text, action: 'Check the request.', violations: [], resources: [] }
          : { requestError: { serviceException: { messageId: canned.messageId, text: canned.text } } };
      return sendJson(res, canned.http, error);
    }
    sendJson(res, 200, {
      bulkId: randomUUID(),
      messages: [{ [api === 3 ? 'destination' : 'to']: to, status: STATUSES.get('PENDING_ACCEPTED'), messageId: send.messageId }],
    });
    if (options.reportStatuses?.length) {
      void (async () => {
        for (const status of options.reportStatuses!) await postReport(send.notifyUrl, [result(send, status)]);
      })().catch(() => undefined);
    }
  }

  return {
    url: server.url,
    apiKey,
    sends,
    get maxInFlight() {
      return state.maxInFlight;
    },
    reports,
    logQueries,
    result,
    postReport,
    close: () => server.close(),
  };
}
