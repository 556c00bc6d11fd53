/**
 * The public doors under attack (docs/public-doors.md): each case is one finding of the adversarial review, replayed against the real
 * server the way the adversarial review sent it. The provider callbacks (`/dlr/*`, `/mo/*`) take anyone's request,
 * so what they do before a signature is checked must be bounded and linear, and every refusal a 4xx
 * `{ error, code }` naming what is wrong. The CRM's bodies are read once: a key given twice is refused, and every
 * string has a stated maximum, so nothing the database would refuse becomes a 503 the CRM retries forever.
 * Runs on PostgreSQL too when TEST_DATABASE_URL is set (test/helpers/database.ts).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundInboundSms } from '../../src/consents/inbound-limits.js';
import { checkCallbackBody } from '../../src/http/callback-body.js';
import { findDuplicateKeys } from '../../src/http/duplicate-keys.js';
import { fakeSignature } from '../fakes/vonage.js';
import { smsMessage, startTestGateway, TEST_API_KEY, type TestGateway } from '../helpers/gateway.js';

const TWILIO_TOKEN = 'twilio-auth-token-hostile-doors';
const VONAGE_SECRET = 'vonage-signature-secret-hostile-doors';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    providers: {
      // Nothing is sent through these two here: only their callbacks are knocked on.
      twilio: { type: 'twilio', account_sid: `AC${'0'.repeat(32)}`, auth_token: TWILIO_TOKEN, from: '+15005550006', base_url: 'http://127.0.0.1:9' },
      vonage: { type: 'vonage', api_key: 'k', api_secret: 's', base_url: 'http://127.0.0.1:9', signature_secret: VONAGE_SECRET, signature_method: 'sha256' },
    },
  });
});

afterAll(async () => {
  await gw?.close();
});

interface Answer {
  status: number;
  json: any;
  text: string;
}

async function send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const res = await fetch(gw.url + path, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

const form = (path: string, body: string, headers: Record<string, string> = {}) =>
  send('POST', path, { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'forged', ...headers }, body);
const json = (path: string, body: string, headers: Record<string, string> = {}) => send('POST', path, { 'content-type': 'application/json', ...headers }, body);

/** A refusal as docs/design.md §3 has it, with the status as its code, naming what it is about. */
function expectRefusal(answer: Answer, status: number, naming: RegExp) {
  expect({ status: answer.status, code: answer.json?.code }, answer.text.slice(0, 300)).toEqual({ status, code: status });
  expect(answer.json.error).toMatch(naming);
}

/** Sends a body in chunks without Content-Length (chunked transfer), as a client hiding its size would. */
function sendChunked(path: string, headers: Record<string, string>, chunk: string, chunks: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${gw.url}${path}`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, json: JSON.parse(text) }));
    });
    // The server may answer and close before every chunk is written; that is the point.
    req.on('error', (error) => (error.message.includes('EPIPE') || error.message.includes('ECONNRESET') ? undefined : reject(error)));
    let sent = 0;
    const writeMore = () => {
      while (sent < chunks) {
        sent++;
        if (!req.write(chunk)) return void req.once('drain', writeMore);
      }
      req.end();
    };
    writeMore();
  });
}

describe('finding 1: one unauthenticated request froze the gateway', () => {
  it('finding 1: 40,000 repeated Body fields (280 KB) to /dlr/twilio are answered 413 by server.callback_body_limit', async () => {
    const answer = await form('/dlr/twilio', Array.from({ length: 40_000 }, () => 'Body=v').join('&'));
    expectRefusal(answer, 413, /server\.callback_body_limit/);
  });

  it('finding 1: a 4.4 MB form of distinct fields to /mo/twilio is answered 413 before it is read', async () => {
    const body = Array.from({ length: 400_000 }, (_, i) => `f${i}=v`).join('&');
    expectRefusal(await form('/mo/twilio', body), 413, /server\.callback_body_limit/);
  });

  it('finding 1: a 1.2 MB form to the console sign-in, which anyone can reach too, is answered 413 before it is parsed', async () => {
    const body = `key=guess&${Array.from({ length: 120_000 }, (_, i) => `f${i}=v`).join('&')}`;
    expectRefusal(await send('POST', '/console/login', { 'content-type': 'application/x-www-form-urlencoded' }, body), 413, /server\.callback_body_limit/);
  });

  it('finding 1: an oversized callback sent without Content-Length is cut off at the limit while it streams', async () => {
    const answer = await sendChunked(
      '/mo/twilio',
      { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'forged' },
      'Body=vvvvvvvvvvvvvvvvvvvvvvvvvvvvv&'.repeat(256),
      64,
    );
    expectRefusal(answer, 413, /server\.callback_body_limit/);
  });

  it.each([
    ['/dlr/twilio', 'repeated', (i: number) => `Body=${i % 10}`],
    ['/mo/twilio', 'repeated', (i: number) => `Body=${i % 10}`],
    ['/dlr/twilio', 'distinct', (i: number) => `f${i}=v`],
    ['/mo/vonage', 'distinct', (i: number) => `f${i}=v`],
  ])('finding 1: to %s, 8,000 %s fields (under server.callback_body_limit) are more than the provider sends: 413 unread', async (path, _kind, field) => {
    const body = Array.from({ length: 8_000 }, (_, i) => field(i)).join('&');
    expect(body.length).toBeLessThan(64 * 1024);
    expectRefusal(await form(path, body), 413, /more than provider "(twilio|vonage)" sends/);
  });

  it.each([
    ['/dlr/twilio', 'repeated', 1_000, (i: number) => `Body=${i % 10}`],
    ['/mo/twilio', 'repeated', 4_000, (i: number) => `Body=${i % 10}`],
    ['/dlr/twilio', 'distinct', 1_000, (i: number) => `f${i}=v`],
    ['/mo/vonage', 'distinct', 1_000, (i: number) => `f${i}=v`],
  ])('finding 1: to %s, a form within the provider’s bound with %s fields (%i) is refused 400 naming the field limit', async (path, _kind, count, field) => {
    const body = Array.from({ length: count }, (_, i) => field(i)).join('&');
    expectRefusal(await form(path, body), 400, /more than 256 fields/);
  });

  it('finding 1: a receipt query string with 1,000 fields to /dlr/vonage is refused 400 naming the field limit', async () => {
    const query = Array.from({ length: 1_000 }, (_, i) => `f${i}=v`).join('&');
    expectRefusal(await send('GET', `/dlr/vonage?${query}`, {}), 400, /query string: more than 256 fields/);
  });

  it('finding 1: a genuine Twilio inbound message with a repeated field still verifies and is kept', async () => {
    const url = `${gw.url}/mo/twilio`;
    const pairs: Array<[string, string]> = [
      ['MessageSid', 'SM0123456789abcdef0123456789abcdef'],
      ['From', '+447700900555'],
      ['To', '+15005550006'],
      ['Body', 'hello'],
      ['MediaUrl', 'b'],
      ['MediaUrl', 'a'],
    ];
    const signature = getExpectedTwilioSignature(TWILIO_TOKEN, url, {
      MessageSid: pairs[0]![1],
      From: pairs[1]![1],
      To: pairs[2]![1],
      Body: 'hello',
      MediaUrl: ['b', 'a'],
    } as never);
    const answer = await form('/mo/twilio', new URLSearchParams(pairs).toString(), { 'x-twilio-signature': signature });
    expect(answer.status, answer.text).toBe(200);
  });
});

describe('finding 2: /mo had no JSON depth limit', () => {
  /** An object whose one field nests `levels` arrays: 60 KB at 30,000, under server.callback_body_limit. */
  const deep = (levels: number) => `{"a":${'['.repeat(levels)}${']'.repeat(levels)}}`;

  it.each(['/mo/sandbox'])('finding 2: JSON nested 30,000 levels to %s is refused 400 naming server.max_json_depth, never a 5xx', async (path) => {
    expectRefusal(await json(path, deep(30_000)), 400, /nested deeper than 64 levels \(server\.max_json_depth\)/);
  });

  it.each(['/mo/vonage', '/dlr/vonage'])(
    'finding 2: JSON nested 30,000 levels to %s is more than Vonage sends: 413 unread; 4,000 levels within its bound are 400 naming server.max_json_depth',
    async (path) => {
      expectRefusal(await json(path, deep(30_000)), 413, /more than provider "vonage" sends/);
      expectRefusal(await json(path, deep(4_000)), 400, /nested deeper than 64 levels \(server\.max_json_depth\)/);
    },
  );

  it('finding 2: deep JSON sent as text/plain to /mo/sandbox is checked as JSON too', async () => {
    const answer = await send('POST', '/mo/sandbox', { 'content-type': 'text/plain' }, deep(30_000));
    expectRefusal(answer, 400, /server\.max_json_depth/);
  });

  it('finding 2: four deep bodies at once are all answered 4xx, and /healthz answers meanwhile', async () => {
    const answers = await Promise.all([...Array.from({ length: 4 }, () => json('/mo/vonage', deep(4_000))), send('GET', '/healthz', {})]);
    expect(answers.slice(0, 4).map((a) => a.status)).toEqual([400, 400, 400, 400]);
    expect(answers[4]!.status).toBe(200);
  });
});

describe('finding 8: two parsers read one body differently', () => {
  it('finding 8: a single send whose activity gives "id" twice is refused 400 naming the key, and nothing is stored', async () => {
    const body = JSON.stringify(smsMessage('dup-single-first')).replace('"id":"dup-single-first"', '"id":"dup-single-first","id":"dup-single-second"');
    const answer = await gw.post('/channels/sms/single', body);
    expect(answer.status, JSON.stringify(answer.json)).toBe(400);
    expect(answer.json.error).toMatch(/^activity: key "id" is given more than once/);
    const stored = await gw.gateway.ledger.db
      .selectFrom('messages')
      .select('sms_id')
      .where('activity_key', 'in', ['dup-single-first', 'dup-single-second'])
      .execute();
    expect(stored).toEqual([]);
  });

  it('finding 8: two distinct 64-bit ids in one batch are both sent; an entry giving its id twice is failed by name', async () => {
    const first = JSON.stringify(smsMessage(1)).replace('"id":1', '"id":9007199254740993');
    const second = JSON.stringify(smsMessage(2)).replace('"id":2', '"id":9007199254740995');
    const twice = JSON.stringify(smsMessage(3)).replace('"id":3', '"id":9007199254740997,"id":9007199254740993');
    const answer = await send(
      'POST',
      '/channels/sms/batch',
      { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
      `[${first},${second},${twice}]`,
    );
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"id":9007199254740993');
    expect(answer.text).toContain('"id":9007199254740995');
    expect(answer.json.successful).toHaveLength(2);
    expect(answer.json.failed).toHaveLength(1);
    expect(answer.json.failed[0].error).toMatch(/activity: key "id" is given more than once/);
  });

  it('finding 8: a key spelt with an escape counts as the same key', async () => {
    const body = JSON.stringify(smsMessage('dup-escaped')).replace('"content":', '"\\u0063ontent":"other","content":');
    const answer = await gw.post('/channels/sms/single', body);
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(/key "content" is given more than once/);
  });

  it('finding 8: a signed-looking Vonage JSON callback with a key twice is refused 400 naming the key', async () => {
    const answer = await json('/mo/vonage', '{"msisdn":"447700900123","msisdn":"447700900999","to":"1","text":"STOP"}');
    expectRefusal(answer, 400, /key "msisdn" is given more than once/);
  });
});

describe('finding 9: an 8 KB activity.user_id was unstorable on PostgreSQL and answered 503 forever', () => {
  it('finding 9: a single send with an 8 KB user_id is refused 400 naming activity.user_id, on every ledger', async () => {
    const message = smsMessage('long-user-id');
    // Random text: PostgreSQL compresses a repetitive one enough to fit an index entry; this one it cannot.
    const answer = await gw.post('/channels/sms/single', { ...message, activity: { ...message.activity, user_id: randomBytes(6 * 1024).toString('base64') } });
    expect(answer.status, JSON.stringify(answer.json).slice(0, 300)).toBe(400);
    expect(answer.json.error).toMatch(/^activity\.user_id: must be at most 255 characters/);
  });

  it('finding 9: in a batch, the 8 KB user_id fails that message only; a 255-character one is sent', async () => {
    const long = smsMessage('batch-long-user-id');
    const fits = smsMessage('batch-fitting-user-id');
    const answer = await gw.post('/channels/sms/batch', [
      { ...long, activity: { ...long.activity, user_id: 'u'.repeat(8 * 1024) } },
      { ...fits, activity: { ...fits.activity, user_id: 'u'.repeat(255) } },
    ]);
    expect(answer.status).toBe(200);
    expect(answer.json.failed.map((f: { id: string }) => f.id)).toEqual(['batch-long-user-id']);
    expect(answer.json.successful.map((s: { id: string }) => s.id)).toEqual(['batch-fitting-user-id']);
  });

  // The CRM's schema of a credit sets no length on user_id, so a long one is taken and looked up: no player
  // has it, and the answer is the 400 naming user_id that any unknown player gets, never a 5xx, on either database.
  it.each([300, 8_192])('finding 9: a bonus credit whose user_id is %i characters is refused 400 naming user_id as no such player', async (length) => {
    const answer = await gw.post('/bonus/credit', { user_id: 'u'.repeat(length), bonus_code: 'WELCOME' });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(/^user_id: no user "u+"$/);
  });

  it('finding 9: a signed Twilio inbound SMS whose sender is 10,000 characters is refused 400 naming it, and nothing is kept', async () => {
    const params = { MessageSid: 'SMlongfrom0000000000000000000000000', From: `+44${'7'.repeat(10_000)}`, To: '+15005550006', Body: 'STOP' };
    const signature = getExpectedTwilioSignature(TWILIO_TOKEN, `${gw.url}/mo/twilio`, params);
    const answer = await form('/mo/twilio', new URLSearchParams(params).toString(), { 'x-twilio-signature': signature });
    expectRefusal(answer, 400, /from is longer than 64 characters/);
    const kept = await gw.gateway.ledger.db.selectFrom('inbound_messages').select('id').where('provider_message_id', '=', params.MessageSid).execute();
    expect(kept).toEqual([]);
  });

  it('finding 9: a Vonage inbound signed with the right secret but with text beyond 4,096 characters is refused 400', async () => {
    const fields: Record<string, string> = {
      msisdn: '447700900123',
      to: '15005550006',
      messageId: 'vn-long-text',
      text: 'x'.repeat(5_000),
      type: 'text',
      timestamp: String(Math.floor(Date.now() / 1000)),
    };
    fields.sig = fakeSignature(fields, VONAGE_SECRET, 'sha256');
    expectRefusal(await json('/mo/vonage', JSON.stringify(fields)), 400, /text is longer than 4096 characters/);
  });
});

describe('the checks as pure functions', () => {
  it.each([
    ['a flat object', '{"a":1,"b":2}', []],
    ['the same key in two objects', '{"a":{"k":1},"b":{"k":2}}', []],
    ['a key twice at the root', '{"a":1,"a":2}', [{ path: [], key: 'a' }]],
    ['a key twice inside an array entry', '[{"x":1},{"id":1,"id":2}]', [{ path: [1], key: 'id' }]],
    ['an escaped spelling of the same key', '{"id":1,"\\u0069d":2}', [{ path: [], key: 'id' }]],
    ['a key inside a string value is no key', '{"a":"\\"a\\":1","b":1}', []],
    [
      'three copies count twice',
      '{"k":1,"k":2,"k":3}',
      [
        { path: [], key: 'k' },
        { path: [], key: 'k' },
      ],
    ],
    ['a nested object path', '{"activity":{"meta":{"x":1,"x":1}}}', [{ path: ['activity', 'meta'], key: 'x' }]],
    ['__proto__ twice', '{"__proto__":1,"__proto__":2}', [{ path: [], key: '__proto__' }]],
  ])('repeated keys: %s', (_label, text, expected) => {
    expect(findDuplicateKeys(text)).toEqual(expected);
  });

  const form = 'application/x-www-form-urlencoded';
  it.each([
    ['a small form', form, '', 'a=1&b=2', true],
    ['256 form fields', form, '', Array.from({ length: 256 }, (_, i) => `f${i}=v`).join('&'), true],
    ['257 form fields', form, '', Array.from({ length: 257 }, (_, i) => `f${i}=v`).join('&'), false],
    ['257 query fields', '', `?${Array.from({ length: 257 }, () => 'a=1').join('&')}`, '', false],
    ['JSON one level too deep', 'application/json', '', `${'['.repeat(65)}${']'.repeat(65)}`, false],
    ['JSON at the depth limit', 'application/json', '', `${'['.repeat(64)}${']'.repeat(64)}`, true],
    ['JSON with a repeated key', 'application/json', '', '{"a":1,"a":1}', false],
    ['JSON-looking text of another type', 'text/plain', '', ' {"a":1,"a":1}', false],
    ['plain text', 'text/plain', '', 'a=1&a=1', true],
  ])('callback bodies: %s', (_label, contentType, search, body, ok) => {
    expect(checkCallbackBody({ contentType, search, rawBody: Buffer.from(body) }, 64).ok).toBe(ok);
  });

  const sms = { providerMessageId: 'SM1', from: '+447700900123', to: '+15005550006', text: 'STOP' };
  it.each([
    ['an ordinary message', sms, undefined],
    ['a 129-character id', { ...sms, providerMessageId: 'x'.repeat(129) }, 'providerMessageId is longer than 128 characters'],
    ['a 65-character sender', { ...sms, from: '+'.padEnd(65, '1') }, 'from is longer than 64 characters'],
    ['a 65-character recipient', { ...sms, to: '+'.padEnd(65, '1') }, 'to is longer than 64 characters'],
    ['a 4,096-character text', { ...sms, text: 'x'.repeat(4_096) }, undefined],
    ['a 4,097-character text', { ...sms, text: 'x'.repeat(4_097) }, 'text is longer than 4096 characters'],
  ])('inbound SMS bounds: %s', (_label, message, error) => {
    expect(boundInboundSms(message)).toBe(error);
  });
});
