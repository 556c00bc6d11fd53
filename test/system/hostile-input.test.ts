/**
 * The trust boundary against the real server (docs/security.md): forged, unsigned and replayed receipts for every provider
 * store nothing and change nothing the CRM is told; a receipt cannot make an unsent message look sent; every name
 * an object inherits, sent as a status, a provider name, a field or a path segment, never gets a 5xx; failed
 * authentications past the budget get 429 with Retry-After; sign-out ends a console session on the server; a
 * trickling upload is cut off. Everything sent is counted from real answers and ledger reads, and the suite ends
 * with one line: `hostile: sent=N 5xx=0 forged_accepted=0 lost_or_misreported=0`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { startInfobipFake, type InfobipFake } from '../fakes/infobip.js';
import { startSinchFake, type SinchFake } from '../fakes/sinch.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startVonageFake, type VonageFake } from '../fakes/vonage.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { dropTestDatabase } from '../helpers/database.js';
import { sandboxReceiptHeaders, smsMessage, startTestGateway, TEST_ADMIN_KEY, TEST_API_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype);
const VONAGE_SECRET = 'vonage-signature-secret-hostile';
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const crm = new FakeCrm();

/** What the suite did and saw; the closing line prints it. */
const tally = { sent: 0, serverErrors: 0, forgedAccepted: 0, lostOrMisreported: 0 };
const serverErrors: string[] = [];

/**
 * docs/crm-interface.md (and docs/connecting-the-crm.md): an unknown reconciliation `field` is answered 501, the
 * CRM's own contract for "not implemented", not a fault of the gateway.
 */
const isUnknownReconciliationField = (path: string, status: number) => path === '/reconciliation' && status === 501;

interface Answer {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

/**
 * Every request of the suite goes through here and is counted. `transient` marks the few requests whose 503 is the
 * gateway's documented answer to a provider's transient failure (the CRM retries it); any other 5xx is a defect.
 */
async function hit(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string; transient?: boolean } = {},
): Promise<Answer> {
  tally.sent += 1;
  const res = await fetch(base + path, { method, headers: options.headers, body: options.body, redirect: 'manual' });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (res.status >= 500 && !(options.transient && res.status === 503) && !isUnknownReconciliationField(path, res.status)) {
    tally.serverErrors += 1;
    serverErrors.push(`${method} ${path} → ${res.status} ${text.slice(0, 200)}`);
  }
  return { status: res.status, text, json, headers: res.headers };
}

const postJson = (gw: TestGateway, path: string, body: unknown, headers: Record<string, string> = {}, transient = false) =>
  hit(gw.url, 'POST', path, { headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, ...headers }, body: JSON.stringify(body), transient });

/** A receipt the suite forged: any 2xx is counted as accepted (the ledger is checked separately). */
function expectRefused(answer: Answer, what: string, status = 403) {
  if (answer.status < 300) tally.forgedAccepted += 1;
  expect(answer.status, `${what}: ${answer.text}`).toBe(status);
}

let gw: TestGateway;
let twilio: TwilioFake;
let vonage: VonageFake;
let infobip: InfobipFake;
let sinch: SinchFake;

/** Receipt rows stored for a message, all of them or those with one provider status (a forged status is one the real flow never sends). */
async function receiptRows(smsId: string, providerStatus?: string): Promise<number> {
  let query = gw.gateway.ledger.db
    .selectFrom('receipts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('sms_id', '=', smsId);
  if (providerStatus !== undefined) query = query.where('provider_status', '=', providerStatus);
  return Number((await query.executeTakeFirstOrThrow()).n);
}
const messageRow = (smsId: string) => gw.gateway.ledger.db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirstOrThrow();
const conversionsFor = (smsId: string) => crm.conversions.filter((c) => c.sms_id === smsId);

/** Reads the ledger and the CRM fake: what the CRM was told about `smsId` must be exactly `expected`, once. */
async function checkReported(smsId: string, expected: string | null, what: string) {
  const row = await messageRow(smsId);
  const told = conversionsFor(smsId).map((c) => c.delivery_status);
  const right = row.delivery_status === expected && (expected === null ? told.length === 0 : told.length === 1 && told[0] === expected);
  if (!right) tally.lostOrMisreported += 1;
  expect({ what, stored: row.delivery_status, told }).toEqual({ what, stored: expected, told: expected === null ? [] : [expected] });
}

beforeAll(async () => {
  await crm.start();
  twilio = await startTwilioFake({ callbackStatuses: [] });
  vonage = await startVonageFake({ signatureSecret: VONAGE_SECRET, signatureMethod: 'sha256' });
  infobip = await startInfobipFake();
  sinch = await startSinchFake();
  gw = await startTestGateway({
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
    providers: {
      // The sandbox's own receipt comes 400 ms after the send: forgeries posted at once arrive first.
      sandbox: { type: 'sandbox', dlr_delay_ms: 400 },
      twilio: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilio.url },
      vonage: {
        type: 'vonage',
        api_key: vonage.apiKey,
        api_secret: vonage.apiSecret,
        base_url: vonage.url,
        signature_secret: VONAGE_SECRET,
        signature_method: 'sha256',
      },
      infobip: { type: 'infobip', api_key: infobip.apiKey, base_url: infobip.url, webhook_secret: 'infobip-webhook-secret-hostile' },
      sinch: {
        type: 'sinch',
        service_plan_id: sinch.servicePlanId,
        api_token: sinch.apiToken,
        base_url: sinch.url,
        webhook_secret: 'sinch-webhook-secret-hostile',
      },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await twilio?.close();
  await vonage?.close();
  await infobip?.close();
  await sinch?.close();
  await crm.stop();
  // One line of figures for the closing note (counted above, never set by hand).
  console.log(`hostile: sent=${tally.sent} 5xx=${tally.serverErrors} forged_accepted=${tally.forgedAccepted} lost_or_misreported=${tally.lostOrMisreported}`);
  if (serverErrors.length) console.log(serverErrors.join('\n'));
});

describe('forged, unsigned and replayed receipts', () => {
  it('sandbox: unsigned and wrongly signed receipts are refused with 403 and store nothing; the real one is reported once', async () => {
    const sent = await postJson(gw, '/channels/sms/single', smsMessage('hostile-sbx'));
    expect(sent.status).toBe(200);
    const smsId: string = sent.json.sms_id;
    const body = JSON.stringify([{ sms_id: smsId, message_id: 'forged', status: 'failed' }]);
    expectRefused(await hit(gw.url, 'POST', '/dlr/sandbox', { headers: { 'content-type': 'application/json' }, body }), 'unsigned');
    expectRefused(
      await hit(gw.url, 'POST', '/dlr/sandbox', { headers: { 'content-type': 'application/json', 'x-sandbox-signature': 'f'.repeat(64) }, body }),
      'bad signature',
    );
    expectRefused(await hit(gw.url, 'POST', '/dlr/sandbox', { headers: sandboxReceiptHeaders(body, 'someone-elses-secret') }), 'another key');
    // Receipts come to the provider's name only; an alias path is no way around the signature.
    expectRefused(await hit(gw.url, 'POST', '/dlr/test', { headers: sandboxReceiptHeaders(body, 'someone-elses-secret') }), 'by alias path', 404);
    // (The sandbox's own receipt may already have come in meanwhile; none of the forged ones is stored.)
    if ((await receiptRows(smsId, 'failed')) !== 0) tally.forgedAccepted += 1;
    expect(await receiptRows(smsId, 'failed')).toBe(0);
    // The sandbox's own signed receipt still arrives and is the one reported.
    await waitFor(() => conversionsFor(smsId).length > 0, 10_000, 'the real sandbox receipt');
    await checkReported(smsId, 'delivered', 'sandbox message after forgeries');

    // A replay of a real (signed) receipt is acknowledged but stores and reports nothing new.
    const stored = await receiptRows(smsId);
    const replay = JSON.stringify([{ sms_id: smsId, message_id: (await messageRow(smsId)).provider_message_id, status: 'delivered' }]);
    for (let i = 0; i < 3; i++) expect((await hit(gw.url, 'POST', '/dlr/sandbox', { headers: sandboxReceiptHeaders(replay), body: replay })).status).toBe(200);
    if ((await receiptRows(smsId)) !== stored) tally.forgedAccepted += 1;
    expect(await receiptRows(smsId)).toBe(stored);
    await checkReported(smsId, 'delivered', 'sandbox message after replays');
  });

  it('twilio: unsigned and wrongly signed callbacks are refused; a replayed real one changes nothing', async () => {
    const sent = await postJson(gw, '/channels/sms/single', smsMessage('hostile-tw', { provider_name: 'twilio' }));
    expect(sent.status).toBe(200);
    const smsId: string = sent.json.sms_id;
    const create = twilio.creates.at(-1)!;
    const path = new URL(create.form.StatusCallback!).pathname + new URL(create.form.StatusCallback!).search;
    const before = await receiptRows(smsId);
    const forgedForm = new URLSearchParams(twilio.callbackParams(create, 'undelivered')).toString();
    expectRefused(await hit(gw.url, 'POST', path, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: forgedForm }), 'unsigned');
    tally.sent += 1;
    const wrongToken = await twilio.postStatusCallback(create.form.StatusCallback!, twilio.callbackParams(create, 'undelivered'), 'not-the-auth-token');
    if (wrongToken !== 403) tally.forgedAccepted += 1;
    expect(wrongToken).toBe(403);
    expect(await receiptRows(smsId)).toBe(before);

    tally.sent += 1;
    expect(await twilio.postStatusCallback(create.form.StatusCallback!, twilio.callbackParams(create, 'delivered'))).toBe(200);
    await waitFor(() => conversionsFor(smsId).length > 0, 10_000, 'the twilio conversion');
    const stored = await receiptRows(smsId);
    for (let i = 0; i < 3; i++) {
      tally.sent += 1;
      expect(await twilio.postStatusCallback(create.form.StatusCallback!, twilio.callbackParams(create, 'delivered'))).toBe(200);
    }
    if ((await receiptRows(smsId)) !== stored) tally.forgedAccepted += 1;
    expect(await receiptRows(smsId)).toBe(stored);
    await checkReported(smsId, 'delivered', 'twilio message');
  });

  it('vonage: unsigned, wrongly signed and stale receipts are refused; a replayed real one changes nothing', async () => {
    const sent = await postJson(gw, '/channels/sms/single', smsMessage('hostile-vn', { provider_name: 'vonage' }));
    expect(sent.status).toBe(200);
    const smsId: string = sent.json.sms_id;
    const submit = vonage.submits.at(-1)!;
    const forged = vonage.receiptFields(submit, 0, 'failed');
    const before = await receiptRows(smsId);
    const query = (params: Record<string, string>) => `/dlr/vonage?${new URLSearchParams(params)}`;
    expectRefused(await hit(gw.url, 'GET', query(vonage.signReceipt(forged, { transport: 'get', signatureSecret: null }))), 'unsigned');
    expectRefused(await hit(gw.url, 'GET', query(vonage.signReceipt(forged, { transport: 'get', signatureSecret: 'not-the-secret' }))), 'wrong secret');
    const stale = vonage.signReceipt(forged, { transport: 'get', timestamp: Math.floor(Date.now() / 1000) - 3_600 });
    expectRefused(await hit(gw.url, 'GET', query(stale)), 'an hour old');
    expectRefused(
      await hit(gw.url, 'POST', '/dlr/vonage', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(vonage.signReceipt(forged, { transport: 'json', signatureSecret: null })),
      }),
      'unsigned JSON',
    );
    expect(await receiptRows(smsId)).toBe(before);

    const real = vonage.signReceipt(vonage.receiptFields(submit, 0, 'delivered'), { transport: 'get' });
    expect((await hit(gw.url, 'GET', query(real))).status).toBe(200);
    await waitFor(() => conversionsFor(smsId).length > 0, 10_000, 'the vonage conversion');
    const stored = await receiptRows(smsId);
    for (let i = 0; i < 3; i++) expect((await hit(gw.url, 'GET', query(real))).status).toBe(200);
    if ((await receiptRows(smsId)) !== stored) tally.forgedAccepted += 1;
    expect(await receiptRows(smsId)).toBe(stored);
    await checkReported(smsId, 'delivered', 'vonage message');
  });

  it("infobip and sinch: a report without its URL token, or with another message's, is refused; a replayed real one changes nothing", async () => {
    for (const provider of ['infobip', 'sinch'] as const) {
      const [a, b] = [
        await postJson(gw, '/channels/sms/single', smsMessage(`hostile-${provider}-a`, { provider_name: provider })),
        await postJson(gw, '/channels/sms/single', smsMessage(`hostile-${provider}-b`, { provider_name: provider })),
      ];
      expect([a.status, b.status]).toEqual([200, 200]);
      const [smsA, smsB] = [a.json.sms_id as string, b.json.sms_id as string];
      const urlOf = (smsId: string) =>
        provider === 'infobip'
          ? infobip.sends.find((x) => x.callbackData === smsId)!.notifyUrl
          : sinch.batches.find((x) => x.clientReference === smsId)!.callbackUrl;
      const forgedBody =
        provider === 'infobip'
          ? { results: [infobip.result(infobip.sends.find((x) => x.callbackData === smsA)!, 'REJECTED_NETWORK')] }
          : sinch.report(sinch.batches.find((x) => x.clientReference === smsA)!, 'Rejected');
      const post = (url: string, body: unknown) => {
        const target = new URL(url);
        return hit(gw.url, 'POST', target.pathname + target.search, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      };
      const before = await receiptRows(smsA);
      expectRefused(await post(`${gw.url}/dlr/${provider}?sms_id=${smsA}`, forgedBody), `${provider} without token`);
      expectRefused(await post(urlOf(smsB).replace(smsB, smsA), forgedBody), `${provider} with another message's token`);
      expectRefused(await post(urlOf(smsB), forgedBody), `${provider} about another message`);
      expect(await receiptRows(smsA)).toBe(before);

      const realBody =
        provider === 'infobip'
          ? { results: [infobip.result(infobip.sends.find((x) => x.callbackData === smsA)!, 'DELIVERED_TO_HANDSET')] }
          : sinch.report(sinch.batches.find((x) => x.clientReference === smsA)!, 'Delivered');
      expect((await post(urlOf(smsA), realBody)).status).toBe(200);
      await waitFor(() => conversionsFor(smsA).length > 0, 10_000, `the ${provider} conversion`);
      const stored = await receiptRows(smsA);
      for (let i = 0; i < 3; i++) expect((await post(urlOf(smsA), realBody)).status).toBe(200);
      if ((await receiptRows(smsA)) !== stored) tally.forgedAccepted += 1;
      expect(await receiptRows(smsA)).toBe(stored);
      await checkReported(smsA, 'delivered', `${provider} message`);
    }
  });

  it('a genuine receipt never makes a send that provably failed (nothing sent) look submitted', async () => {
    const message = smsMessage('hostile-unsent', { recipient: '+447700900005' });
    expect((await postJson(gw, '/channels/sms/single', message, {}, true)).status).toBe(503);
    const smsId = (await gw.gateway.ledger.db.selectFrom('messages').select('sms_id').where('activity_key', '=', 'hostile-unsent').executeTakeFirstOrThrow())
      .sms_id;
    expect((await messageRow(smsId)).state).toBe('retryable');
    const body = JSON.stringify([{ sms_id: smsId, message_id: 'claimed', status: 'accepted' }]);
    expect((await hit(gw.url, 'POST', '/dlr/sandbox', { headers: sandboxReceiptHeaders(body), body })).status).toBe(200);
    const after = await messageRow(smsId);
    const retry = await postJson(gw, '/channels/sms/single', message, {}, true);
    // The CRM's retry must not be told `successful` for an SMS that was never handed to the provider.
    if (after.state !== 'retryable' || retry.status === 200) tally.lostOrMisreported += 1;
    expect(after.state).toBe('retryable');
    expect(retry.status).toBe(503);
  });
});

describe('names every object inherits', () => {
  /** Every route, with the prototype name `name` put where outside text goes: path segment, query, field, status. */
  function requestsWith(name: string, smsIds: { sandbox: string }): Array<{ method: string; path: string; headers?: Record<string, string>; body?: string }> {
    const enc = encodeURIComponent(name);
    const json = (body: unknown, headers: Record<string, string> = {}) => ({
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, ...headers },
      body: JSON.stringify(body),
    });
    const withKey = (base: Record<string, unknown>) => JSON.parse(`{${JSON.stringify(name)}: {"x": 1}, ${JSON.stringify(base).slice(1)}`) as unknown;
    const receipt = JSON.stringify([{ sms_id: smsIds.sandbox, message_id: name, status: name }]);
    return [
      { method: 'POST', path: '/channels/sms/single', ...json(smsMessage(`proto-${name}-a`, { provider_name: name })) },
      { method: 'POST', path: '/channels/sms/single', ...json(withKey(smsMessage(`proto-${name}-b`))) },
      {
        method: 'POST',
        path: '/channels/sms/single',
        ...json(smsMessage(`proto-${name}-c`, { activity: withKey({ id: `proto-${name}-c`, brand_id: 1, user_id: 'u' }), encoding: name })),
      },
      {
        method: 'POST',
        path: '/channels/sms/batch',
        ...json([smsMessage(`proto-${name}-d`, { provider_name: name }), withKey(smsMessage(`proto-${name}-e`))]),
      },
      { method: 'POST', path: `/dlr/${enc}`, ...json([{ sms_id: name, status: name }]) },
      { method: 'GET', path: `/dlr/${enc}?${enc}=${enc}` },
      { method: 'POST', path: '/dlr/sandbox', headers: sandboxReceiptHeaders(receipt), body: receipt },
      {
        method: 'POST',
        path: `/dlr/sandbox?sms_id=${enc}`,
        headers: { ...sandboxReceiptHeaders(receipt), [name.replace(/[^a-z_]/gi, '') || 'x']: name },
        body: receipt,
      },
      {
        method: 'GET',
        path: `/dlr/vonage?${new URLSearchParams(vonage.signReceipt({ messageId: name, status: name, 'client-ref': name, 'err-code': name, [name]: name }, { transport: 'get' }))}`,
      },
      {
        method: 'POST',
        path: '/dlr/twilio',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': name },
        body: `${enc}=${enc}&MessageStatus=${enc}`,
      },
      { method: 'GET', path: `/admin/messages/${enc}`, headers: admin },
      { method: 'GET', path: `/admin/messages?activity_id=${enc}&${enc}=1`, headers: admin },
      { method: 'POST', path: '/admin/conversions/replay', ...json(withKey({ ids: [name] }), admin) },
      { method: 'GET', path: `/userdetails/${enc}`, headers: { 'x-api-key': TEST_API_KEY } },
      { method: 'GET', path: `/userconsents/${enc}`, headers: { 'x-api-key': TEST_API_KEY } },
      { method: 'POST', path: `/userconsents/${enc}`, ...json(withKey({ consents: [{ type: name, opted_in: true }] })) },
      { method: 'GET', path: `/userblocks/${enc}`, headers: { 'x-api-key': TEST_API_KEY } },
      {
        method: 'POST',
        path: '/bonus/credit',
        ...json(withKey({ user_id: name, bonus_code: name }), { 'x-crm-activityid': name, 'x-crm-actionid': name, 'x-crm-triggerhash': name }),
      },
      { method: 'POST', path: '/bonus/credit/funds', ...json({ user_id: name, bonus_code: name, amount: 1, currency: name }) },
      { method: 'POST', path: '/reconciliation', ...json(withKey({ field: name })) },
      { method: 'PUT', path: `/admin/users/${enc}`, ...json(withKey(sampleUser(name)), admin) },
      { method: 'PUT', path: `/admin/users/${enc}/consents`, ...json({ consents: [{ type: name, opted_in: true }] }, admin) },
      { method: 'PUT', path: '/admin/bonuses', ...json([{ text: name, value: name }], admin) },
      { method: 'GET', path: `/admin/credits?user_id=${enc}`, headers: admin },
      { method: 'POST', path: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `${enc}=${enc}&grant_type=${enc}` },
      { method: 'POST', path: '/console/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `${enc}=${enc}&key=${enc}` },
      { method: 'GET', path: `/console?q=${enc}` },
      { method: 'GET', path: `/metrics?${enc}=1`, headers: admin },
      { method: 'GET', path: `/openapi.json?${enc}=1` },
      { method: 'GET', path: `/${enc}` },
      { method: 'PATCH', path: `/channels/sms/single?${enc}=1`, headers: { 'x-api-key': TEST_API_KEY } },
    ];
  }

  it('as a status, a provider name, a field or a path segment, on every route: never a 5xx, and the server keeps answering', async () => {
    const target = await postJson(gw, '/channels/sms/single', smsMessage('proto-target'));
    expect(target.status).toBe(200);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PROTOTYPE_NAMES), async (name) => {
        for (const request of requestsWith(name, { sandbox: target.json.sms_id })) {
          const answer = await hit(gw.url, request.method, request.path, { headers: request.headers, body: request.body });
          const where = `${request.method} ${request.path} with ${name}: ${answer.text.slice(0, 200)}`;
          if (isUnknownReconciliationField(request.path, answer.status))
            expect(answer.json.error, where).toContain(`field: ${JSON.stringify(name)} is not implemented`);
          else expect(answer.status, where).toBeLessThan(500);
        }
      }),
      // Every name at least once (constantFrom draws each of them early; the examples add the rest for certain).
      { numRuns: PROTOTYPE_NAMES.length * 2, examples: PROTOTYPE_NAMES.map((n) => [n] as [string]) },
    );
    expect((await hit(gw.url, 'GET', '/readyz')).status).toBe(200);
  }, 180_000);

  it('as keys of arbitrary JSON bodies to every JSON route: never a 5xx', async () => {
    const routes = [
      '/channels/sms/single',
      '/channels/sms/batch',
      '/bonus/credit',
      '/bonus/credit/funds',
      '/reconciliation',
      '/reconciliation/products',
      '/authenticate',
      '/userconsents/u-1',
      '/admin/conversions/replay',
      '/admin/credits/replay',
    ];
    const key = fc.oneof(
      fc.constantFrom(...PROTOTYPE_NAMES),
      fc.constantFrom('activity', 'id', 'content', 'recipient', 'provider_name', 'user_id', 'field', 'consents', 'ids'),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 1 }),
        fc.constantFrom(...PROTOTYPE_NAMES),
        fc.dictionary(key, tie('node'), { maxKeys: 4 }),
        fc.array(tie('node'), { maxLength: 3 }),
      ),
    })).node;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), fc.dictionary(key, value, { maxKeys: 6 }), async (route, body) => {
        const answer = await postJson(gw, route, route.endsWith('batch') ? [body] : body, admin);
        if (!isUnknownReconciliationField(route, answer.status))
          expect(answer.status, `${route} ${JSON.stringify(body)}: ${answer.text.slice(0, 200)}`).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it('the receipt with a prototype name as status left the message with one report, of an unknown status', async () => {
    const row = await gw.gateway.ledger.db.selectFrom('messages').select(['sms_id']).where('activity_key', '=', 'proto-target').executeTakeFirstOrThrow();
    // Unknown sandbox statuses are delivery_unknown; the sandbox's own later `delivered` replaces nothing (first wins).
    await waitFor(() => conversionsFor(row.sms_id).length > 0, 10_000, 'the conversion');
    const stored = (await messageRow(row.sms_id)).delivery_status;
    expect(['delivery_unknown', 'delivered']).toContain(stored);
    await checkReported(row.sms_id, stored, 'message that got prototype-named statuses');
  });
});

describe('a known path with another method', () => {
  it.each([
    ['DELETE', '/channels/sms/single', 'POST'],
    ['PUT', '/healthz', 'GET, HEAD'],
    ['DELETE', '/admin/messages/abc', 'GET, HEAD'],
  ])('%s %s answers 405 with Allow: %s', async (method, path, allow) => {
    // With credentials: an unauthenticated caller learns nothing about the routes (401 comes first).
    const answer = await hit(gw.url, method, path, { headers: { 'x-api-key': TEST_API_KEY, ...admin } });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe(allow);
    expect(answer.json.error).toMatch(/not allowed/);
    expect((await hit(gw.url, 'GET', '/no/such/path')).status).toBe(404);
  });
});

describe('failed authentications', () => {
  const BUDGET = 4;
  const OAUTH = { client_id: 'hostile-crm', client_secret: 'hostile-client-secret-0123456789abcdef' };
  let clock = Date.parse('2026-11-24T04:00:00Z');
  let limited: TestGateway;
  beforeAll(async () => {
    limited = await startTestGateway({ auth: { mode: 'oauth', oauth: OAUTH, failure_budget: BUDGET, failure_window: '1m' } }, { now: () => clock });
  });
  afterAll(async () => limited?.close());

  const form = (fields: Record<string, string>) => ({
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  const token = async () => (await hit(limited.url, 'POST', '/oauth/token', form({ ...OAUTH, grant_type: 'client_credentials' }))).json.access_token as string;

  let sends = 0;
  const sms = (key: string, path = '/channels/sms/batch') =>
    hit(limited.url, 'POST', path, {
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(path.endsWith('batch') ? [smsMessage(`auth-${++sends}`)] : smsMessage(`auth-${++sends}`)),
      transient: true,
    });

  /** Each credential check: a failing attempt, and the same request with the right credential. */
  const checks: Array<[string, () => Promise<Answer>, () => Promise<Answer>]> = [
    ['the SMS key', () => sms('guess'), () => sms(TEST_API_KEY)],
    [
      'the admin Bearer key',
      () => hit(limited.url, 'GET', '/admin/credits?user_id=u', { headers: { authorization: 'Bearer guess' } }),
      () => hit(limited.url, 'GET', '/admin/credits?user_id=u', { headers: admin }),
    ],
    [
      'the OAuth token endpoint',
      () => hit(limited.url, 'POST', '/oauth/token', form({ ...OAUTH, client_secret: 'guess', grant_type: 'client_credentials' })),
      () => hit(limited.url, 'POST', '/oauth/token', form({ ...OAUTH, grant_type: 'client_credentials' })),
    ],
    [
      'the operator Bearer token',
      () => hit(limited.url, 'GET', '/bonus/list', { headers: { authorization: 'Bearer guess.guess.guess' } }),
      async () => hit(limited.url, 'GET', '/bonus/list', { headers: { authorization: `Bearer ${await token()}` } }),
    ],
    [
      'console sign-in',
      () => hit(limited.url, 'POST', '/console/login', form({ key: 'guess' })),
      () => hit(limited.url, 'POST', '/console/login', form({ key: TEST_ADMIN_KEY })),
    ],
  ];

  it.each(checks)('%s: past the budget the right credential too gets 429 with Retry-After, until the window ends', async (_label, fail, succeed) => {
    clock += 3_600_000; // a fresh window
    const good = await succeed();
    expect(good.status).toBeLessThan(400);
    for (let i = 0; i < BUDGET; i++) expect((await fail()).status).toBe(401);
    const refused = await succeed();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBe(60);
    expect(refused.json.error).toMatch(/too many failed authentications/);
    expect((await hit(limited.url, 'GET', '/healthz')).status).toBe(200);
    clock += 30_000;
    expect(Number((await succeed()).headers.get('retry-after'))).toBe(30);
    clock += 30_000;
    expect((await succeed()).status).toBeLessThan(400);
  });

  it('the single send answers 503 with Retry-After instead, since the CRM drops a single answered 4xx and retries a 5xx', async () => {
    clock += 3_600_000;
    for (let i = 0; i < BUDGET; i++) expect((await sms('guess', '/channels/sms/single')).status).toBe(401);
    const refused = await sms(TEST_API_KEY, '/channels/sms/single');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect((await sms(TEST_API_KEY)).status).toBe(429);
    clock += 60_000;
    expect((await sms(TEST_API_KEY, '/channels/sms/single')).status).toBe(200);
  });
});

describe('console sessions', () => {
  async function signIn(target: TestGateway) {
    const login = await hit(target.url, 'POST', '/console/login', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `key=${TEST_ADMIN_KEY}`,
    });
    const setCookie = login.headers.get('set-cookie')!;
    const cookie = setCookie.split(';')[0]!;
    const page = await hit(target.url, 'GET', '/console', { headers: { cookie } });
    return { setCookie, cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page.text)![1]! };
  }

  it('sign-out ends the session on the server: the old cookie no longer opens the console, also after a restart', async () => {
    const session = await signIn(gw);
    const other = await signIn(gw);
    const out = await hit(gw.url, 'POST', '/console/logout', {
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: `csrf=${session.csrf}`,
    });
    expect(out.status).toBe(303);
    const again = await hit(gw.url, 'GET', '/console', { headers: { cookie: session.cookie } });
    expect(again.text).not.toContain('name="csrf"');
    const replay = await hit(gw.url, 'POST', '/console/replay', {
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: `csrf=${session.csrf}`,
    });
    expect(replay.status).toBe(401);
    // Another session is untouched.
    expect((await hit(gw.url, 'GET', '/console', { headers: { cookie: other.cookie } })).text).toContain('name="csrf"');
  });

  it('a revoked session stays revoked after a restart on the same ledger', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-hostile-'));
    const first = await startTestGateway({}, { dir });
    const session = await signIn(first);
    expect(
      (
        await hit(first.url, 'POST', '/console/logout', {
          headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body: `csrf=${session.csrf}`,
        })
      ).status,
    ).toBe(303);
    await first.close();
    const second = await startTestGateway({}, { dir });
    try {
      expect((await hit(second.url, 'GET', '/console', { headers: { cookie: session.cookie } })).text).not.toContain('name="csrf"');
    } finally {
      await second.close();
      await dropTestDatabase(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the session cookie is Secure in production, and not over plain HTTP in development', async () => {
    const production = await startTestGateway({ server: { environment: 'production' } });
    try {
      expect((await signIn(production)).setCookie).toMatch(/;\s*Secure/i);
    } finally {
      await production.close();
    }
    expect((await signIn(gw)).setCookie).not.toMatch(/;\s*Secure/i);
  });
});

describe('server timeouts', () => {
  it('cuts off an upload that trickles in one byte at a time, and keeps answering others', async () => {
    const slow = await startTestGateway({ server: { request_timeout: '1s', headers_timeout: '1s' } });
    try {
      const { hostname, port } = new URL(slow.url);
      const socket = connect(Number(port), hostname);
      const started = Date.now();
      let answer = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      // The server may reset the connection while a drip is in flight (the answer is then empty, as expected below):
      // without a listener that reset would be an uncaught error of the whole run.
      socket.on('error', () => undefined);
      socket.write(
        `POST /channels/sms/single HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Api-Key: ${TEST_API_KEY}\r\nContent-Length: 1000\r\n\r\n`,
      );
      tally.sent += 1;
      const drip = setInterval(() => socket.writable && socket.write('{'), 200);
      await closed;
      clearInterval(drip);
      const heldMs = Date.now() - started;
      expect(heldMs).toBeLessThan(4_000);
      expect(answer).toMatch(/^HTTP\/1\.1 408|^$/);
      expect((await hit(slow.url, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await slow.close();
    }
  });
});

/** Ties the figures to the ledger once more at the end: every real message is reported exactly once. */
describe('the closing count', () => {
  it('no 5xx and no forged receipt accepted in the whole suite', () => {
    expect(serverErrors).toEqual([]);
    expect(tally.forgedAccepted).toBe(0);
    expect(tally.lostOrMisreported).toBe(0);
    expect(tally.sent).toBeGreaterThan(PROTOTYPE_NAMES.length * 30);
  });
});
