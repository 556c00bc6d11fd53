/**
 * "Bad input gets a clear answer and loses nothing", as properties over generated input against the real server:
 * arbitrary JSON to every endpoint that takes a body, SMS message objects with one field replaced by arbitrary
 * JSON, and arbitrary text in path parameters. No answer is a 5xx (the one transient exception is the sandbox's
 * simulated outage, a 503 the CRM should retry), every refusal of the SMS channel is a JSON {error} naming a
 * field, and the server keeps answering.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

/** PROPERTY_RUNS=2000 searches harder (a few minutes). */
const RUNS = Number(process.env.PROPERTY_RUNS ?? 120);
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

/** The sandbox's outage number (ending 0005) answers 503 on purpose; any other 5xx is a defect. */
const isSimulatedOutage = (status: number, json: unknown) => status === 503 && JSON.stringify(json).includes('sandbox simulates a temporary provider outage');

function expectNoServerError(res: { status: number; json: unknown }, what: string) {
  if (res.status >= 500 && !isSimulatedOutage(res.status, res.json)) {
    throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.json)}`);
  }
}

/** A refusal of the SMS channel: one error string that starts with the field it is about. */
function expectFieldError(res: { status: number; json: any }) {
  expect(Object.keys(res.json)).toContain('error');
  expect(typeof res.json.error).toBe('string');
  expect(res.json.error).toMatch(/^[a-z_.\d]+: |^[A-Za-z-]+: |^body/);
}

const SMS_FIELDS = ['activity', 'content', 'recipient', 'sender_name', 'provider_name', 'encoding'] as const;
const ACTIVITY_FIELDS = ['id', 'brand_id', 'user_id', 'internal_user_id', 'activity_id', 'action_group_id', 'trigger_hash', 'action_id'] as const;

/** An SMS message object with one field (top level or in activity) replaced by arbitrary JSON, or removed. */
const mutatedMessage = fc
  .record({
    n: fc.nat(),
    inActivity: fc.boolean(),
    field: fc.nat(),
    value: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
  })
  .map(({ n, inActivity, field, value }) => {
    const message = smsMessage(`prop-${n}`) as Record<string, any>;
    const target = inActivity ? (message.activity as Record<string, unknown>) : message;
    const names = inActivity ? ACTIVITY_FIELDS : SMS_FIELDS;
    const name = names[field % names.length]!;
    if (value === undefined) delete target[name];
    else target[name] = value;
    return message;
  });

describe('the SMS channel', () => {
  it('answers any JSON body to /single with 200, or a 4xx {error} naming the field', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue({ maxDepth: 3 }), mutatedMessage), async (body) => {
        const res = await gw.post('/channels/sms/single', body);
        seen.add(res.status);
        expectNoServerError(res, `/channels/sms/single ${JSON.stringify(body)}`);
        if (res.status === 200) expect(res.json.sms_id).toMatch(/^[0-9a-f-]{36}$/);
        else if (res.status < 500) {
          expect(res.status).toBe(400);
          expectFieldError(res);
        }
      }),
      { numRuns: RUNS },
    );
    // The inputs reach both sides: some are still valid messages (a changed optional field), most are refused.
    expect(seen.has(200) && seen.has(400)).toBe(true);
  });

  it('answers any array to /batch with every entry in exactly one of successful | failed | fatal', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(mutatedMessage, fc.jsonValue({ maxDepth: 2 })), { maxLength: 8 }), async (batch) => {
        const res = await gw.post('/channels/sms/batch', batch);
        expectNoServerError(res, `/channels/sms/batch ${JSON.stringify(batch)}`);
        expect(res.status).toBe(200);
        const { successful, failed, fatal } = res.json as { successful: unknown[]; failed: Array<{ error?: string }>; fatal: unknown[] };
        expect(successful.length + failed.length + fatal.length).toBe(batch.length);
        for (const entry of failed) expect(entry.error).toMatch(/^[a-z_.\d]+: |^body/);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers any text sent as JSON with 400 {error} when it does not parse, on both endpoints', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 200 }), fc.constantFrom('/channels/sms/single', '/channels/sms/batch'), async (text, path) => {
        const res = await gw.post(path, text);
        expectNoServerError(res, `${path} ${JSON.stringify(text)}`);
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        if (!parses) {
          expect(res.status).toBe(400);
          expect(res.json.error).toMatch(/^body is not valid JSON/);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('answers a non-array body to /batch with 400 {error}', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue({ maxDepth: 2 }).filter((v) => !Array.isArray(v)),
        async (body) => {
          const res = await gw.post('/channels/sms/batch', body);
          expect(res.status).toBe(400);
          expectFieldError(res);
        },
      ),
      { numRuns: RUNS / 2 },
    );
  });
});

describe('the other endpoints', () => {
  const posts: Array<[string, Record<string, string>]> = [
    ['/bonus/credit', {}],
    ['/bonus/credit/funds', {}],
    ['/userconsents/u-prop', {}],
    ['/reconciliation', {}],
    ['/dlr/sandbox', {}],
    ['/admin/conversions/replay', admin],
  ];

  it.each(posts)('POST %s answers any JSON body without a 5xx', async (path, headers) => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 3 }), async (body) => {
        expectNoServerError(await gw.post(path, body, headers), `POST ${path} ${JSON.stringify(body)}`);
      }),
      { numRuns: RUNS / 2 },
    );
  });

  it.each([['/admin/users/u-prop'], ['/admin/users/u-prop/consents'], ['/admin/bonuses']])('PUT %s answers any JSON body without a 5xx', async (path) => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 3 }), async (body) => {
        expectNoServerError(await gw.adminPut(path, body), `PUT ${path} ${JSON.stringify(body)}`);
      }),
      { numRuns: RUNS / 2 },
    );
  });

  it('answers any text as a user id or a query without a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), async (text) => {
        const id = encodeURIComponent(text);
        for (const path of [`/userdetails/${id}`, `/userconsents/${id}`, `/userblocks/${id}`, `/bonus/list?userid=${id}`]) {
          expectNoServerError(await gw.get(path), `GET ${path}`);
        }
        for (const path of [`/admin/messages/${id}`, `/admin/messages?activity_id=${id}`, `/admin/credits?user_id=${id}`]) {
          expectNoServerError(await gw.get(path, admin), `GET ${path}`);
        }
      }),
      { numRuns: RUNS / 2 },
    );
  });

  it('still answers after all of it', async () => {
    expect((await gw.get('/readyz')).status).toBe(200);
  });
});
