/**
 * POST /channels/sms/single: every problem with the message itself answers 400 with an error naming the field and
 * the offending value (docs/design.md §4), and nothing reaches the ledger. Accepted variants (provider aliases, recipient
 * spellings, extra fields) answer 200.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { readMessage, readMessages } from '../helpers/ledger.js';

let gw: TestGateway;
let regional: TestGateway;
beforeAll(async () => {
  [gw, regional] = await Promise.all([
    startTestGateway({ sms: { max_segments: 3 }, providers: { other: { type: 'sandbox', aliases: ['Backup', 'spare'] } } }),
    startTestGateway({ sms: { default_region: 'GB' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([gw.close(), regional.close()]);
});

function without(message: Record<string, unknown>, field: string): Record<string, unknown> {
  const copy = { ...message };
  delete copy[field];
  return copy;
}

let seq = 0;
const nextId = (label: string) => `val-${label}-${++seq}`;

describe('a message with a problem answers 400 naming the field and the value', () => {
  it.each<[string, (id: string) => unknown, RegExp]>([
    ['activity is missing', (id) => without(smsMessage(id), 'activity'), /^activity: is required$/],
    ['activity is a string', (id) => smsMessage(id, { activity: 'abc' }), /^activity: .*"abc"/],
    ['activity.id is missing', (id) => smsMessage(id, { activity: { brand_id: 7 } }), /^activity\.id: is required$/],
    ['activity.id is a fraction (1.5)', (id) => smsMessage(id, { activity: { id: 1.5 } }), /^activity\.id: .*\(got 1\.5\)/],
    ['activity.id is an object', (id) => smsMessage(id, { activity: { id: {} } }), /^activity\.id: .*\(got \{\}\)/],
    ['activity.id is an empty string', (id) => smsMessage(id, { activity: { id: '' } }), /^activity\.id: .*\(got ""\)/],
    ['activity.id is a boolean', (id) => smsMessage(id, { activity: { id: true } }), /^activity\.id: .*\(got true\)/],
    ['content is missing', (id) => without(smsMessage(id), 'content'), /^content: is required$/],
    ['content is empty', (id) => smsMessage(id, { content: '' }), /^content: must not be empty \(got ""\)/],
    ['content is only spaces', (id) => smsMessage(id, { content: '   ' }), /^content: must not be empty/],
    ['content is a number', (id) => smsMessage(id, { content: 42 }), /^content: must be a string \(got 42\)/],
    ['recipient is missing', (id) => without(smsMessage(id), 'recipient'), /^recipient: is required$/],
    ['recipient is letters', (id) => smsMessage(id, { recipient: 'not-a-number' }), /^recipient: "not-a-number" is not a phone number/],
    ['recipient is too short', (id) => smsMessage(id, { recipient: '+4477' }), /^recipient: "\+4477" is not a phone number/],
    ['recipient is national without a default region', (id) => smsMessage(id, { recipient: '07700900123' }), /^recipient: "07700900123" .*sms\.default_region/],
    ['sender_name is a number', (id) => smsMessage(id, { sender_name: 7 }), /^sender_name: must be a string \(got 7\)/],
    [
      'provider_name is unknown',
      (id) => smsMessage(id, { provider_name: 'nowhere' }),
      /^provider_name: "nowhere" is not configured \(configured: sandbox\/test, other\/Backup\/spare\)$/,
    ],
    [
      'provider_name is missing and there is no default',
      (id) => without(smsMessage(id), 'provider_name'),
      /^provider_name: is required \(configured: sandbox\/test/,
    ],
    ['provider_name is a number', (id) => smsMessage(id, { provider_name: 5 }), /^provider_name: must be a string \(got 5\)/],
    ['encoding is a number', (id) => smsMessage(id, { encoding: 7 }), /^encoding: must be a string \(got 7\)/],
    [
      'gsm7 is forced on Cyrillic text',
      (id) => smsMessage(id, { encoding: 'gsm7', content: 'Бонус ok' }),
      /^content: characters not in GSM-7: "Б" \(U\+0411\), "о" \(U\+043E\), "н" \(U\+043D\), "у" \(U\+0443\), "с" \(U\+0441\)$/,
    ],
    [
      'content needs more segments than sms.max_segments',
      (id) => smsMessage(id, { content: 'x'.repeat(153 * 3 + 1) }),
      /^content: needs 4 segments as GSM-7, more than the limit of 3 \(sms\.max_segments\)$/,
    ],
    [
      'UCS-2 content needs more segments than sms.max_segments',
      (id) => smsMessage(id, { content: 'ж'.repeat(67 * 3 + 1) }),
      /^content: needs 4 segments as UCS-2/,
    ],
    ['the body is an array', () => [smsMessage('in-array')], /^body: must be an SMS message object$/],
    ['the body is null', () => null, /^body: must be an SMS message object$/],
  ])('%s', async (_label, build, error) => {
    const id = nextId('bad');
    const res = await gw.post('/channels/sms/single', build(id));
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: expect.stringMatching(error) });
    expect(await readMessages(gw, [id])).toEqual([]);
  });
});

describe('accepted variants of a message answer 200', () => {
  it.each([
    ['the provider name in capitals', 'SANDBOX', 'sandbox'],
    ['an alias', 'test', 'sandbox'],
    ['an alias in other case', 'bAcKuP', 'other'],
    ['a second alias of another provider', 'spare', 'other'],
    ['the name with surrounding spaces', '  other ', 'other'],
  ])('provider_name given as %s routes to its provider', async (_label, providerName, provider) => {
    const id = nextId('route');
    const res = await gw.post('/channels/sms/single', smsMessage(id, { provider_name: providerName }));
    expect(res.status).toBe(200);
    expect((await readMessage(gw, id)).provider).toBe(provider);
  });

  it.each([
    ['E.164 with +', '+447700900123'],
    ['the 00 international prefix', '00447700900123'],
    ['spaces and brackets', '+44 (7700) 900-123'],
    ['international digits without +', '447700900123'],
  ])('a recipient written with %s is stored in E.164', async (_label, recipient) => {
    const id = nextId('e164');
    expect((await gw.post('/channels/sms/single', smsMessage(id, { recipient }))).status).toBe(200);
    expect((await readMessage(gw, id)).recipient).toBe('+447700900123');
  });

  it.each([
    ['a national number', '07700900123'],
    ['the 00 international prefix', '00447700900123'],
    ['E.164 with +', '+447700900123'],
  ])('with sms.default_region GB, %s is stored in E.164', async (_label, recipient) => {
    const id = nextId('region');
    expect((await regional.post('/channels/sms/single', smsMessage(id, { recipient }))).status).toBe(200);
    expect((await readMessage(regional, id)).recipient).toBe('+447700900123');
  });

  it('accepts unknown fields at the top level and inside activity', async () => {
    const id = nextId('extra');
    const message = smsMessage(id, { campaign: { name: 'spring' }, priority: 3 });
    const res = await gw.post('/channels/sms/single', { ...message, activity: { ...message.activity, new_field: [1, 2] } });
    expect(res.status).toBe(200);
    expect(res.json.sms_id).toEqual(expect.any(String));
  });

  it.each([
    ['auto', 'auto'],
    ['gsm7', 'gsm7'],
    ['ucs2', 'ucs2'],
    ["the spec's spelling usc2", 'usc2'],
    ['capitals', 'GSM7'],
    ['an empty string (auto)', ''],
    ['null (auto)', null],
  ])('accepts encoding given as %s', async (_label, encoding) => {
    expect((await gw.post('/channels/sms/single', smsMessage(nextId('enc'), { encoding }))).status).toBe(200);
  });

  it.each([
    ['enconding usc2 (the CRM schema’s spelling of the key)', { encoding: undefined, enconding: 'usc2' }, 'ucs2'],
    ['enconding gsm7', { encoding: undefined, enconding: 'gsm7' }, 'gsm7'],
    ['encoding beside enconding: encoding wins', { encoding: 'gsm7', enconding: 'usc2' }, 'gsm7'],
  ])('reads %s', async (_label, fields, stored) => {
    const id = nextId('enconding');
    expect((await gw.post('/channels/sms/single', smsMessage(id, { content: 'Bonus ok', ...fields }))).status).toBe(200);
    expect((await readMessage(gw, id)).encoding).toBe(stored);
  });

  it('reads an enconding that is not a known name as auto (test/sms/sender-fallback.test.ts has the rest)', async () => {
    const id = nextId('enconding');
    const res = await gw.post('/channels/sms/single', smsMessage(id, { encoding: undefined, enconding: 'utf8', content: 'Bonus ok' }));
    expect(res.status).toBe(200);
    expect((await readMessage(gw, id)).encoding).toBe('gsm7');
  });

  it('keeps the CRM sample recipient 254716595289 international with sms.default_region GB, and a national number national', async () => {
    const kenyan = nextId('intl-digits');
    expect((await regional.post('/channels/sms/single', smsMessage(kenyan, { recipient: '254716595289' }))).status).toBe(200);
    expect((await readMessage(regional, kenyan)).recipient).toBe('+254716595289');
    const national = nextId('intl-digits');
    expect((await regional.post('/channels/sms/single', smsMessage(national, { recipient: '7700900123' }))).status).toBe(200);
    expect((await readMessage(regional, national)).recipient).toBe('+447700900123');
  });

  it.each([
    ['with sms.default_region GB', () => regional],
    ['without sms.default_region', () => gw],
  ])("reads 35621435678 (a Maltese fixed line, from the CRM maker's sample record) as +35621435678 %s", async (_label, which) => {
    const id = nextId('fixed-line');
    const res = await which().post('/channels/sms/single', smsMessage(id, { recipient: '35621435678' }));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect((await readMessage(which(), id)).recipient).toBe('+35621435678');
  });

  it('accepts an empty sender_name and a numeric sender', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage(nextId('sender'), { sender_name: '' }))).status).toBe(200);
    expect((await gw.post('/channels/sms/single', smsMessage(nextId('sender'), { sender_name: '+447700900999' }))).status).toBe(200);
  });
});
