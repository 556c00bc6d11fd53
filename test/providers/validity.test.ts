/**
 * A route's or rule's `validity` (minutes, docs/routing.md "Validity") reaches every provider that takes one, in that
 * provider's own field and unit, through the real gateway and each provider's fake: Twilio ValidityPeriod (seconds),
 * Infobip validityPeriod (minutes), Vonage ttl (milliseconds), SMPP validity_period (relative time), Sinch expire_at
 * (a date-time). The fields and bounds are those of the documents in test/fakes/openapi/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInfobipFake, type InfobipFake } from '../fakes/infobip.js';
import { startSinchFake, type SinchFake } from '../fakes/sinch.js';
import { startSmppFake, type SmppFake } from '../fakes/smpp.js';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startVonageFake, type VonageFake } from '../fakes/vonage.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { smppRelativeTime, validityLeft } from '../../providers/kit/validity.js';

let gw: TestGateway;
let twilio: TwilioFake;
let infobip: InfobipFake;
let vonage: VonageFake;
let sinch: SinchFake;
let smsc: SmppFake;

const route = (member: string, validity: number, rules: unknown[] = []) => ({ type: 'route', members: [member], validity, ...(rules.length ? { rules } : {}) });

beforeAll(async () => {
  [twilio, infobip, vonage, sinch, smsc] = await Promise.all([startTwilioFake(), startInfobipFake(), startVonageFake(), startSinchFake(), startSmppFake()]);
  gw = await startTestGateway({
    providers: {
      twilio: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilio.url },
      infobip: { type: 'infobip', api_key: infobip.apiKey, base_url: infobip.url, webhook_secret: 'infobip-webhook-secret-0123' },
      vonage: { type: 'vonage', api_key: vonage.apiKey, api_secret: vonage.apiSecret, base_url: vonage.url },
      sinch: {
        type: 'sinch',
        service_plan_id: sinch.servicePlanId,
        api_token: sinch.apiToken,
        base_url: sinch.url,
        webhook_secret: 'sinch-webhook-secret-01234',
      },
      smpp: { type: 'smpp', host: smsc.host, port: smsc.port, system_id: smsc.systemId, password: smsc.password, rebind_min: '20ms' },
      'v-twilio': route('twilio', 90),
      // A rule's validity beats the route's.
      'v-infobip': route('infobip', 600, [{ name: 'short', match: { brands: ['7'] }, members: ['infobip'], validity: 45 }]),
      'v-vonage': route('vonage', 120),
      'v-sinch': route('sinch', 180),
      'v-smpp': route('smpp', 1_500),
      'v-twilio-long': route('twilio', 24 * 60),
    },
  });
  await waitFor(() => smsc.boundSessions() === 1, 5_000, 'the bind');
});
afterAll(async () => {
  await gw.close();
  await Promise.all([twilio.close(), infobip.close(), vonage.close(), sinch.close(), smsc.close()]);
});

const send = async (id: string, providerName: string) => {
  const res = await gw.post('/channels/sms/single', smsMessage(id, { provider_name: providerName }));
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json.sms_id as string;
};
const near = (actual: number, expected: number, slack: number) => expect(Math.abs(actual - expected)).toBeLessThanOrEqual(slack);

describe('validity through each provider', () => {
  it('Twilio gets ValidityPeriod in seconds', async () => {
    await send('val-twilio', 'v-twilio');
    near(Number(twilio.creates.at(-1)!.form.ValidityPeriod), 90 * 60, 2);
  });

  it("Twilio's ValidityPeriod stops at its 36000 seconds", async () => {
    await send('val-twilio-long', 'v-twilio-long');
    expect(twilio.creates.at(-1)!.form.ValidityPeriod).toBe('36000');
  });

  it("Infobip gets validityPeriod in minutes, the matching rule's", async () => {
    await send('val-infobip', 'v-infobip');
    near(infobip.sends.at(-1)!.validityMinutes!, 45, 1);
  });

  it('Vonage gets ttl in milliseconds', async () => {
    await send('val-vonage', 'v-vonage');
    near(Number(vonage.submits.at(-1)!.fields.ttl), 120 * 60_000, 2_000);
  });

  it('Sinch gets expire_at, a date-time that far ahead', async () => {
    const before = Date.now();
    await send('val-sinch', 'v-sinch');
    const expireAt = sinch.batches.at(-1)!.expireAt!;
    expect(expireAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    near(Date.parse(expireAt), before + 180 * 60_000, 5_000);
  });

  it('SMPP gets validity_period as a relative time', async () => {
    const before = Date.now();
    await send('val-smpp', 'v-smpp');
    near(smsc.submits.at(-1)!.validUntil!, before + 1_500 * 60_000, 5_000);
  });

  it('a provider named directly, outside any route, gets no validity', async () => {
    await gw.post('/channels/sms/single', smsMessage('val-plain', { provider_name: 'vonage' }));
    expect(vonage.submits.at(-1)!.fields.ttl).toBeUndefined();
  });
});

describe("each provider's form of a validity", () => {
  it.each([
    [90 * 60_000, '000000013000000R'],
    [25 * 3_600_000 + 61_000, '000001010101000R'],
    [500, '000000000001000R'],
    // What is left is rounded down, never up: a held message may reach its send with little left.
    [90_999, '000000000130000R'],
    [200 * 86_400_000, '000099000000000R'],
  ])('%i ms is SMPP relative time %s', (ms, text) => {
    expect(smppRelativeTime(ms)).toBe(text);
  });

  it.each<[number | undefined, number, number | undefined]>([
    [undefined, 0, undefined],
    [10_000, 0, 20_000],
    [30_000, 0, 30_000],
    [10 ** 12, 0, 604_800_000],
    [5_000, 10_000, 20_000],
    [70_000, 40_000, 30_000],
  ])('validUntil %s at %i within Vonage bounds is %s ms', (until, now, left) => {
    expect(validityLeft(until, now, { minMs: 20_000, maxMs: 604_800_000 })).toBe(left);
  });
});
