/**
 * Status classes of the SMS endpoints that are not about the message's fields: credentials (401), transient
 * provider errors (503 with Retry-After), and bad HTTP input (400 malformed JSON, 415 content type, 413 size).
 * Every one answers a JSON {error}; none is a 5xx except the transient one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, TEST_API_KEY, type TestGateway } from '../helpers/gateway.js';
import { readMessage } from '../helpers/ledger.js';

const BODY_LIMIT = 4_096;
const OPERATOR_KEY = 'operator-only-key';

let gw: TestGateway;
let rotating: TestGateway;
beforeAll(async () => {
  [gw, rotating] = await Promise.all([
    startTestGateway({ server: { body_limit_bytes: BODY_LIMIT } }),
    startTestGateway({ auth: { api_keys: [OPERATOR_KEY] }, sms: { api_keys: ['old-crm-key', 'new-crm-key'] } }),
  ]);
});
afterAll(async () => {
  await Promise.all([gw.close(), rotating.close()]);
});

async function raw(target: TestGateway, path: string, init: RequestInit): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(target.url + path, init);
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text), headers: res.headers };
}

describe('credentials', () => {
  it.each([
    ['single', '/channels/sms/single', smsMessage('auth-single')],
    ['batch', '/channels/sms/batch', [smsMessage('auth-batch')]],
  ])('%s answers 401 naming the header when X-Api-Key is missing', async (_label, path, body) => {
    const res = await raw(gw, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ error: 'x-api-key: header is missing' });
  });

  it.each([
    ['single', '/channels/sms/single', smsMessage('auth-single-wrong')],
    ['batch', '/channels/sms/batch', [smsMessage('auth-batch-wrong')]],
  ])('%s answers 401 when X-Api-Key is wrong, and sends nothing', async (_label, path, body) => {
    const res = await gw.post(path, body, { 'x-api-key': 'guess' });
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ error: 'x-api-key: the key is not valid' });
  });

  it('checks the key before the body, so a bad key with a malformed body is still 401', async () => {
    const res = await gw.post('/channels/sms/single', '{"activity":', { 'x-api-key': 'guess' });
    expect(res.status).toBe(401);
  });

  it.each([['old-crm-key'], ['new-crm-key']])('accepts %s while both keys of sms.api_keys are configured (rotation)', async (key) => {
    const res = await rotating.post('/channels/sms/single', smsMessage(`rotation-${key}`), { 'x-api-key': key });
    expect(res.status).toBe(200);
  });

  it('does not fall back to auth.api_keys when sms.api_keys is set', async () => {
    const res = await rotating.post('/channels/sms/single', smsMessage('rotation-operator'), { 'x-api-key': OPERATOR_KEY });
    expect(res.status).toBe(401);
  });

  it('accepts the key from auth.api_keys when sms.api_keys is not set', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('fallback-key'))).status).toBe(200);
  });
});

describe('transient provider errors', () => {
  it('answers 503 with Retry-After and the sms_id is kept for the retry', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('transient-503', { recipient: '+447700900005' }));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(res.json).toEqual({ error: expect.stringContaining('temporary') });
    expect((await readMessage(gw, 'transient-503')).state).toBe('retryable');
  });
});

describe('bad HTTP input', () => {
  it.each([
    ['single', '/channels/sms/single'],
    ['batch', '/channels/sms/batch'],
  ])('%s answers 400 {error} to malformed JSON', async (_label, path) => {
    const res = await gw.post(path, '{"activity": {"id": 1,');
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: expect.stringMatching(/^body is not valid JSON/) });
  });

  it('answers 400 {error} to an empty body sent as JSON', async () => {
    const res = await gw.post('/channels/sms/single', '');
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/not valid JSON/);
  });

  it.each([
    ['text/plain', 'text/plain'],
    ['form encoding', 'application/x-www-form-urlencoded'],
    ['multipart', 'multipart/form-data; boundary=x'],
  ])('answers 415 {error} naming the content type when it is %s', async (_label, type) => {
    const res = await gw.post('/channels/sms/single', JSON.stringify(smsMessage('ctype')), { 'content-type': type });
    expect(res.status).toBe(415);
    expect(res.json).toEqual({ error: expect.stringContaining(JSON.stringify(type)) });
  });

  it('answers 415 when there is no content type at all', async () => {
    const res = await raw(gw, '/channels/sms/single', {
      method: 'POST',
      headers: { 'x-api-key': 'test-crm-key' },
      body: new Blob([JSON.stringify(smsMessage('no-ctype'))]),
    });
    expect(res.status).toBe(415);
    expect(res.json.error).toMatch(/Content-Type/);
  });

  it('accepts application/json with a charset parameter', async () => {
    const res = await gw.post('/channels/sms/single', JSON.stringify(smsMessage('charset')), { 'content-type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(200);
  });

  it.each([
    ['single', '/channels/sms/single', { ...smsMessage('too-big'), padding: 'x'.repeat(BODY_LIMIT) }],
    ['batch', '/channels/sms/batch', Array.from({ length: 40 }, (_, i) => smsMessage(`too-big-${i}`))],
  ])('%s answers 413 {error, code} naming server.body_limit_bytes for a body over the limit', async (_label, path, body) => {
    const res = await gw.post(path, body);
    expect(res.status).toBe(413);
    expect(res.json).toEqual({ error: expect.stringContaining('server.body_limit_bytes'), code: 413 });
  });

  it('answers 413 to a chunked body over the limit (no Content-Length to trust)', async () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ ...smsMessage('chunked-big'), padding: 'x'.repeat(BODY_LIMIT) }));
    const res = await raw(gw, '/channels/sms/single', {
      method: 'POST',
      headers: { 'x-api-key': 'test-crm-key', 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 1_000) controller.enqueue(bytes.subarray(i, i + 1_000));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(res.json.error).toMatch(/body_limit_bytes/);
  });

  it('answers 404 {error, code} for an unknown path', async () => {
    const res = await gw.post('/channels/sms/multiple', [smsMessage('nowhere')]);
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ error: expect.stringContaining('/channels/sms/multiple'), code: 404 });
  });

  // docs/operator-api.md "Errors": every 404 and 405, on any path, carries code (paths outside the operator
  // prefixes once answered {error} alone).
  it.each([
    ['GET', '/userdetail/x', 404],
    ['POST', '/channels/site/single', 404],
    ['POST', '/channels/push/batch', 404],
    ['GET', '/nowhere', 404],
    ['DELETE', '/channels/sms/single', 405],
    ['GET', '/admin/messages/no-such-sms', 404],
  ])('%s %s answers %i {error, code}', async (method, path, status) => {
    const res = await fetch(`${gw.url}${path}`, { method, headers: { 'x-api-key': TEST_API_KEY, authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual({ error: expect.any(String), code: status });
  });
});
