/**
 * Never a message to another country than the player's, end to end: the real gateway with
 * sms.default_region DE, players loaded with PUT /admin/users, the Twilio fake recording the To and From it was
 * handed. A digits-only number is read in the player's country when the record says so, refused with
 * recipient_country_mismatch when no reading lies there, and, without a record, refused with recipient_ambiguous
 * when it is valid both after "+" and as a German number. Each refusal is stored, counted and answered with its
 * code; each national reading is counted and noted on the message. The table of readings is
 * test/sms/recipient-reading.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';
import { readMessage } from '../helpers/ledger.js';
import { parsePrometheusText, valueOf } from '../helpers/prometheus.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

let gw: TestGateway;
let twilio: TwilioFake;

const players = {
  'de-1': { country: 'DE', mobile_prefix: '+49', mobile: '15202345678' },
  'us-1': { country: 'US', mobile_prefix: '+1', mobile: '4795551234' },
  'gb-1': { country: 'GB', mobile_prefix: '+44', mobile: '7400123456' },
  'ke-1': { country: 'KE', mobile_prefix: '+254', mobile: '716595289' },
};

beforeAll(async () => {
  twilio = await startTwilioFake();
  gw = await startTestGateway({
    sms: { default_region: 'DE' },
    providers: {
      tw: {
        type: 'twilio',
        account_sid: twilio.accountSid,
        auth_token: twilio.authToken,
        from: '+15005550006',
        base_url: twilio.url,
        senders: { default: 'Brand', by_country: { DE: 'BrandDE', US: '+15005550007', NO: 'BrandNO' } },
      },
    },
  });
  for (const [userId, fields] of Object.entries(players)) {
    const put = await gw.adminPut(`/admin/users/${userId}`, { ...sampleUser(userId, fields), consents: [{ type: 'sms', opted_in: true }] });
    expect(put.status, JSON.stringify(put.json)).toBeLessThan(300);
  }
});
afterAll(async () => {
  await gw.close();
  await twilio.close();
});

const send = (id: string, userId: string, recipient: string) =>
  gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'tw', recipient, activity: { id, user_id: userId } }));
const createOf = (smsId: string) => twilio.creates.find((c) => c.form.StatusCallback?.split('#')[0]!.endsWith(smsId))?.form;
const readings = async () => {
  const exposition = parsePrometheusText(await fetch(`${gw.url}/metrics`, { headers: admin }).then((r) => r.text()));
  return (reading: string) => valueOf(exposition, 'sms_gateway_recipient_readings_total', { reading });
};

describe('with the player’s record', () => {
  it('sends 15202345678 of a German player to +4915202345678 under the German sender, noted and counted', async () => {
    const before = await readings();
    const res = await send('rc-de', 'de-1', '15202345678');
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(createOf(res.json.sms_id)).toMatchObject({ To: '+4915202345678', From: 'BrandDE' });
    const story = await gw.get(`/admin/messages/${res.json.sms_id}`, admin);
    expect(story.json.message.intake_note).toMatch(/^recipient read as a national number of DE, not as an international one in US \(\+1\)/);
    expect(story.json.message.intake_note, 'the note keeps no digits of the number').not.toContain('5202345678');
    expect((await readings())('national_by_record')).toBe(before('national_by_record') + 1);
  });

  it('sends 4795551234 of a US player to +14795551234 (not Norway) under the US sender', async () => {
    const res = await send('rc-us', 'us-1', '4795551234');
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(createOf(res.json.sms_id)).toMatchObject({ To: '+14795551234', From: '+15005550007' });
  });

  it("keeps the CRM's sample 254716595289 international for a Kenyan player", async () => {
    const res = await send('rc-ke', 'ke-1', '254716595289');
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(createOf(res.json.sms_id)).toMatchObject({ To: '+254716595289', From: 'Casino' });
    expect((await readMessage(gw, 'rc-ke')).recipient).toBe('+254716595289');
  });

  it('refuses 4795551234 for a British player with 400 recipient_country_mismatch, stores and counts it, sends nothing', async () => {
    const before = await readings();
    const creates = twilio.creates.length;
    const res = await send('rc-gb', 'gb-1', '4795551234');
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'recipient_country_mismatch', sms_id: expect.any(String) });
    expect(res.json.error).toContain('+4795551234 (NO)');
    expect(res.json.error).toContain('country GB');
    expect(twilio.creates.length).toBe(creates);
    expect(await readMessage(gw, 'rc-gb')).toMatchObject({ state: 'rejected' });
    const story = await gw.get(`/admin/messages/${res.json.sms_id}`, admin);
    expect(story.json.message).toMatchObject({ state: 'rejected', error_code: 'recipient_country_mismatch' });
    expect((await readings())('recipient_country_mismatch')).toBe(before('recipient_country_mismatch') + 1);

    const again = await send('rc-gb', 'gb-1', '4795551234');
    expect(again.status).toBe(400);
    expect(again.json).toEqual(res.json);
  });

  it('refuses +4795551234, written with "+", for the British player too', async () => {
    const res = await send('rc-gb-plus', 'gb-1', '+4795551234');
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('recipient_country_mismatch');
  });
});

describe('without a record, sms.default_region DE decides', () => {
  it('refuses 15202345678 (valid in the US and in Germany) with 400 recipient_ambiguous naming both readings', async () => {
    const before = await readings();
    const res = await send('rc-nobody', 'nobody', '15202345678');
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'recipient_ambiguous', sms_id: expect.any(String) });
    expect(res.json.error).toContain('+15202345678 (US)');
    expect(res.json.error).toContain('+4915202345678 (DE)');
    expect((await readings())('recipient_ambiguous')).toBe(before('recipient_ambiguous') + 1);
  });

  it('sends 15202345678 written with "+" as written', async () => {
    const res = await send('rc-nobody-plus', 'nobody', '+15202345678');
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(createOf(res.json.sms_id)).toMatchObject({ To: '+15202345678', From: '+15005550007' });
  });

  it("refuses even the CRM's sample 35621435678: 0356 21435678 is a valid German fixed line too", async () => {
    const res = await send('rc-mt', 'nobody', '35621435678');
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('recipient_ambiguous');
    expect(res.json.error).toContain('+35621435678 (MT) or as +4935621435678 (DE)');
  });
});

it('answers a batch entry by entry: refusals in failed with their code, the rest sent where their players are', async () => {
  const entry = (id: string, userId: string, recipient: string) => smsMessage(id, { provider_name: 'tw', recipient, activity: { id, user_id: userId } });
  const res = await gw.post('/channels/sms/batch', [
    entry('rb-de', 'de-1', '15202345678'),
    entry('rb-us', 'us-1', '4795551234'),
    entry('rb-gb', 'gb-1', '4795551234'),
    entry('rb-nobody', 'nobody', '15202345678'),
    entry('rb-ke', 'ke-1', '254716595289'),
  ]);
  expect(res.status).toBe(200);
  expect(res.json.successful.map((s: { id: string }) => s.id).sort()).toEqual(['rb-de', 'rb-ke', 'rb-us']);
  expect(res.json.failed.map((f: { id: string; code: string }) => [f.id, f.code])).toEqual([
    ['rb-gb', 'recipient_country_mismatch'],
    ['rb-nobody', 'recipient_ambiguous'],
  ]);
  const to = (id: string) => createOf(res.json.successful.find((s: { id: string }) => s.id === id).sms_id)?.To;
  expect([to('rb-de'), to('rb-us'), to('rb-ke')]).toEqual(['+4915202345678', '+14795551234', '+254716595289']);
});

// With suppression on (above) the claim reads the record with the player's standing, in its transaction; off, no
// standing is read there, and the record is read before the claim.
describe('with sms.suppression off', () => {
  it('still sends 15202345678 of a German player to +4915202345678, and 4795551234 of a British one is refused', async () => {
    const off = await startTestGateway({
      sms: { default_region: 'DE', suppression: 'off' },
      providers: { tw: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilio.url } },
    });
    try {
      for (const userId of ['de-1', 'gb-1']) {
        const put = await off.adminPut(`/admin/users/${userId}`, { ...sampleUser(userId, players[userId as keyof typeof players]), consents: [] });
        expect(put.status, JSON.stringify(put.json)).toBeLessThan(300);
      }
      const post = (id: string, userId: string, recipient: string) =>
        off.post('/channels/sms/single', smsMessage(id, { provider_name: 'tw', recipient, activity: { id, user_id: userId } }));
      const de = await post('rc-off-de', 'de-1', '15202345678');
      expect(de.status, JSON.stringify(de.json)).toBe(200);
      expect(createOf(de.json.sms_id)).toMatchObject({ To: '+4915202345678' });
      const gb = await post('rc-off-gb', 'gb-1', '4795551234');
      expect(gb.status, JSON.stringify(gb.json)).toBe(400);
      expect(gb.json.code).toBe('recipient_country_mismatch');
    } finally {
      await off.close();
    }
  });
});
