/**
 * A sender_name no SMS can carry never loses the message: it goes out under the next sender of the chain
 * (senders.default, then the provider's own `from`), counted in sms_gateway_sms_fallbacks_total, noted on the
 * message's timeline (admin API and console) and logged once per name; sms.refuse_unusable_sender restores the
 * 400. An unknown encoding (`enconding`, the CRM's spelling) is read as auto and noted the same way. Real gateway,
 * the Twilio fake recording the From it was handed.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideEncoding, decideSender } from '../../src/sms/prepare.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

describe('the decisions', () => {
  it.each([
    ['a brand of 11 characters', 'BrandName12', false, 'BrandName12', false],
    ['a phone number', '+447700900999', false, '+447700900999', false],
    ['empty', '', false, null, false],
    ['absent', undefined, false, null, false],
    ['null', null, false, null, false],
    ['padded with spaces', ' Casino ', false, 'Casino', false],
    ['spaces only', '   ', false, null, true],
    ['a tab and a line break only', '\t\n', false, null, true],
    ['12 characters', 'BrandName123', false, null, true],
    ['an accented letter', 'Café', false, null, true],
    ['a punctuation mark outside the set', 'Brand!', false, null, true],
  ] as const)('sender_name %s', (_label, name, refuse, sender, noted) => {
    const decided = decideSender(name, refuse);
    expect(decided.ok).toBe(true);
    if (!decided.ok) return;
    expect(decided.sender).toBe(sender);
    expect(decided.note !== undefined).toBe(noted);
  });

  it('refuses an unusable sender_name when asked to, naming it', () => {
    expect(decideSender('BrandName123', true)).toEqual({ ok: false, error: expect.stringMatching(/^sender_name: .*"BrandName123"/) });
    expect(decideSender('Brand', true)).toEqual({ ok: true, sender: 'Brand' });
  });

  it.each([
    ['utf8', false, 'auto', true],
    ['USC2', false, 'ucs2', false],
    [null, false, 'auto', false],
    [undefined, false, 'auto', false],
    ['', false, 'auto', true],
    ['   ', false, 'auto', true],
  ] as const)('encoding %s', (value, refuse, requested, noted) => {
    const decided = decideEncoding(value, refuse);
    expect(decided).toMatchObject({ ok: true, requested });
    expect(decided.ok && decided.note !== undefined).toBe(noted);
  });

  it('refuses an unknown encoding when asked to', () => {
    expect(decideEncoding('utf8', true)).toEqual({ ok: false, error: 'encoding: "utf8" is not one of auto, gsm7, usc2, ucs2' });
    expect(decideEncoding('', true)).toEqual({ ok: false, error: 'encoding: "" is not one of auto, gsm7, usc2, ucs2' });
  });

  it('notes a blank sender_name as sent, and refuses it when asked to', () => {
    expect(decideSender('   ', false)).toEqual({
      ok: true,
      sender: null,
      note: { field: 'sender_name', value: '   ', text: 'sender_name "   " is blank: sent under the next sender of the chain' },
    });
    expect(decideSender('   ', true)).toEqual({ ok: false, error: expect.stringMatching(/^sender_name: .*\(got " {3}"\)$/) });
  });
});

describe('through the gateway', () => {
  let twilio: TwilioFake;
  const gateways: TestGateway[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    }),
  );
  const start = async (senders: Record<string, unknown> | undefined, sms: Record<string, unknown> = {}) => {
    const gw = await startTestGateway(
      {
        sms,
        providers: {
          tw: {
            type: 'twilio',
            account_sid: twilio.accountSid,
            auth_token: twilio.authToken,
            from: '+15005550006',
            base_url: twilio.url,
            ...(senders ? { senders } : {}),
          },
        },
      },
      { logger },
    );
    gateways.push(gw);
    return gw;
  };
  const send = (gw: TestGateway, id: string, fields: Record<string, unknown>) =>
    gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'tw', recipient: '+4915112345678', ...fields }));
  const fromOf = (smsId: string) => twilio.creates.find((c) => c.form.StatusCallback?.split('#')[0]!.endsWith(smsId))?.form.From;
  const metric = async (gw: TestGateway, field: string) =>
    Number(
      new RegExp(`^sms_gateway_sms_fallbacks_total\\{field="${field}"\\} (\\d+)`, 'm').exec(
        await fetch(`${gw.url}/metrics`, { headers: admin }).then((r) => r.text()),
      )?.[1],
    );

  beforeAll(async () => {
    twilio = await startTwilioFake();
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await twilio.close();
  });

  it('sends under senders.default, counts it, shows it on the timeline and logs each name once', async () => {
    const gw = await start({ default: 'Fallback', by_country: {} });
    expect(await metric(gw, 'sender_name')).toBe(0);
    const first = await send(gw, 'fb-1', { sender_name: 'BrandName123' });
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(fromOf(first.json.sms_id)).toBe('Fallback');
    const again = await send(gw, 'fb-2', { sender_name: 'BrandName123' });
    const other = await send(gw, 'fb-3', { sender_name: 'Café' });
    expect([again.status, other.status]).toEqual([200, 200]);
    expect(await metric(gw, 'sender_name')).toBe(3);
    const logged = lines.filter((l) => l.field === 'sender_name').map((l) => l.value);
    expect(logged.sort()).toEqual(['BrandName123', 'Café']);

    const story = await gw.get(`/admin/messages/${first.json.sms_id}`, admin);
    expect(story.json.message.intake_note).toMatch(/^sender_name "BrandName123" cannot be carried by SMS/);
    expect(story.json.timeline[0]).toMatchObject({ kind: 'received', summary: expect.stringContaining('"BrandName123" cannot be carried') });

    const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const page = await fetch(`${gw.url}/console/messages/${first.json.sms_id}`, { headers: { cookie } }).then((r) => r.text());
    expect(page).toMatch(/<li data-kind="received">[^]*cannot be carried by SMS/);
  });

  it('without senders.default, sends under the provider’s own from', async () => {
    const gw = await start(undefined);
    const res = await send(gw, 'own-1', { sender_name: 'Brand!' });
    expect(res.status).toBe(200);
    expect(fromOf(res.json.sms_id)).toBe('+15005550006');
  });

  it('reads an unknown enconding as auto, counted and noted', async () => {
    const gw = await start(undefined);
    const res = await send(gw, 'enc-1', { encoding: undefined, enconding: 'utf8', content: 'Bonus ok' });
    expect(res.status).toBe(200);
    const story = await gw.get(`/admin/messages/${res.json.sms_id}`, admin);
    expect(story.json.message).toMatchObject({ encoding: 'gsm7', intake_note: 'encoding "utf8" is not one of auto, gsm7, usc2, ucs2: read as auto' });
    expect(await metric(gw, 'encoding')).toBe(1);
  });

  it('sends a blank sender_name under senders.default and an empty encoding as auto, each counted and noted', async () => {
    const gw = await start({ default: 'Fallback', by_country: {} });
    const blank = await send(gw, 'blank-1', { sender_name: '   ' });
    expect(blank.status, JSON.stringify(blank.json)).toBe(200);
    expect(fromOf(blank.json.sms_id)).toBe('Fallback');
    expect((await gw.get(`/admin/messages/${blank.json.sms_id}`, admin)).json.message.intake_note).toBe(
      'sender_name "   " is blank: sent under the next sender of the chain',
    );
    const empty = await send(gw, 'empty-enc-1', { encoding: '', content: 'Bonus ok' });
    expect(empty.status, JSON.stringify(empty.json)).toBe(200);
    expect((await gw.get(`/admin/messages/${empty.json.sms_id}`, admin)).json.message).toMatchObject({
      encoding: 'gsm7',
      intake_note: 'encoding "" is not one of auto, gsm7, usc2, ucs2: read as auto',
    });
    expect([await metric(gw, 'sender_name'), await metric(gw, 'encoding')]).toEqual([1, 1]);
    // An absent sender_name asks for none: the chain gives one, with nothing counted.
    const absent = await send(gw, 'absent-1', { sender_name: undefined });
    expect(absent.status).toBe(200);
    expect(await metric(gw, 'sender_name')).toBe(1);
  });

  it('with sms.refuse_unusable_sender and sms.refuse_unknown_encoding, refuses as before and sends nothing', async () => {
    const gw = await start({ default: 'Fallback', by_country: {} }, { refuse_unusable_sender: true, refuse_unknown_encoding: true });
    const before = twilio.creates.length;
    const sender = await send(gw, 'strict-1', { sender_name: 'CasinoRoyale' });
    expect(sender.status).toBe(400);
    expect(sender.json.error).toMatch(/^sender_name: .*"CasinoRoyale"/);
    const encoding = await send(gw, 'strict-2', { encoding: undefined, enconding: 'utf8' });
    expect(encoding.status).toBe(400);
    expect(encoding.json.error).toMatch(/^encoding: "utf8" is not one of auto, gsm7, usc2, ucs2/);
    expect(twilio.creates.length).toBe(before);
  });
});
