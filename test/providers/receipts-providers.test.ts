/**
 * Receipts end to end: the fakes post signed receipts to the real gateway's /dlr/{provider}; the ledger moves the
 * message forward and the CRM fake gets one conversion per message. Covers receipts that beat the provider's
 * answer to the send, and Vonage's per-part receipts rolled up into one status (docs/providers.md §4.2).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { startTwilioFake, type TwilioFake, type TwilioFakeOptions, type TwilioSigning } from '../fakes/twilio.js';
import { startVonageFake, type VonageFake, type VonageFakeOptions } from '../fakes/vonage.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
const SECRET = 'vonage-signature-secret';
let gw: TestGateway;
let twilio: TwilioFake;
let vonage: VonageFake;

async function start(
  twilioOptions: TwilioFakeOptions = {},
  vonageOptions: VonageFakeOptions = {},
  sms: Record<string, unknown> = {},
  extra: { twilio?: Record<string, unknown>; publicUrl?: string } = {},
) {
  twilio = await startTwilioFake(twilioOptions);
  vonage = await startVonageFake({ signatureSecret: SECRET, signatureMethod: 'md5hash', ...vonageOptions });
  gw = await startTestGateway({
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
    ...(Object.keys(sms).length ? { sms } : {}),
    ...(extra.publicUrl ? { server: { public_url: extra.publicUrl } } : {}),
    providers: {
      twilio: {
        type: 'twilio',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        from: '+15005550006',
        base_url: twilio.url,
        ...extra.twilio,
      },
      vonage: { type: 'vonage', api_key: vonage.apiKey, api_secret: vonage.apiSecret, base_url: vonage.url, signature_secret: SECRET },
    },
  });
}

const conversionsFor = (smsId: string) => crm.conversions.filter((c) => c.sms_id === smsId);
const story = async (smsId: string) => (await gw.get(`/admin/messages/${smsId}`, { authorization: `Bearer ${TEST_ADMIN_KEY}` })).json;

beforeAll(async () => {
  await crm.start();
});
afterAll(async () => crm.stop());
afterEach(async () => {
  await gw?.close();
  await twilio?.close();
  await vonage?.close();
  crm.reset();
});

describe('twilio status callbacks into the ledger', () => {
  it('reports delivered once after sent and delivered callbacks, and refuses a forged one with 403', async () => {
    await start({ callbackStatuses: ['sent', 'delivered'] });
    const sent = await gw.post('/channels/sms/single', smsMessage('tw-dlr', { provider_name: 'twilio' }));
    expect(sent.status).toBe(200);
    const [conversion] = await waitFor(() => (conversionsFor(sent.json.sms_id).length > 0 ? conversionsFor(sent.json.sms_id) : undefined));
    expect(conversion).toMatchObject({ sms_id: sent.json.sms_id, delivery_status: 'delivered' });
    expect(twilio.callbacks.map((c) => c.status)).toEqual([200, 200]);

    const create = twilio.creates.at(-1)!;
    const forged = await twilio.postStatusCallback(create.form.StatusCallback!, twilio.callbackParams(create, 'undelivered'), 'not-the-auth-token');
    expect(forged).toBe(403);
    expect((await story(sent.json.sms_id)).message.delivery_status).toBe('delivered');
  });

  it('a 500 for a message Twilio created anyway: its callback proves acceptance, so the CRM retry sends nothing', async () => {
    await start({ callbackStatuses: ['sent'] });
    const message = smsMessage('tw-ambiguous', { provider_name: 'twilio', recipient: '+15005550502' });
    const first = await gw.post('/channels/sms/single', message);
    expect(first.status).toBe(503);
    await waitFor(() => twilio.callbacks.length === 1);
    const retry = await gw.post('/channels/sms/single', message);
    expect(retry.status).toBe(200);
    expect(twilio.creates.filter((c) => c.form.To === '+15005550502')).toHaveLength(1);
    const { message: row } = await story(retry.json.sms_id);
    expect(row).toMatchObject({ state: 'submitted', provider_message_id: twilio.creates.at(-1)!.sid, error: null, attempts: 1 });
  });

  it('a 500 with no callback: retries wait sms.ambiguous_retry_after for a receipt, then send again', async () => {
    await start({ callbackStatuses: [] }, {}, { ambiguous_retry_after: '300ms' });
    const message = smsMessage('tw-500-retry', { provider_name: 'twilio', recipient: '+15005550500' });
    const creates = () => twilio.creates.filter((c) => c.form.To === '+15005550500').length;
    expect((await gw.post('/channels/sms/single', message)).status).toBe(503);
    const soon = await gw.post('/channels/sms/single', message);
    expect(soon).toMatchObject({ status: 503, json: { error: expect.stringContaining('waiting for a receipt') } });
    expect(creates()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect((await gw.post('/channels/sms/single', message)).status).toBe(503);
    expect(creates()).toBe(2);
  });

  it('a 429 sent nothing: the retry sends again at once', async () => {
    await start({ callbackStatuses: [] });
    const message = smsMessage('tw-429-retry', { provider_name: 'twilio', recipient: '+15005550429' });
    expect((await gw.post('/channels/sms/single', message)).status).toBe(503);
    expect((await gw.post('/channels/sms/single', message)).status).toBe(503);
    expect(twilio.creates.filter((c) => c.form.To === '+15005550429')).toHaveLength(2);
  });

  it('a callback that arrives before the create call answers is matched by the sms_id in its URL', async () => {
    await start({ callbackStatuses: ['undelivered'], callbacksBeforeAnswer: true });
    const sent = await gw.post('/channels/sms/single', smsMessage('tw-early', { provider_name: 'twilio' }));
    expect(sent.status).toBe(200);
    expect(twilio.callbacks).toHaveLength(1); // posted, and answered, before the 201
    const [conversion] = await waitFor(() => (conversionsFor(sent.json.sms_id).length > 0 ? conversionsFor(sent.json.sms_id) : undefined));
    expect(conversion).toMatchObject({ delivery_status: 'undelivered' });
    const message = (await story(sent.json.sms_id)).message;
    expect(message).toMatchObject({ state: 'submitted', provider_message_id: twilio.creates.at(-1)!.sid });
  });
});

/**
 * Every signature Twilio's own documents and SDK allow, made with twilio-node's signer and posted to the real
 * gateway: the URL as we handed it out (fragment `#rc=5&rp=all` included) or without the fragment, each with and
 * without the default port; a Webhooks Rule's shared key under HMAC-SHA256; JSON bodies with bodySHA256. The public
 * URL is an https one without a port (as Twilio is given it); a load balancer (deliverTo) carries the request to us.
 */
describe('twilio signatures, every documented way, on the real server', () => {
  const PUBLIC = 'https://gw.example';
  const SHARED = { id: 'webhooks_sharedkey_01jx0000000000000000000000', secret: 'a-shared-key-secret' };
  const viaBalancer = () => (url: string) => url.replace(PUBLIC, gw.url);

  it.each<[string, TwilioSigning]>([
    ['without the fragment, without the port', {}],
    ['without the fragment, with :443', { defaultPort: true }],
    ['with the fragment, without the port', { fragment: true }],
    ['with the fragment and :443', { fragment: true, defaultPort: true }],
    ["with a Webhooks Rule's shared key (HMAC-SHA256), the fragment and :443", { fragment: true, defaultPort: true, sharedKey: SHARED }],
    ['as a JSON body with bodySHA256, the fragment included', { fragment: true, json: true }],
    ['as a JSON body with bodySHA256 under the shared key, no fragment', { json: true, sharedKey: SHARED }],
  ])('a status callback signed %s is taken', async (_label, signing) => {
    let balancer: (url: string) => string = (url) => url;
    await start(
      { callbackStatuses: ['delivered'], signing, deliverTo: (url) => balancer(url) },
      {},
      {},
      { publicUrl: PUBLIC, twilio: { webhook_shared_keys: { [SHARED.id]: SHARED.secret } } },
    );
    balancer = viaBalancer();
    const sent = await gw.post('/channels/sms/single', smsMessage(`tw-sig-${Math.random()}`, { provider_name: 'twilio' }));
    expect(sent.status).toBe(200);
    expect(twilio.creates.at(-1)!.form.StatusCallback).toBe(`${PUBLIC}/dlr/twilio?sms_id=${sent.json.sms_id}#rc=5&rp=all`);
    const [conversion] = await waitFor(() => (conversionsFor(sent.json.sms_id).length > 0 ? conversionsFor(sent.json.sms_id) : undefined));
    expect(conversion).toMatchObject({ delivery_status: 'delivered' });
    expect(twilio.callbacks.map((c) => c.status)).toEqual([200]);

    // An inbound message to a URL set in Twilio's console with the same overrides, signed the same way.
    const inbound = await twilio.postInbound(`${PUBLIC}/mo/twilio#rc=5&rp=all`, { from: '+447700900555', to: '+15005550006', body: 'hello' });
    expect(inbound.status).toBe(200);
    // Only the fragment of status_callback_retries (5) is computed: another count is one more HMAC per forged callback.
    if (signing.fragment && !signing.json) {
      const other = await twilio.postInbound(`${PUBLIC}/mo/twilio#rc=3&rp=all`, { from: '+447700900555', to: '+15005550006', body: 'hello' });
      expect(other.status).toBe(403);
    }
    // The same callback signed over another sms_id is refused: the signature still covers the URL.
    const create = twilio.creates.at(-1)!;
    const forged = await twilio.postStatusCallback(
      `${PUBLIC}/dlr/twilio?sms_id=someone-else#rc=5&rp=all`,
      twilio.callbackParams(create, 'failed'),
      'not-the-token',
    );
    expect(forged).toBe(403);
  });

  it("refuses with 403, naming the key, a callback signed with a Webhooks Rule's shared key the gateway was not given", async () => {
    let balancer: (url: string) => string = (url) => url;
    await start({ callbackStatuses: ['delivered'], signing: { sharedKey: SHARED }, deliverTo: (url) => balancer(url) }, {}, {}, { publicUrl: PUBLIC });
    balancer = viaBalancer();
    const sent = await gw.post('/channels/sms/single', smsMessage('tw-sig-nokey', { provider_name: 'twilio' }));
    await waitFor(() => twilio.callbacks.length > 0);
    expect(twilio.callbacks.map((c) => c.status)).toEqual([403]);
    const res = await fetch(`${gw.url}/dlr/twilio?sms_id=${sent.json.sms_id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': 'x',
        'x-twilio-webhooks-signature-settings': `key=${SHARED.id},algorithm=HMAC_SHA256`,
      },
      body: 'MessageStatus=delivered',
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: string }).error).toContain(SHARED.id);
    expect(conversionsFor(sent.json.sms_id)).toEqual([]);
  });
});

describe('vonage per-part receipts into the ledger', () => {
  const longText = 'word '.repeat(80); // 400 GSM-7 characters: 3 parts

  it('reports delivered only when every part is delivered', async () => {
    await start();
    const sent = await gw.post('/channels/sms/single', smsMessage('vo-parts', { provider_name: 'vonage', content: longText }));
    expect(sent.status).toBe(200);
    const submit = vonage.submits.at(-1)!;
    expect(submit.messageIds).toHaveLength(3);
    const receipt = (part: number, status: string, transport: 'get' | 'form' | 'json') =>
      vonage.sendReceipt(`${gw.gateway.publicUrl}/dlr/vonage`, vonage.receiptFields(submit, part, status), { transport });

    expect(await receipt(0, 'delivered', 'get')).toBe(200);
    expect(await receipt(2, 'accepted', 'form')).toBe(200);
    expect(await receipt(2, 'delivered', 'json')).toBe(200);
    expect(await receipt(0, 'delivered', 'get')).toBe(200); // a duplicate
    expect((await story(sent.json.sms_id)).message.delivery_status).toBeNull();
    expect(await receipt(1, 'delivered', 'form')).toBe(200);
    const [conversion] = await waitFor(() => (conversionsFor(sent.json.sms_id).length > 0 ? conversionsFor(sent.json.sms_id) : undefined));
    expect(conversion).toMatchObject({ delivery_status: 'delivered' });
  });

  it("reports a failed part at once as the message's status, and later parts change nothing", async () => {
    await start();
    const sent = await gw.post('/channels/sms/single', smsMessage('vo-part-failed', { provider_name: 'vonage', content: longText }));
    const submit = vonage.submits.at(-1)!;
    const receipt = (part: number, status: string) =>
      vonage.sendReceipt(`${gw.gateway.publicUrl}/dlr/vonage`, vonage.receiptFields(submit, part, status, '2'), { transport: 'json' });
    await receipt(1, 'failed');
    await waitFor(() => conversionsFor(sent.json.sms_id).length > 0);
    await receipt(0, 'delivered');
    await receipt(2, 'delivered');
    await gw.gateway.sweep();
    expect(conversionsFor(sent.json.sms_id)).toEqual([expect.objectContaining({ delivery_status: 'undelivered' })]);
  });

  it.each([
    [['delivered'], 'delivered'],
    [['delivered', 'expired', 'delivered'], 'undelivered'],
  ])('rolls up per-part receipts %j that arrive before the submit answers into %s, using the segment count', async (statuses, expected) => {
    await start({}, { autoReceipts: { statuses, transport: 'form', beforeAnswer: true } });
    const sent = await gw.post('/channels/sms/single', smsMessage('vo-early', { provider_name: 'vonage', content: longText }));
    expect(sent.status).toBe(200);
    const [conversion] = await waitFor(() => (conversionsFor(sent.json.sms_id).length > 0 ? conversionsFor(sent.json.sms_id) : undefined));
    expect(conversion).toMatchObject({ delivery_status: expected });
    expect((await story(sent.json.sms_id)).receipts).toHaveLength(3);
    await gw.gateway.sweep();
    expect(conversionsFor(sent.json.sms_id)).toHaveLength(1);
  });

  it('refuses unsigned and stale receipts with 403 when signature_secret is set', async () => {
    await start();
    const sent = await gw.post('/channels/sms/single', smsMessage('vo-unsigned', { provider_name: 'vonage' }));
    const submit = vonage.submits.at(-1)!;
    const url = `${gw.gateway.publicUrl}/dlr/vonage`;
    expect(await vonage.sendReceipt(url, vonage.receiptFields(submit, 0, 'delivered'), { transport: 'get', signatureSecret: null })).toBe(403);
    expect(
      await vonage.sendReceipt(url, vonage.receiptFields(submit, 0, 'delivered'), { transport: 'json', timestamp: Math.floor(Date.now() / 1000) - 900 }),
    ).toBe(403);
    expect((await story(sent.json.sms_id)).receipts).toHaveLength(0);
  });
});
