/**
 * A Twilio Programmable Messaging fake that speaks the wire format (docs/providers.md §1.1, §1.4, §2, §6):
 * `POST /2010-04-01/Accounts/:sid/Messages.json` with Basic auth and a form body, 201 JSON on success
 * (`num_segments` as a string), legacy `{code, message, more_info, status}` error bodies chosen by magic To
 * numbers, and status callbacks signed with the twilio package's own getExpectedTwilioSignature.
 */
import { randomBytes } from 'node:crypto';
import { getExpectedBodyHash, getExpectedTwilioSignature, SIGNATURE_SETTINGS_HEADER } from 'twilio/lib/webhooks/webhooks.js';
import { basicCredentials, readBody, sendJson, startFakeServer } from './http.js';

type CannedError = { http: number; code?: number; message: string; rfc9457?: boolean; plainText?: boolean };
/** 'accepted-then-500': the message is created (and its callbacks posted) but the answer is a 500, as in an outage. */
type Canned = CannedError | 'hang' | 'reset' | 'accepted-then-500';

/**
 * Answers by To number. The first five are Twilio's documented test numbers (docs/providers.md §1.4, from memory
 * there); the rest are this fake's own, for the transient classes.
 */
export const TWILIO_MAGIC_NUMBERS: Readonly<Record<string, Canned>> = {
  '+15005550001': { http: 400, code: 21211, message: "The 'To' number is not a valid phone number." },
  '+15005550002': { http: 400, code: 21612, message: "The 'To' phone number is not currently reachable via SMS." },
  '+15005550003': { http: 400, code: 21408, message: 'Permission to send an SMS has not been enabled for the region.' },
  '+15005550004': { http: 400, code: 21610, message: 'Attempt to send to unsubscribed recipient' },
  '+15005550009': { http: 400, code: 21614, message: "'To' number is not a valid mobile number" },
  '+15005550010': { http: 400, code: 21211, message: 'Invalid To number', rfc9457: true },
  '+15005550429': { http: 429, code: 20429, message: 'Too Many Requests' },
  '+15005551611': { http: 400, code: 21611, message: 'This From number has exceeded the maximum number of queued messages' },
  '+15005550500': { http: 500, code: 20500, message: 'Internal Server Error' },
  '+15005550503': { http: 503, message: 'Service Unavailable', plainText: true },
  '+15005550502': 'accepted-then-500',
  '+15005550666': 'hang',
  '+15005550999': 'reset',
};

export interface TwilioCreateCall {
  accountSid: string;
  form: Record<string, string>;
  /** The sid answered, when the create succeeded. */
  sid?: string;
  /** When Twilio created it (epoch ms), and its status as the Message resource shows it now. */
  createdAt?: number;
  status?: string;
}

export interface TwilioFakeOptions {
  accountSid?: string;
  authToken?: string;
  /** Statuses posted to each created message's StatusCallback, in order (none by default). */
  callbackStatuses?: string[];
  /** Post those callbacks before answering the create call (a receipt that beats the provider's answer). */
  callbacksBeforeAnswer?: boolean;
  /** Awaited just before a successful create is answered (a test holds the answer back while it prepares something). */
  beforeAnswer?: (create: TwilioCreateCall) => Promise<void> | void;
  /** Milliseconds between creating a message and answering the create call (a kill can fall in between). */
  answerDelayMs?: number;
  /** The first this many create calls are held and never answered, and create nothing (a request lost on the way). */
  loseFirst?: number;
  /** Milliseconds between a failed status callback and its retry (Twilio retries per the URL's `#rc=` override). */
  callbackRetryDelayMs?: number;
  /** How the webhooks this fake posts are signed (default: Twilio's account signature over the URL without fragment). */
  signing?: TwilioSigning;
  /**
   * Where a webhook URL is actually posted (a load balancer in front of the gateway): the URL Twilio was given is
   * what it signs, this is where the request goes. Default: the URL itself.
   */
  deliverTo?: (url: string) => string;
  port?: number;
  /**
   * The Message resource's price once Twilio has priced it (written negative, as Twilio writes it), after this many
   * fetches of the message answered it null (0: at once). Default: never priced (null).
   */
  price?: { value: string; unit: string; afterFetches?: number };
}

/** The readings of Twilio's documents a signature can follow; each is something Twilio's docs or SDK allow. */
export interface TwilioSigning {
  /** Sign the URL with its fragment (`#rc=…&rp=all`), as given; the fragment is never sent. */
  fragment?: boolean;
  /** Sign the URL with the scheme's default port written in (`:443`, `:80`) when it has none. */
  defaultPort?: boolean;
  /** A Webhooks Rule matched the URL: sign with its SharedKey and say so in X-Twilio-Webhooks-Signature-Settings. */
  sharedKey?: { id: string; secret: string; algorithm?: 'HMAC_SHA1' | 'HMAC_SHA256' };
  /** Post the fields as a JSON body, with `bodySHA256` (hex SHA-256 of the body) added to the URL's query. */
  json?: boolean;
}

/** `url` with the scheme's default port written in when it names none. */
export function withDefaultPort(url: string): string {
  return url.replace(
    /^(https?):\/\/([^/?#:]+)(?=[/?#]|$)/i,
    (_m, scheme: string, host: string) => `${scheme}://${host}:${scheme.toLowerCase() === 'https' ? 443 : 80}`,
  );
}

export interface TwilioFake {
  url: string;
  accountSid: string;
  authToken: string;
  /** Every create call that passed authentication, in arrival order. */
  creates: TwilioCreateCall[];
  /** Status callbacks posted by the fake, with the gateway's HTTP answer (0: no connection). */
  callbacks: Array<{ url: string; params: Record<string, string>; status: number }>;
  /** Lookups answered: the list (by To) and fetch (by sid) calls of the Message resource. */
  lookups: Array<{ kind: 'list' | 'fetch'; to?: string; sid?: string }>;
  /** Posts a status callback signed with `signingToken` (default: the account's auth token). */
  postStatusCallback(url: string, params: Record<string, string>, signingToken?: string): Promise<number>;
  /**
   * Posts an inbound SMS the way Twilio's Messaging webhook does (form fields of "TwiML for Programmable
   * Messaging"), signed with `signingToken` (default: the account's auth token; null: unsigned).
   */
  postInbound(
    url: string,
    message: { from: string; to: string; body: string; sid?: string },
    signingToken?: string | null,
  ): Promise<{ status: number; contentType: string; text: string }>;
  /** The form fields Twilio sends in a status callback for `create`. */
  callbackParams(create: TwilioCreateCall, status: string, errorCode?: string): Record<string, string>;
  close(): Promise<void>;
}

export const randomSid = (prefix: string) => prefix + randomBytes(16).toString('hex');

export async function startTwilioFake(options: TwilioFakeOptions = {}): Promise<TwilioFake> {
  const accountSid = options.accountSid ?? randomSid('AC');
  const authToken = options.authToken ?? randomBytes(16).toString('hex');
  const creates: TwilioCreateCall[] = [];
  const callbacks: TwilioFake['callbacks'] = [];
  const pendingCallbacks = new Set<Promise<unknown>>();

  const callbackParams: TwilioFake['callbackParams'] = (create, status, errorCode) => ({
    MessageSid: create.sid ?? '',
    SmsSid: create.sid ?? '',
    AccountSid: create.accountSid,
    MessageStatus: status,
    SmsStatus: status,
    From: create.form.From ?? '',
    To: create.form.To ?? '',
    ApiVersion: '2010-04-01',
    // Twilio sends ErrorCode on failed/undelivered and may send it empty otherwise (docs/providers.md §2.1).
    ErrorCode: errorCode ?? (status === 'undelivered' || status === 'failed' ? '30003' : ''),
    ...(status === 'delivered' ? { RawDlrDoneDate: '2611230412' } : {}),
  });

  /**
   * One webhook as Twilio makes it from the URL it was given: where it goes (no fragment, ever), its body, and its
   * headers, signed by options.signing with twilio-node's own getExpectedTwilioSignature.
   */
  function signedRequest(givenUrl: string, params: Record<string, string>, signingToken: string | null) {
    const signing = options.signing ?? {};
    const hash = givenUrl.indexOf('#');
    let bare = hash === -1 ? givenUrl : givenUrl.slice(0, hash);
    const fragment = hash === -1 ? '' : givenUrl.slice(hash);
    const body = signing.json ? JSON.stringify(params) : new URLSearchParams(params).toString();
    if (signing.json) bare += `${bare.includes('?') ? '&' : '?'}bodySHA256=${getExpectedBodyHash(body)}`;
    let signedUrl = signing.fragment ? bare + fragment : bare;
    if (signing.defaultPort) signedUrl = withDefaultPort(signedUrl);
    const headers: Record<string, string> = { 'content-type': signing.json ? 'application/json' : 'application/x-www-form-urlencoded' };
    if (signingToken !== null) {
      const shared = signing.sharedKey;
      const key = shared && signingToken === authToken ? shared.secret : signingToken;
      const algorithm = shared ? (shared.algorithm ?? 'HMAC_SHA256') : 'HMAC_SHA1';
      headers['x-twilio-signature'] = getExpectedTwilioSignature(key, signedUrl, signing.json ? {} : params, algorithm);
      if (shared) headers[SIGNATURE_SETTINGS_HEADER.toLowerCase()] = `key=${shared.id},algorithm=${algorithm}`;
    }
    return { target: options.deliverTo ? options.deliverTo(bare) : bare, body, headers };
  }

  /**
   * Posts like Twilio: the URL's fragment (connection overrides, `#rc=3&rp=all`) is not sent (signed or not as
   * options.signing says); `rc`
   * failed attempts (no connection, or a 5xx) are retried, within Twilio's 15 s for one callback.
   */
  async function postStatusCallback(fullUrl: string, params: Record<string, string>, signingToken = authToken): Promise<number> {
    const [url, fragment = ''] = fullUrl.split('#') as [string, string?];
    const request = signedRequest(fullUrl, params, signingToken);
    // The Message resource shows the status it last called back.
    const created = creates.find((c) => c.sid !== undefined && c.sid === params.MessageSid);
    if (created && params.MessageStatus) created.status = params.MessageStatus;
    const overrides = new URLSearchParams(fragment);
    const retries = Math.min(5, Number(overrides.get('rc') ?? 0) || 0);
    const deadline = Date.now() + 15_000;
    for (let attempt = 0; ; attempt++) {
      let status = 0;
      try {
        const res = await fetch(request.target, { method: 'POST', headers: request.headers, body: request.body });
        await res.arrayBuffer();
        status = res.status;
      } catch {
        status = 0;
      }
      callbacks.push({ url, params, status });
      if ((status !== 0 && status < 500) || attempt >= retries || Date.now() >= deadline) {
        if (status === 0) throw new Error(`status callback to ${url}: no connection`);
        return status;
      }
      await new Promise((resolve) => setTimeout(resolve, options.callbackRetryDelayMs ?? 200));
    }
  }

  async function postInbound(url: string, message: { from: string; to: string; body: string; sid?: string }, signingToken: string | null = authToken) {
    const params: Record<string, string> = {
      ToCountry: 'GB',
      SmsMessageSid: message.sid ?? randomSid('SM'),
      NumMedia: '0',
      SmsSid: message.sid ?? '',
      SmsStatus: 'received',
      Body: message.body,
      To: message.to,
      NumSegments: '1',
      MessageSid: message.sid ?? '',
      AccountSid: accountSid,
      From: message.from,
      ApiVersion: '2010-04-01',
    };
    params.SmsSid = params.MessageSid = params.SmsMessageSid!;
    const request = signedRequest(url, params, signingToken);
    const res = await fetch(request.target, { method: 'POST', headers: request.headers, body: request.body });
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
  }

  const lookups: TwilioFake['lookups'] = [];
  const fetchesOf = (sid: string | undefined) => lookups.filter((l) => l.kind === 'fetch' && l.sid === sid).length;
  const priced = (c: TwilioCreateCall) => options.price !== undefined && fetchesOf(c.sid) > (options.price.afterFetches ?? 0);
  const resource = (c: TwilioCreateCall) => ({
    sid: c.sid,
    account_sid: accountSid,
    to: c.form.To,
    from: c.form.From ?? null,
    body: c.form.Body,
    status: c.status,
    direction: 'outbound-api',
    date_created: new Date(c.createdAt!).toUTCString().replace('GMT', '+0000'),
    error_code: c.status === 'undelivered' || c.status === 'failed' ? 30003 : null,
    api_version: '2010-04-01',
    num_segments: '1',
    price: priced(c) ? options.price!.value : null,
    price_unit: options.price?.unit ?? 'USD',
  });

  /** The Message resource's list (filtered by To, newest first, PageSize) and fetch calls. */
  function answerLookup(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://fake');
    const list = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(url.pathname);
    const fetchOne = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/(SM[0-9a-f]{32})\.json$/.exec(url.pathname);
    if (req.method !== 'GET' || (!list && !fetchOne)) return false;
    const auth = basicCredentials(req.headers.authorization);
    if (!auth || auth.user !== accountSid || auth.password !== authToken || (list ?? fetchOne)![1] !== accountSid) {
      sendJson(res, 401, { code: 20003, message: 'Authenticate', more_info: 'https://www.twilio.com/docs/errors/20003', status: 401 });
      return true;
    }
    const made = creates.filter((c) => c.sid !== undefined);
    if (fetchOne) {
      lookups.push({ kind: 'fetch', sid: fetchOne[2] });
      const found = made.find((c) => c.sid === fetchOne[2]);
      if (!found)
        sendJson(res, 404, {
          code: 20404,
          message: `The requested resource /2010-04-01/Accounts/${accountSid}/Messages/${fetchOne[2]}.json was not found`,
          more_info: 'https://www.twilio.com/docs/errors/20404',
          status: 404,
        });
      else sendJson(res, 200, resource(found));
      return true;
    }
    const to = url.searchParams.get('To') ?? undefined;
    lookups.push({ kind: 'list', to });
    const pageSize = Math.min(1000, Number(url.searchParams.get('PageSize') ?? 50) || 50);
    const matching = made.filter((c) => to === undefined || c.form.To === to).reverse();
    const page = matching.slice(0, pageSize);
    sendJson(res, 200, {
      messages: page.map(resource),
      page: 0,
      page_size: pageSize,
      start: 0,
      end: Math.max(0, page.length - 1),
      first_page_uri: url.pathname + url.search,
      previous_page_uri: null,
      next_page_uri: matching.length > pageSize ? `${url.pathname}?To=${encodeURIComponent(to ?? '')}&PageSize=${pageSize}&Page=1` : null,
      uri: url.pathname + url.search,
    });
    return true;
  }

  const server = await startFakeServer(async (req, res) => {
    if (answerLookup(req, res)) return;
    const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(req.url ?? '');
    const body = await readBody(req);
    if (req.method !== 'POST' || !match) return sendJson(res, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    const auth = basicCredentials(req.headers.authorization);
    if (!auth || auth.user !== accountSid || auth.password !== authToken || match[1] !== accountSid) {
      return sendJson(res, 401, { code: 20003, message: 'Authenticate', more_info: 'https://www.twilio.com/docs/errors/20003', status: 401 });
    }
    const form = Object.fromEntries(new URLSearchParams(body.toString('utf8')));
    const create: TwilioCreateCall = { accountSid: match[1]!, form };
    creates.push(create);
    const canned = TWILIO_MAGIC_NUMBERS[form.To ?? ''];
    if (canned === 'hang' || creates.length <= (options.loseFirst ?? 0)) return; // never answers; the client's timeout must fire
    if (canned === 'reset') return void req.socket.destroy();
    if (canned && canned !== 'accepted-then-500') return answerError(res, canned);
    if (!form.To || !form.Body || (!form.From && !form.MessagingServiceSid)) {
      return sendJson(res, 400, { code: 21604, message: 'A To, Body and From or MessagingServiceSid are required', status: 400 });
    }
    create.sid = randomSid('SM');
    create.createdAt = Date.now();
    create.status = form.MessagingServiceSid ? 'accepted' : 'queued';
    const segments = form.Body.length <= 160 ? 1 : Math.ceil(form.Body.length / 153);
    const statuses = options.callbackStatuses ?? [];
    const postCallbacks = async (url: string) => {
      for (const status of statuses) {
        await postStatusCallback(url, callbackParams(create, status)).catch(() => 0);
      }
    };
    if (options.callbacksBeforeAnswer && form.StatusCallback) await postCallbacks(form.StatusCallback);
    await options.beforeAnswer?.(create);
    if (options.answerDelayMs) await new Promise((resolve) => setTimeout(resolve, options.answerDelayMs));
    if (canned === 'accepted-then-500') answerError(res, { http: 500, code: 20500, message: 'Internal Server Error' });
    else
      sendJson(res, 201, {
        sid: create.sid,
        account_sid: accountSid,
        status: form.MessagingServiceSid ? 'accepted' : 'queued',
        num_segments: form.MessagingServiceSid ? '0' : String(segments),
        to: form.To,
        from: form.From ?? null,
        body: form.Body,
        direction: 'outbound-api',
        error_code: null,
        error_message: null,
        api_version: '2010-04-01',
      });
    if (!options.callbacksBeforeAnswer && statuses.length > 0 && form.StatusCallback) {
      const p = postCallbacks(form.StatusCallback).finally(() => pendingCallbacks.delete(p));
      pendingCallbacks.add(p);
    }
  }, options.port);

  return {
    url: server.url,
    accountSid,
    authToken,
    creates,
    callbacks,
    lookups,
    postStatusCallback,
    postInbound,
    callbackParams,
    async close() {
      await Promise.allSettled([...pendingCallbacks]);
      await server.close();
    },
  };
}

function answerError(res: import('node:http').ServerResponse, canned: CannedError): void {
  if (canned.plainText) {
    res.writeHead(canned.http, { 'content-type': 'text/plain' });
    return void res.end(canned.message);
  }
  if (canned.rfc9457) {
    return sendJson(res, canned.http, {
      type: `https://www.twilio.com/docs/errors/${canned.code}`,
      title: canned.message,
      status: canned.http,
      code: canned.code,
      detail: canned.message,
    });
  }
  sendJson(res, canned.http, {
    code: canned.code,
    message: canned.message,
    more_info: `https://www.twilio.com/docs/errors/${canned.code}`,
    status: canned.http,
  });
}
