/** The send side end to end: the real gateway (HTTP, SQLite ledger) with twilio and vonage pointed at their fakes. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startVonageFake, type VonageFake } from '../fakes/vonage.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { manualClock } from '../helpers/manual-clock.js';

let twilio: TwilioFake;
let vonage: VonageFake;
let gw: TestGateway;

function providersFor(twilioFake: TwilioFake, vonageFake: VonageFake, extra: Record<string, unknown> = {}) {
  return {
    twilio: { type: 'twilio', account_sid: twilioFake.accountSid, auth_token: twilioFake.authToken, from: '+15005550006', base_url: twilioFake.url, ...extra },
    vonage: { type: 'vonage', aliases: ['nexmo'], api_key: vonageFake.apiKey, api_secret: vonageFake.apiSecret, base_url: vonageFake.url, ...extra },
  };
}

const messageRow = (smsId: string) => gw.gateway.ledger.db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirstOrThrow();

beforeAll(async () => {
  twilio = await startTwilioFake();
  vonage = await startVonageFake();
  gw = await startTestGateway({ providers: providersFor(twilio, vonage) });
});
afterAll(async () => {
  await gw.close();
  await twilio.close();
  await vonage.close();
});

describe('single send through twilio', () => {
  it('answers 200 and hands Twilio the recipient, sender, text and a receipt URL carrying the sms_id', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('tw-ok', { provider_name: 'twilio' }));
    expect(res.status).toBe(200);
    const create = twilio.creates.at(-1)!;
    expect(create.form).toEqual({
      To: '+447700900123',
      From: 'Casino',
      Body: 'Your bonus is waiting',
      StatusCallback: `${gw.gateway.publicUrl}/dlr/twilio?sms_id=${res.json.sms_id}#rc=5&rp=all`,
    });
    expect(await messageRow(res.json.sms_id)).toMatchObject({
      provider: 'twilio',
      state: 'submitted',
      provider_message_id: create.sid,
      provider_status: 'queued',
    });
  });

  it('answers 400 naming the reason for a permanent Twilio error, and records it', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('tw-unsub', { provider_name: 'twilio', recipient: '+15005550004' }));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/21610.*unsubscribed/);
    expect(await messageRow(res.json.sms_id)).toMatchObject({ state: 'rejected', error_code: '21610' });
  });

  it('answers 503 for 429/20429 and sends again when the CRM retries the id', async () => {
    const first = await gw.post('/channels/sms/single', smsMessage('tw-busy', { provider_name: 'twilio', recipient: '+15005550429' }));
    expect(first.status).toBe(503);
    expect(first.json.error).toMatch(/20429/);
    const before = twilio.creates.length;
    await gw.post('/channels/sms/single', smsMessage('tw-busy', { provider_name: 'twilio', recipient: '+15005550429' }));
    expect(twilio.creates.length).toBe(before + 1);
  });
});

describe('single send through vonage', () => {
  it('answers 200 and sends digits without +, type text and client-ref = sms_id', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('vo-ok', { provider_name: 'nexmo' }));
    expect(res.status).toBe(200);
    const submit = vonage.submits.at(-1)!;
    expect(submit.fields).toMatchObject({
      to: '447700900123',
      from: 'Casino',
      type: 'text',
      'client-ref': res.json.sms_id,
      callback: `${gw.gateway.publicUrl}/dlr/vonage`,
    });
    expect(await messageRow(res.json.sms_id)).toMatchObject({ provider: 'vonage', state: 'submitted', provider_message_id: submit.messageIds[0] });
  });

  it('sends UCS-2 text as type unicode', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('vo-ucs2', { provider_name: 'vonage', content: 'Бонус ждёт' }));
    expect(res.status).toBe(200);
    expect(vonage.submits.at(-1)!.fields.type).toBe('unicode');
  });

  it('records every part id of a multipart message in message_parts, in part order', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('vo-long', { provider_name: 'vonage', content: 'word '.repeat(80) }));
    expect(res.status).toBe(200);
    const parts = await gw.gateway.ledger.db.selectFrom('message_parts').selectAll().where('sms_id', '=', res.json.sms_id).orderBy('part_index').execute();
    expect(parts.map((p) => p.provider_message_id)).toEqual(vonage.submits.at(-1)!.messageIds);
    expect(parts).toHaveLength(3);
  });

  it.each([
    ['447700909907', 400, /barred/],
    ['447700909901', 503, /throttled/],
    ['447700909500', 503, /HTTP 500/],
  ])('a send to +%s answers %s', async (to, status, error) => {
    const res = await gw.post('/channels/sms/single', smsMessage(`vo-${to}`, { provider_name: 'vonage', recipient: `+${to}` }));
    expect(res.status).toBe(status);
    expect(res.json.error).toMatch(error);
  });
});

describe('batch send through the providers', () => {
  it('many sends sharing one deadline signal print no MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const res = await gw.post(
        '/channels/sms/batch',
        Array.from({ length: 40 }, (_, i) => smsMessage(`b-many-${i}`, { provider_name: 'twilio' })),
      );
      expect(res.json.successful).toHaveLength(40);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('puts each entry in the array its provider answer calls for', async () => {
    const res = await gw.post('/channels/sms/batch', [
      smsMessage('b-tw-ok', { provider_name: 'twilio' }),
      smsMessage('b-tw-bad', { provider_name: 'twilio', recipient: '+15005550001' }),
      smsMessage('b-tw-5xx', { provider_name: 'twilio', recipient: '+15005550500' }),
      smsMessage('b-vo-ok', { provider_name: 'vonage' }),
      smsMessage('b-vo-barred', { provider_name: 'vonage', recipient: '+447700909907' }),
    ]);
    expect(res.status).toBe(200);
    expect(res.json.successful.map((e: { id: string }) => e.id).sort()).toEqual(['b-tw-ok', 'b-vo-ok']);
    expect(res.json.failed.map((e: { id: string }) => e.id).sort()).toEqual(['b-tw-bad', 'b-vo-barred']);
    expect(res.json.fatal.map((e: { id: string }) => e.id)).toEqual(['b-tw-5xx']);
  });
});

describe('rate_per_second (with a clock the test moves)', () => {
  let limited: TestGateway;
  let clock: ReturnType<typeof manualClock>;
  let fakeT: TwilioFake;
  let fakeV: VonageFake;
  beforeAll(async () => {
    clock = manualClock();
    fakeT = await startTwilioFake();
    fakeV = await startVonageFake();
    limited = await startTestGateway(
      { providers: providersFor(fakeT, fakeV, { rate_per_second: 1 }), sms: { single_wait: '1500ms', batch_deadline: '1500ms' } },
      { now: clock.now, clock },
    );
  });
  afterAll(async () => {
    await limited.close();
    await fakeT.close();
    await fakeV.close();
  });

  it('a single over the limit waits for capacity within sms.single_wait, then goes out', async () => {
    expect((await limited.post('/channels/sms/single', smsMessage('rl-1', { provider_name: 'twilio' }))).status).toBe(200);
    const waiting = limited.post('/channels/sms/single', smsMessage('rl-2', { provider_name: 'twilio' }));
    const sent = fakeT.creates.length;
    await waitFor(() => clock.pending() > 0, 5_000, 'the throttle to wait on the clock');
    expect(fakeT.creates.length).toBe(sent); // still waiting: time has not moved
    await clock.advance(1_000);
    expect((await waiting).status).toBe(200);
  });

  it('a single whose wait would pass sms.single_wait answers 503 at once, sending nothing', async () => {
    expect((await limited.post('/channels/sms/single', smsMessage('rl-3', { provider_name: 'vonage' }))).status).toBe(200);
    const sent = fakeV.submits.length;
    // Three segments at one per second: a 3 s wait, past the 1.5 s single_wait.
    const res = await limited.post('/channels/sms/single', smsMessage('rl-4', { provider_name: 'vonage', content: 'x'.repeat(400) }));
    expect(res.status).toBe(503);
    expect(res.json.error).toMatch(/^rate limit: provider vonage/);
    expect(fakeV.submits.length).toBe(sent);
    await clock.advance(3_000);
  });

  it('batch entries that cannot get capacity before the batch deadline land in fatal', async () => {
    const answer = limited.post(
      '/channels/sms/batch',
      ['rb-1', 'rb-2', 'rb-3'].map((id) => smsMessage(id, { provider_name: 'twilio' })),
    );
    await waitFor(() => clock.pending() > 0, 5_000, 'the second entry to wait on the clock');
    await clock.advance(1_000);
    const res = await answer;
    expect(res.json.successful).toHaveLength(2);
    expect(res.json.fatal).toEqual([{ id: expect.any(String), sms_id: expect.any(String), error: expect.stringMatching(/rate limit/) }]);
  });
});
