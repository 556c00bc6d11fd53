/**
 * Hostile bodies on the newer /admin routes (routing controls, the SMS preview, the price fetches' replay, the cost
 * report's query): a body 5,000 levels deep, one over server.body_limit_bytes, a key given twice and
 * keys named after what every object inherits each get a 4xx `{error, code}` whose error names the field, never a 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';

const BODY_LIMIT = 64 * 1024;
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    server: { body_limit_bytes: BODY_LIMIT },
    providers: {
      other: { type: 'sandbox', dlr_delay_ms: 0 },
      main: { type: 'route', members: ['sandbox', 'other'] },
    },
  });
});
afterAll(async () => gw?.close());

// The held sends' replay is the console's form (src/sms/held-sends-outbox.ts); /admin/held-sends reads no body.
const ROUTES = ['/admin/routing/controls', '/admin/sms/preview', '/admin/price-fetches/replay'];
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

async function post(path: string, body: string) {
  const res = await fetch(gw.url + path, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body });
  const text = await res.text();
  let json: { error?: unknown; code?: unknown } | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

function expectRefused(answer: Awaited<ReturnType<typeof post>>, status: number, names: RegExp, where: string) {
  expect(answer.status, `${where}: ${answer.text.slice(0, 300)}`).toBe(status);
  expect(answer.json, where).toEqual({ error: expect.stringMatching(names), code: expect.anything() });
}

describe.each(ROUTES)('%s', (path) => {
  it('answers 400 naming the field for a body 5,000 levels deep', async () => {
    expectRefused(await post(path, `{"ids":${nested(5_000)}}`), 400, /^ids\[0\].*nested deeper than 64 levels \(server\.max_json_depth\)/, path);
  });

  it('answers 413 naming server.body_limit_bytes for a body over the limit', async () => {
    expectRefused(await post(path, JSON.stringify({ ids: [1], padding: 'x'.repeat(BODY_LIMIT) })), 413, /server\.body_limit_bytes/, path);
  });

  it('answers 400 naming a key given twice', async () => {
    expectRefused(await post(path, '{"ids":[1],"ids":[2]}'), 400, /key "ids" is given more than once/, path);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('answers 4xx naming a key %s, never a 5xx', async (name) => {
    const answer = await post(path, `{${JSON.stringify(name)}:{"polluted":true},"ids":[1]}`);
    expect(answer.status, `${path} ${name}: ${answer.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    expect(answer.json).toEqual({ error: expect.stringContaining(name), code: expect.anything() });
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

describe('/admin/costs', () => {
  it.each([
    ['__proto__ as a dimension', 'group_by=__proto__', /group_by/],
    ['constructor as a dimension', 'group_by=constructor', /group_by/],
    ['a parameter given twice', 'from=2026-01-01&from=2026-01-02', /from/],
    ['__proto__ as a parameter', '__proto__=1', /__proto__/],
  ])('answers 400 {error, code} naming the parameter for %s', async (_label, query, names) => {
    const res = await gw.get(`/admin/costs?${query}`, admin);
    expect(res.status, JSON.stringify(res.json)).toBe(400);
    expect(res.json).toEqual({ error: expect.stringMatching(names), code: expect.anything() });
  });
});
