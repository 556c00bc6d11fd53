/**
 * The provider callbacks' door (src/http/provider-callback.ts) against forged callbacks
 * (docs/public-doors.md), on the real server: a body larger than the provider sends is refused unread, a signature
 * that cannot be the provider's is refused before any HMAC, failed signatures are counted per client address
 * (src/auth/callback-guard.ts) and every refusal is logged as counts per minute, not a line each.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const TWILIO_TOKEN = 'twilio-auth-token-forged-callbacks';
const BUDGET = 5;
const WINDOW_MS = 60_000;

let gw: TestGateway;
let time = 1_800_000_000_000;
const lines: Array<Record<string, any>> = [];

beforeAll(async () => {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  gw = await startTestGateway(
    {
      // The test's requests come from 127.0.0.1: as a trusted proxy, its X-Forwarded-For names each request's client.
      server: { trusted_proxies: ['127.0.0.1/32'] },
      auth: { failure_budget: BUDGET, failure_window: '1m' },
      providers: {
        // Nothing is sent through these: only their callbacks are knocked on.
        twilio: {
          type: 'twilio',
          account_sid: `AC${'0'.repeat(32)}`,
          auth_token: TWILIO_TOKEN,
          from: '+15005550006',
          base_url: 'http://127.0.0.1:9',
          webhook_shared_keys: { KS1: 'shared-key-one', KS2: 'shared-key-two', KS3: 'shared-key-three' },
        },
        vonage: {
          type: 'vonage',
          api_key: 'k',
          api_secret: 's',
          base_url: 'http://127.0.0.1:9',
          signature_secret: 'vonage-secret-0123',
          signature_method: 'sha256',
        },
        infobip: { type: 'infobip', api_key: 'k', base_url: 'http://127.0.0.1:9', webhook_secret: 'infobip-webhook-secret-0123' },
        sinch: { type: 'sinch', service_plan_id: 'plan', api_token: 't', base_url: 'http://127.0.0.1:9', webhook_secret: 'sinch-webhook-secret-0123' },
      },
      log: { level: 'info' },
    },
    { logger: pino({ level: 'info' }, stream), now: () => time },
  );
});

afterAll(async () => {
  await gw?.close();
});

let nextAddress = 1;
/** A client address no earlier request used (a documentation block, RFC 5737). */
const freshAddress = () => `203.0.113.${nextAddress++}`;

async function post(path: string, headers: Record<string, string>, body: string | Buffer, from = freshAddress()) {
  const res = await fetch(gw.url + path, { method: 'POST', headers: { 'x-forwarded-for': from, ...headers }, body });
  return { status: res.status, json: (await res.json()) as { error: string; code: number }, retryAfter: res.headers.get('retry-after') };
}

const twilioForm = { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'Zm9yZ2VkLXNpZ25hdHVyZS0yMGI=' };
const json = { 'content-type': 'application/json' };
const formOf = (bytes: number) => `MessageSid=SM1&MessageStatus=delivered&Pad=${'x'.repeat(Math.max(0, bytes - 40))}`.slice(0, bytes);

describe('a body larger than the provider sends is refused before it is read or verified', () => {
  it.each<[string, string, Record<string, string>, number]>([
    ['a Twilio status callback', '/dlr/twilio?sms_id=01X', twilioForm, 8 * 1024],
    ['a Twilio inbound message', '/mo/twilio', twilioForm, 32 * 1024],
    ['a Vonage receipt', '/dlr/vonage', json, 8 * 1024],
    ['a Vonage inbound message', '/mo/vonage', json, 8 * 1024],
    ['an Infobip report', '/dlr/infobip?sms_id=01X&token=x', json, 16 * 1024],
    ['a Sinch report', '/dlr/sinch?sms_id=01X&token=x', json, 8 * 1024],
  ])('%s: one byte over its bound is 413 naming it; at the bound the plugin decides (403)', async (_label, path, headers, limit) => {
    const body = (bytes: number) => (headers === json ? `{"pad":"${'x'.repeat(bytes - 10)}"}` : formOf(bytes));
    const over = await post(path, headers, body(limit + 1));
    expect(over.status).toBe(413);
    expect(over.json).toEqual({ error: expect.stringContaining(`larger than ${limit} bytes`), code: 413 });
    expect((await post(path, headers, body(limit))).status).toBe(403);
  });

  it('a provider that declares no bound keeps server.callback_body_limit (the sandbox)', async () => {
    expect((await post('/dlr/sandbox', { ...json, 'x-sandbox-signature': '0'.repeat(64) }, `[${' '.repeat(20_000)}]`)).status).toBe(403);
  });
});

describe('a signature that cannot be the provider’s is refused before any HMAC, 403 naming why', () => {
  it.each<[string, string, Record<string, string>, string, RegExp]>([
    [
      'Twilio, no signature',
      '/dlr/twilio?sms_id=01X',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'MessageStatus=delivered',
      /X-Twilio-Signature header is missing/,
    ],
    [
      'Twilio, not an HMAC-SHA1 in base64',
      '/dlr/twilio?sms_id=01X',
      { ...twilioForm, 'x-twilio-signature': 'forged' },
      'MessageStatus=delivered',
      /not the base64 of an HMAC_SHA1/,
    ],
    [
      'Twilio, a shared key id the gateway does not hold',
      '/mo/twilio',
      { ...twilioForm, 'x-twilio-webhooks-signature-settings': 'key=KSunknown,algorithm=HMAC_SHA1' },
      'MessageSid=SM1',
      /"KSunknown", which webhook_shared_keys does not hold/,
    ],
    [
      'Vonage, a sig of the wrong length',
      '/dlr/vonage',
      json,
      `{"status":"delivered","timestamp":"${Math.floor(time / 1000)}","sig":"abc"}`,
      /sig is not a sha256 hex digest/,
    ],
    ['Infobip, a token that is not one of ours', '/dlr/infobip?sms_id=01X&token=forged', json, '{"results":[]}', /token is not one of ours/],
    ['Sinch, a token that is not one of ours', '/dlr/sinch?sms_id=01X&token=forged', json, '{}', /token is not one of ours/],
    ['the sandbox, a signature that is not 64 hex digits', '/dlr/sandbox', { ...json, 'x-sandbox-signature': 'forged' }, '[]', /not 64 hex digits/],
  ])('%s', async (_label, path, headers, body, reason) => {
    const answer = await post(path, headers, body);
    expect(answer.status).toBe(403);
    expect(answer.json).toEqual({ error: expect.stringMatching(reason), code: 403 });
  });
});

describe('failed signatures per client address', () => {
  const forged = (from: string) => post('/dlr/twilio?sms_id=01X', twilioForm, 'MessageSid=SM1&MessageStatus=delivered', from);

  it(`answers an address 429 with Retry-After after ${BUDGET} failed signatures in the window, and only that address`, async () => {
    const forger = freshAddress();
    for (let i = 0; i < BUDGET; i++) expect((await forged(forger)).status).toBe(403);
    const refused = await forged(forger);
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ error: expect.stringMatching(/too many failed signatures from this address/), code: 429 });
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    // Refused before the body is read: even a body the door would refuse unread answers 429.
    expect((await post('/dlr/twilio?sms_id=01X', twilioForm, formOf(9_000), forger)).status).toBe(429);

    // Another address is not refused, and Twilio's own callback from a third is taken.
    expect((await forged(freshAddress())).status).toBe(403);
    const url = `${gw.url}/dlr/twilio?sms_id=01JFORGEDCALLBACKS000000000`;
    const params = { MessageSid: `SM${'2'.repeat(32)}`, MessageStatus: 'delivered' };
    const genuine = await post(
      '/dlr/twilio?sms_id=01JFORGEDCALLBACKS000000000',
      { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': getExpectedTwilioSignature(TWILIO_TOKEN, url, params) },
      new URLSearchParams(params).toString(),
    );
    expect(genuine.status).toBe(200);

    // When the window ends, the forger's signatures are checked again.
    time += WINDOW_MS;
    expect((await forged(forger)).status).toBe(403);
  });

  it('does not count what the door refuses unread, nor a provider without a signature problem', async () => {
    const sender = freshAddress();
    for (let i = 0; i < BUDGET + 2; i++) expect((await post('/dlr/twilio?sms_id=01X', twilioForm, formOf(9_000), sender)).status).toBe(413);
    expect((await forged(sender)).status).toBe(403);
  });
});

describe('refusals are logged as counts per minute, not one line each', () => {
  it('writes the first refusal at once, then one line with the count once the minute has passed', async () => {
    time += 10 * WINDOW_MS;
    const refusedLines = () => lines.filter((l) => l.msg === 'provider callbacks refused (counts per minute)' && l.door === 'mo' && l.provider === 'vonage');
    const forged = () => post('/mo/vonage', json, `{"msisdn":"447700900123","to":"15005550006","text":"STOP","timestamp":"1","sig":"${'0'.repeat(64)}"}`);
    // Whatever earlier tests left pending on this door is written by the first refusal of a new minute.
    await forged();
    time += WINDOW_MS;
    const before = refusedLines().length;
    for (let i = 0; i < 30; i++) expect((await forged()).status).toBe(403);
    expect(refusedLines().length - before).toBe(1);
    expect(refusedLines().at(-1)).toMatchObject({ level: 40, refused: 1, by_status: { 403: 1 } });

    time += WINDOW_MS;
    await forged();
    expect(refusedLines().length - before).toBe(2);
    expect(refusedLines().at(-1)).toMatchObject({ refused: 30, by_status: { 403: 30 }, reasons: { 'timestamp 1 is outside the 300s window': 30 } });
    // No line per refusal under the old names.
    expect(lines.filter((l) => l.msg === 'receipt refused' || l.msg === 'inbound message refused')).toEqual([]);
  });
});
