import { rmSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, TEST_API_KEY, type TestGateway } from './helpers/gateway.js';

type Answer = { status: number; headers: Headers; text: string };
type Call = { method?: string; headers?: Record<string, string>; body?: string; json?: unknown; form?: Record<string, string> };

let gw: TestGateway;
/** A gateway without admin.api_key: the admin API, console and /metrics answer 403. */
let closed: TestGateway;
let doc: any;
let sentSmsId: string;
let session: { cookie: string; csrf: string };

async function call(target: TestGateway, path: string, { method = 'GET', headers = {}, body, json, form }: Call = {}): Promise<Answer> {
  const contentType = json !== undefined ? 'application/json' : form ? 'application/x-www-form-urlencoded' : undefined;
  const res = await fetch(target.url + path, {
    method,
    redirect: 'manual',
    headers: { ...(contentType ? { 'content-type': contentType } : {}), ...headers },
    body: json !== undefined ? JSON.stringify(json) : form ? new URLSearchParams(form).toString() : body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const crm = { 'x-api-key': TEST_API_KEY };
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const big = JSON.stringify(smsMessage('too-big', { content: 'x'.repeat(5_000) }));

/** One request per documented answer: `METHOD path status` → how to get that answer from a real gateway. */
const cases: Record<string, () => Promise<Answer>> = {
  'POST /channels/sms/single 200': () => call(gw, '/channels/sms/single', { method: 'POST', headers: crm, json: smsMessage('doc-ok') }),
  'POST /channels/sms/single 400': () => call(gw, '/channels/sms/single', { method: 'POST', headers: crm, json: smsMessage('doc-rejected', { recipient: '+447700900004' }) }),
  'POST /channels/sms/single 401': () => call(gw, '/channels/sms/single', { method: 'POST', json: smsMessage('doc-nokey') }),
  'POST /channels/sms/single 413': () => call(gw, '/channels/sms/single', { method: 'POST', headers: { ...crm, 'content-type': 'application/json' }, body: big }),
  'POST /channels/sms/single 415': () => call(gw, '/channels/sms/single', { method: 'POST', headers: { ...crm, 'content-type': 'text/plain' }, body: '{}' }),
  'POST /channels/sms/single 503': () => call(gw, '/channels/sms/single', { method: 'POST', headers: crm, json: smsMessage('doc-transient', { recipient: '+447700900005' }) }),
  'POST /channels/sms/batch 200': () => call(gw, '/channels/sms/batch', { method: 'POST', headers: crm, json: [smsMessage('doc-b1'), { activity: { id: 7 } }, smsMessage('doc-b3', { recipient: '+447700900005' })] }),
  'POST /channels/sms/batch 400': () => call(gw, '/channels/sms/batch', { method: 'POST', headers: crm, json: {} }),
  'POST /channels/sms/batch 401': () => call(gw, '/channels/sms/batch', { method: 'POST', json: [] }),
  'POST /channels/sms/batch 413': () => call(gw, '/channels/sms/batch', { method: 'POST', headers: { ...crm, 'content-type': 'application/json' }, body: `[${big}]` }),
  'POST /channels/sms/batch 415': () => call(gw, '/channels/sms/batch', { method: 'POST', headers: crm, body: '[]' }),
  'POST /dlr/{provider} 200': () => call(gw, '/dlr/sandbox', { method: 'POST', json: [{ sms_id: sentSmsId, message_id: 'doc', status: 'sent' }] }),
  'POST /dlr/{provider} 403': () => call(gw, '/dlr/sandbox', { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'not json' }),
  'POST /dlr/{provider} 404': () => call(gw, '/dlr/nobody', { method: 'POST', json: [] }),
  'GET /dlr/{provider} 403': () => call(gw, '/dlr/sandbox'),
  'GET /dlr/{provider} 404': () => call(gw, '/dlr/nobody'),
  'GET /admin/messages/{smsId} 200': () => call(gw, `/admin/messages/${sentSmsId}`, { headers: admin }),
  'GET /admin/messages/{smsId} 401': () => call(gw, `/admin/messages/${sentSmsId}`),
  'GET /admin/messages/{smsId} 403': () => call(closed, `/admin/messages/${sentSmsId}`, { headers: admin }),
  'GET /admin/messages/{smsId} 404': () => call(gw, '/admin/messages/no-such-id', { headers: admin }),
  'GET /admin/messages 200': () => call(gw, '/admin/messages?activity_id=doc-seed', { headers: admin }),
  'GET /admin/messages 400': () => call(gw, '/admin/messages', { headers: admin }),
  'GET /admin/messages 401': () => call(gw, '/admin/messages?activity_id=doc-seed'),
  'GET /admin/messages 403': () => call(closed, '/admin/messages?activity_id=doc-seed', { headers: admin }),
  'GET /admin/messages 404': () => call(gw, '/admin/messages?activity_id=nobody', { headers: admin }),
  'POST /admin/conversions/replay 200': () => call(gw, '/admin/conversions/replay', { method: 'POST', headers: admin, json: {} }),
  'POST /admin/conversions/replay 400': () => call(gw, '/admin/conversions/replay', { method: 'POST', headers: admin, json: { ids: [] } }),
  'POST /admin/conversions/replay 401': () => call(gw, '/admin/conversions/replay', { method: 'POST', json: {} }),
  'POST /admin/conversions/replay 403': () => call(closed, '/admin/conversions/replay', { method: 'POST', headers: admin, json: {} }),
  'GET /healthz 200': () => call(gw, '/healthz'),
  'GET /readyz 200': () => call(gw, '/readyz'),
  'GET /readyz 503': async () => {
    const broken = await startTestGateway();
    await broken.gateway.ledger.close();
    try {
      return await call(broken, '/readyz');
    } finally {
      // close() stops at the ledger closed above, before it removes the temp dir.
      await broken.close().catch(() => {});
      rmSync(broken.dir, { recursive: true, force: true });
    }
  },
  'GET /metrics 200': () => call(gw, '/metrics', { headers: admin }),
  'GET /metrics 401': () => call(gw, '/metrics'),
  'GET /metrics 403': () => call(closed, '/metrics', { headers: admin }),
  'GET /openapi.json 200': () => call(gw, '/openapi.json'),
  'GET /docs 200': () => call(gw, '/docs'),
  'GET /console 200': () => call(gw, '/console', { headers: { cookie: session.cookie } }),
  'GET /console 403': () => call(closed, '/console'),
  'POST /console/login 303': () => call(gw, '/console/login', { method: 'POST', form: { key: TEST_ADMIN_KEY } }),
  'POST /console/login 401': () => call(gw, '/console/login', { method: 'POST', form: { key: 'not-the-key' } }),
  'POST /console/login 403': () => call(closed, '/console/login', { method: 'POST', form: { key: TEST_ADMIN_KEY } }),
  'POST /console/replay 303': () => call(gw, '/console/replay', { method: 'POST', headers: { cookie: session.cookie }, form: { csrf: session.csrf } }),
  'POST /console/replay 401': () => call(gw, '/console/replay', { method: 'POST', form: { csrf: session.csrf } }),
  'POST /console/replay 403': () => call(gw, '/console/replay', { method: 'POST', headers: { cookie: session.cookie }, form: { csrf: 'forged' } }),
  'POST /console/logout 303': () => call(gw, '/console/logout', { method: 'POST', headers: { cookie: session.cookie }, form: { csrf: session.csrf } }),
  'POST /console/logout 401': () => call(gw, '/console/logout', { method: 'POST', form: { csrf: session.csrf } }),
  'POST /console/logout 403': () => call(gw, '/console/logout', { method: 'POST', headers: { cookie: session.cookie }, form: {} }),
};

/** Documented answers this branch cannot produce yet, each with the reason; listed so nothing is skipped silently. */
const notExercised: Record<string, string> = {
  'GET /dlr/{provider} 200': 'the sandbox takes receipts by POST only; GET receipts come with the Vonage provider (providers branch)',
};

beforeAll(async () => {
  gw = await startTestGateway({ server: { body_limit_bytes: 4_096 } });
  closed = await startTestGateway({ admin: { api_key: undefined } });
  sentSmsId = (await gw.post('/channels/sms/single', smsMessage('doc-seed'))).json.sms_id;
  const login = await call(gw, '/console/login', { method: 'POST', form: { key: TEST_ADMIN_KEY } });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const page = await call(gw, '/console', { headers: { cookie } });
  session = { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page.text)![1]! };
  doc = JSON.parse((await call(gw, '/openapi.json')).text);
});
afterAll(async () => {
  await gw?.close();
  await closed?.close();
});

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes the request bodies with the schemas the routes validate with', () => {
    const single = doc.paths['/channels/sms/single'].post.requestBody.content['application/json'].schema;
    expect(single.required).toEqual(['activity', 'content', 'recipient']);
    expect(single.properties.activity.properties.id.anyOf).toHaveLength(2);
    const batch = doc.paths['/channels/sms/batch'].post.requestBody.content['application/json'].schema;
    expect(batch.items).toEqual(single);
    expect(doc.paths['/dlr/{provider}'].post.parameters[0].schema.enum).toEqual(['sandbox']);
  });

  it('has a case below for every documented answer', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
      Object.entries(item).flatMap(([method, op]: [string, any]) => Object.keys(op.responses).map((status) => `${method.toUpperCase()} ${path} ${status}`)),
    );
    expect(documented.sort()).toEqual([...Object.keys(cases), ...Object.keys(notExercised)].sort());
  });
});

describe('every documented route answers as documented', () => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  let registered = false;
  const register = () => {
    if (!registered) ajv.addSchema(doc, 'openapi.json');
    registered = true;
  };
  const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

  it.each(Object.keys(cases))('%s', async (key) => {
    register();
    const [method, path, status] = key.split(' ') as [string, string, string];
    const documented = doc.paths[path][method.toLowerCase()].responses[status];
    const answer = await cases[key]!();
    expect(answer.status, answer.text.slice(0, 300)).toBe(Number(status));
    expect(answer.headers.get('x-request-id')).toBeTruthy();
    for (const header of Object.keys(documented.headers ?? {})) expect(answer.headers.get(header), header).not.toBeNull();
    const [contentType] = Object.keys(documented.content ?? {});
    if (!contentType) return;
    expect(answer.headers.get('content-type')!.split(';')[0]).toBe(contentType.split(';')[0]);
    if (contentType !== 'application/json') return;
    const validate = ajv.compile({ $ref: `openapi.json#/${pointer('paths', path, method.toLowerCase(), 'responses', status, 'content', contentType, 'schema')}` });
    expect(validate(JSON.parse(answer.text)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('can fail: a body that breaks its documented schema is refused', () => {
    register();
    const validate = ajv.compile({ $ref: `openapi.json#/${pointer('paths', '/channels/sms/batch', 'post', 'responses', '200', 'content', 'application/json', 'schema')}` });
    expect(validate({ successful: [], failed: [] })).toBe(false);
    expect(validate({ successful: [{ id: 1, sms_id: 's' }], failed: [], fatal: [], extra: 1 })).toBe(false);
    expect(validate({ successful: [{ id: 1, sms_id: 's' }], failed: [], fatal: [] })).toBe(true);
  });

  for (const [key, reason] of Object.entries(notExercised)) it.todo(`${key} (not on this branch: ${reason})`);
});

describe('GET /docs', () => {
  it('renders every documented path without scripts or anything fetched from elsewhere', async () => {
    const page = await call(gw, '/docs');
    for (const path of Object.keys(doc.paths)) expect(page.text).toContain(path);
    expect(page.text).not.toMatch(/<script|<link|<img|@import|(src|href)="https?:/i);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
  });
});
