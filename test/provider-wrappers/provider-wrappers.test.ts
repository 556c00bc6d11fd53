/**
 * The wrappers around a provider (sender rules, throttle, a failover route over it) change how it sends and nothing
 * else: a signed STOP still reaches the plugin's own inbound parser at /mo/{name}. Before the wrappers spread the
 * provider, a provider with `senders` lost its parser and /mo/{name} answered 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const OUR_NUMBER = '+447700900999';

let gw: TestGateway;
let twilio: TwilioFake;

beforeAll(async () => {
  twilio = await startTwilioFake();
  const twilioBlock = { type: 'twilio', base_url: twilio.url, account_sid: twilio.accountSid, auth_token: twilio.authToken, from: OUR_NUMBER };
  gw = await startTestGateway({
    providers: {
      senders: { ...twilioBlock, senders: { default: 'Brand', by_country: { US: '+15005550006' } } },
      throttled: { ...twilioBlock, rate_per_second: 5, max_concurrency: 2 },
      both: { ...twilioBlock, rate_per_second: 5, senders: { default: 'Brand', by_country: {} } },
      promo: { type: 'route', members: ['both', 'throttled'] },
    },
  });
});
afterAll(async () => {
  await gw.close();
  await twilio.close();
});

describe('inbound SMS through wrapped providers', () => {
  it.each(['senders', 'throttled', 'both'])('a STOP to /mo/%s opts the player out', async (name) => {
    const userId = `wrapped-${name}`;
    const mobile = { senders: '7700900301', throttled: '7700900302', both: '7700900303' }[name]!;
    const put = await gw.adminPut(
      `/admin/users/${userId}`,
      sampleUser(userId, {
        mobile_prefix: '+44',
        mobile,
        origin: 'brand-1',
        consents: [{ type: 'sms', opted_in: true }],
        consents_updated_at: new Date().toISOString(),
      }),
    );
    expect(put.status).toBeLessThan(300);
    const res = await twilio.postInbound(`${gw.url}/mo/${name}`, { from: `+44${mobile}`, to: OUR_NUMBER, body: 'STOP' });
    expect(res.status).toBe(200);
    const consents = (await gw.get(`/userconsents/${userId}`)).json.consents as Array<{ type: string; opted_in: boolean }>;
    expect(consents.find((c) => c.type === 'sms')?.opted_in).toBe(false);
  });

  it('a route has no inbound door of its own: /mo/{route} is refused, its members keep theirs', async () => {
    const res = await twilio.postInbound(`${gw.url}/mo/promo`, { from: '+447700900304', to: OUR_NUMBER, body: 'STOP' });
    expect(res.status).toBe(404);
  });
});
