/**
 * STOP and START by inbound SMS from the Twilio and Vonage fakes (signed as the providers sign, and forged), and
 * Twilio's 21610 at send, against the real server on the sql backend: the players with the sender's number are
 * opted out or back in, a User Consents event is in the outbox, GET /userconsents shows it at once, the next send
 * is refused, every inbound message is kept once, and nothing is stored for a refused webhook.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startVonageFake, type ReceiptTransport, type VonageFake } from '../fakes/vonage.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';

const VONAGE_SECRET = 'vonage-signing-secret';
const OUR_NUMBER = '+447700900999';
const SANDBOX_SECRET = 'sandbox-receipt-secret';

let gw: TestGateway;
let twilio: TwilioFake;
let vonage: VonageFake;

beforeAll(async () => {
  twilio = await startTwilioFake();
  vonage = await startVonageFake({ signatureSecret: VONAGE_SECRET, signatureMethod: 'sha256' });
  gw = await startTestGateway({
    providers: {
      tw: { type: 'twilio', base_url: twilio.url, account_sid: twilio.accountSid, auth_token: twilio.authToken, from: OUR_NUMBER },
      sb: { type: 'sandbox', receipt_secret: SANDBOX_SECRET, dlr_delay_ms: 0 },
      vg: {
        type: 'vonage',
        base_url: vonage.url,
        api_key: vonage.apiKey,
        api_secret: vonage.apiSecret,
        from: 'Casino',
        signature_secret: VONAGE_SECRET,
        signature_method: 'sha256',
      },
    },
  });
});
afterAll(async () => {
  await gw.close();
  await twilio.close();
  await vonage.close();
});

/** Two accounts on one phone, one on another, each opted in, stored with national and international spellings. */
beforeEach(async () => {
  const players: Array<[string, string, string]> = [
    ['tony', '+44', '07700 900111'],
    ['tony-2', '', '+447700900111'],
    ['other', '+44', '7700900222'],
  ];
  for (const [id, prefix, mobile] of players) {
    expect(
      (
        await gw.adminPut(
          `/admin/users/${id}`,
          sampleUser(id, {
            mobile_prefix: prefix,
            mobile,
            origin: 'brand-1',
            consents: [{ type: 'sms', opted_in: true }],
            consents_updated_at: new Date().toISOString(),
          }),
        )
      ).status,
    ).toBeLessThan(300);
  }
});

const db = () => gw.gateway.ledger.db;
const smsConsent = async (userId: string) =>
  (await gw.get(`/userconsents/${userId}`)).json.consents.find((c: { type: string }) => c.type === 'sms').opted_in as boolean;
const consentEvents = (userId: string) =>
  db().selectFrom('crm_events').selectAll().where('user_id', '=', userId).where('type', '=', 'USER_CONSENTS_V2').execute();
const inboundCount = async () =>
  Number(
    (
      await db()
        .selectFrom('inbound_messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const send = (id: string, userId: string, provider = 'tw') =>
  gw.post('/channels/sms/single', smsMessage(id, { provider_name: provider, activity: { id, user_id: userId } }));

describe('Twilio Messaging webhook at /mo/{provider}', () => {
  it("opts every player with the sender's number out on STOP, answers empty TwiML and queues a User Consents event each", async () => {
    const before = (await consentEvents('tony')).length;
    const res = await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900111', to: OUR_NUMBER, body: ' stop ' });
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/^text\/xml/);
    expect(res.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
    expect(await smsConsent('tony')).toBe(false);
    expect(await smsConsent('tony-2')).toBe(false);
    expect(await smsConsent('other')).toBe(true);
    const events = await consentEvents('tony');
    expect(events.length).toBe(before + 1);
    expect(JSON.parse(events.at(-1)!.payload_json)).toMatchObject({ user_id: 'tony', origin: 'brand-1' });
    expect(events.at(-1)).toMatchObject({ method: 'PUT', path: '/v2/integration/user/consents' });
    // The next send to the player is refused by sms.suppression.
    const refused = await send('after-stop', 'tony');
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe('recipient: player "tony" has opted out of sms');
  });

  it('opts them back in on START', async () => {
    await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900111', to: OUR_NUMBER, body: 'STOP' });
    expect(await smsConsent('tony')).toBe(false);
    expect((await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900111', to: OUR_NUMBER, body: 'Start' })).status).toBe(200);
    expect(await smsConsent('tony')).toBe(true);
    expect((await send('after-start', 'tony')).status).toBe(200);
  });

  it('keeps every inbound message once (a Twilio retry changes nothing), without its text by default', async () => {
    const sid = 'SM' + 'a'.repeat(32);
    const events = (await consentEvents('other')).length;
    const stored = await inboundCount();
    for (let i = 0; i < 2; i++)
      expect((await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900222', to: OUR_NUMBER, body: 'STOP', sid })).status).toBe(200);
    expect(await inboundCount()).toBe(stored + 1);
    expect((await consentEvents('other')).length).toBe(events + 1);
    const row = await db().selectFrom('inbound_messages').selectAll().where('provider_message_id', '=', sid).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ provider: 'tw', from_number: '+447700900222', to_number: OUR_NUMBER, content: null, action: 'opt_out' });
    expect(JSON.parse(row.matched_user_ids)).toEqual(['other']);
  });

  it('queues no second event for a second STOP, which changes nothing the CRM sees', async () => {
    const before = (await consentEvents('other')).length;
    for (let i = 0; i < 2; i++) expect((await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900222', to: OUR_NUMBER, body: 'STOP' })).status).toBe(200);
    expect((await consentEvents('other')).length).toBe(before + 1);
    expect(await smsConsent('other')).toBe(false);
  });

  it('shows operators what a number sent, newest first, at /admin/inbound-messages', async () => {
    await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900333', to: OUR_NUMBER, body: 'STOP' });
    await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900333', to: OUR_NUMBER, body: 'hello' });
    const res = await fetch(`${gw.url}/admin/inbound-messages?from=%2B447700900333`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    expect(res.status).toBe(200);
    const { messages } = (await res.json()) as { messages: Array<Record<string, unknown>> };
    expect(messages.map((m) => m.action)).toEqual([null, 'opt_out']);
    expect(messages[1]).toMatchObject({
      provider: 'tw',
      from_number: '+447700900333',
      content: null,
      matched_user_ids: [],
      received_at: expect.stringMatching(/Z$/),
    });
  });

  it('keeps a message that is no keyword and changes nobody', async () => {
    const stored = await inboundCount();
    expect((await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900111', to: OUR_NUMBER, body: 'please stop the emails' })).status).toBe(200);
    expect(await inboundCount()).toBe(stored + 1);
    expect(await smsConsent('tony')).toBe(true);
  });

  it.each([
    ['signed with another auth token', 'not-the-token'],
    ['unsigned', null],
  ])('refuses a STOP %s with 403 and stores nothing', async (_label, token) => {
    const stored = await inboundCount();
    const res = await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900111', to: OUR_NUMBER, body: 'STOP' }, token);
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text).error).toMatch(/X-Twilio-Signature/);
    expect(await inboundCount()).toBe(stored);
    expect(await smsConsent('tony')).toBe(true);
  });

  it.each([
    ['a JSON body', 'application/json', JSON.stringify({ From: '+447700900111', Body: 'STOP', __proto__: { x: 1 } }), 403],
    ['a form with __proto__ and constructor fields', 'application/x-www-form-urlencoded', '__proto__=1&constructor=2&From=%2B447700900111&Body=STOP', 403],
    // Refused for its depth before the signature is looked at (docs/public-doors.md).
    ['a 5,000-level JSON body', 'application/json', '['.repeat(5000) + ']'.repeat(5000), 400],
    ['bytes that are not UTF-8', 'application/x-www-form-urlencoded', Buffer.from([0xff, 0xfe, 0x00, 0x3d, 0x26]), 403],
  ])('answers %s with %i, never a 5xx', async (_label, contentType, body, status) => {
    const res = await fetch(`${gw.url}/mo/tw`, { method: 'POST', headers: { 'content-type': contentType, 'x-twilio-signature': 'forged' }, body });
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: string }).error).toMatch(/^inbound message refused/);
  });

  it('answers 404 for a provider that is not configured', async () => {
    const res = await fetch(`${gw.url}/mo/constructor`, { method: 'POST', body: 'x' });
    expect(res.status).toBe(404);
  });
});

describe('Vonage inbound SMS at /mo/{provider}', () => {
  it.each<ReceiptTransport>(['get', 'form', 'json'])('opts the sender out on a signed STOP sent by %s, and back in on YES', async (transport) => {
    expect(await vonage.sendReceipt(`${gw.url}/mo/vg`, vonage.inboundFields('+447700900111', OUR_NUMBER, 'Stop'), { transport })).toBe(200);
    expect(await smsConsent('tony')).toBe(false);
    expect(await smsConsent('tony-2')).toBe(false);
    expect((await send(`vonage-refused-${transport}`, 'tony-2', 'vg')).status).toBe(400);
    expect(await vonage.sendReceipt(`${gw.url}/mo/vg`, vonage.inboundFields('+447700900111', OUR_NUMBER, 'yes'), { transport })).toBe(200);
    expect(await smsConsent('tony')).toBe(true);
  });

  it('acknowledges a signed delivery receipt sent to the inbound URL without storing it', async () => {
    const stored = await inboundCount();
    const receipt = { msisdn: '447700900111', to: 'Casino', messageId: 'ABC123', status: 'delivered', 'err-code': '0', 'api-key': vonage.apiKey };
    expect(await vonage.sendReceipt(`${gw.url}/mo/vg`, receipt, { transport: 'json' })).toBe(200);
    expect(await inboundCount()).toBe(stored);
  });

  it.each([
    ['signed with another secret', { signatureSecret: 'not-the-secret' }],
    ['unsigned', { signatureSecret: null }],
    ['signed ten minutes ago (a replay)', { timestamp: Math.floor(Date.now() / 1000) - 600 }],
  ])('refuses a STOP %s with 403 and stores nothing', async (_label, options) => {
    const stored = await inboundCount();
    expect(await vonage.sendReceipt(`${gw.url}/mo/vg`, vonage.inboundFields('+447700900111', OUR_NUMBER, 'STOP'), { transport: 'form', ...options })).toBe(403);
    expect(await inboundCount()).toBe(stored);
    expect(await smsConsent('tony')).toBe(true);
  });
});

describe('sandbox replies at /mo/{provider}', () => {
  const reply = (text: string, secret = SANDBOX_SECRET) => {
    const body = JSON.stringify({ message_id: `sbx-in-${Math.random()}`, from: '+447700900111', to: OUR_NUMBER, text });
    const signature = createHmac('sha256', secret).update(body).digest('hex');
    return fetch(`${gw.url}/mo/sb`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sandbox-signature': signature }, body });
  };

  it('opts the sender out on a STOP signed with receipt_secret', async () => {
    const res = await reply('STOP');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: 1 });
    expect(await smsConsent('tony')).toBe(false);
  });

  it('refuses a reply signed with another secret', async () => {
    const stored = await inboundCount();
    expect((await reply('STOP', 'another-secret')).status).toBe(403);
    expect(await inboundCount()).toBe(stored);
    expect(await smsConsent('tony')).toBe(true);
  });
});

describe('Twilio error 21610 at send', () => {
  it('answers the CRM 400 and opts the player out, with a User Consents event', async () => {
    await gw.adminPut('/admin/users/unsub', sampleUser('unsub', { mobile_prefix: '+1', mobile: '5005550004', consents: [{ type: 'sms', opted_in: true }] }));
    const res = await gw.post(
      '/channels/sms/single',
      smsMessage('to-unsubscribed', { provider_name: 'tw', recipient: '+15005550004', activity: { id: 'to-unsubscribed', user_id: 'unsub' } }),
    );
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/21610/);
    expect(await smsConsent('unsub')).toBe(false);
    expect(await consentEvents('unsub')).toHaveLength(1);
    const row = await db().selectFrom('operator_consents').selectAll().where('user_id', '=', 'unsub').where('type', '=', 'sms').executeTakeFirstOrThrow();
    expect(row).toMatchObject({ opted_in: 0, source: 'provider' });
  });

  it('changes nothing for a player the operator data does not know', async () => {
    const res = await gw.post(
      '/channels/sms/single',
      smsMessage('to-unsubscribed-2', { provider_name: 'tw', recipient: '+15005550004', activity: { id: 'to-unsubscribed-2', user_id: 'stranger' } }),
    );
    expect(res.status).toBe(400);
    expect(await consentEvents('stranger')).toHaveLength(0);
  });
});
