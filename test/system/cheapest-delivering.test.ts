/**
 * `strategy: cheapest_delivering` end to end (docs/routing.md "Cheapest member that delivers"): a real gateway on an
 * ephemeral port, Infobip (cheaper) and Vonage (dearer) faked on their own wire formats with their receipts. Traffic
 * goes to Infobip while its receipts come fast; when they stop, its late messages pass the floor and traffic moves to
 * Vonage; once the late ones have left the (shortened) window and the cool-down is over, traffic comes back to
 * Infobip, whose receipts are fast again, and stays. Each decision is counted in /metrics and shown with its figures on
 * /admin/routing and the console's routing page. Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInfobipFake, type InfobipFake } from '../fakes/infobip.js';
import { startVonageFake, type VonageFake } from '../fakes/vonage.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const GB = '+447400123456';
const VONAGE_SECRET = 'vonage-signature-secret';
const INFOBIP_SECRET = 'infobip-webhook-secret-0123';

describe('a route that weighs price against delivery', () => {
  let vonage: VonageFake;
  let infobip: InfobipFake;
  let gw: TestGateway;
  let n = 0;

  beforeAll(async () => {
    vonage = await startVonageFake({ signatureSecret: VONAGE_SECRET, autoReceipts: { statuses: ['delivered'], transport: 'form' } });
    // Infobip reports nothing by itself: the test posts its reports, fast or not at all.
    infobip = await startInfobipFake({ reportStatuses: [] });
    gw = await startTestGateway({
      providers: {
        vonage: { type: 'vonage', api_key: vonage.apiKey, api_secret: vonage.apiSecret, base_url: vonage.url, signature_secret: VONAGE_SECRET },
        infobip: { type: 'infobip', api_key: infobip.apiKey, base_url: infobip.url, webhook_secret: INFOBIP_SECRET, from: 'Default' },
        promo: {
          type: 'route',
          // The dearer one listed first: the prices order them, not the list.
          members: ['vonage', 'infobip'],
          strategy: 'cheapest_delivering',
          // Notify's 15 minutes, 5 minutes and 85%, shortened so that the test runs in seconds.
          recent_delivery: { window: '3s', deadline: '400ms', floor: 0.85, min_sample: 4, recover_margin: 0.05, cool_down: '1s' },
        },
      },
      costs: {
        rates: {
          infobip: { currency: 'EUR', per_segment: { GB: '0.0200', '*': '0.0400' } },
          vonage: { currency: 'EUR', per_segment: { GB: '0.0500', '*': '0.0600' } },
        },
      },
      routing: { delivery_refresh: '100ms' },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await vonage?.close();
    await infobip?.close();
  });

  /** Sends one message through the route; answers its sms_id and the member that carried it. */
  const send = async () => {
    const id = `cd-${++n}`;
    const res = await gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'promo', recipient: GB }));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    const smsId = res.json.sms_id as string;
    const row = await gw.gateway.ledger.db.selectFrom('messages').select(['provider']).where('sms_id', '=', smsId).executeTakeFirstOrThrow();
    return { smsId, provider: row.provider };
  };
  /** Infobip's delivered report for the message, posted now; waits until the ledger has it. */
  const deliverAtInfobip = async (smsId: string) => {
    const sent = infobip.sends.find((s) => s.callbackData === smsId)!;
    expect(await infobip.postReport(sent.notifyUrl, [infobip.result(sent, 'DELIVERED_TO_HANDSET')])).toBe(200);
  };
  const infobipGB = async () => {
    const res = await gw.get('/admin/routing', ADMIN);
    const route = (res.json.delivery as Array<Record<string, any>>).find((d) => d.route === 'promo')!;
    const gb = (route.countries as Array<Record<string, any>>).find((c) => c.country === 'GB');
    return { gb, member: (gb?.members as Array<Record<string, any>> | undefined)?.find((m) => m.member === 'infobip') };
  };
  const decisions = async (member: string, reason: string) => {
    const text = await (await fetch(`${gw.url}/metrics`, { headers: ADMIN })).text();
    const line = new RegExp(`^sms_gateway_route_decisions_total\\{route="promo",country="GB",member="${member}",reason="${reason}"\\} (\\d+)$`, 'm').exec(text);
    return line ? Number(line[1]) : 0;
  };

  it('sends to the cheaper member while its receipts come fast', async () => {
    for (let i = 0; i < 4; i++) {
      const { smsId, provider } = await send();
      expect(provider).toBe('infobip');
      await deliverAtInfobip(smsId);
    }
    expect(await decisions('infobip', 'cheapest')).toBe(4);
  });

  it('steps the cheaper member down once its receipts stop, and sends to the dearer one', async () => {
    const silent: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { smsId, provider } = await send();
      expect(provider).toBe('infobip');
      silent.push(smsId);
    }
    // Past the 400 ms deadline without a receipt, the four count as late: 4 of 8 on time, under the 85% floor.
    await waitFor(async () => (await infobipGB()).member?.state === 'stepped_down', 5_000, 'infobip stepped down in GB');
    const moved = await send();
    expect(moved.provider).toBe('vonage');
    for (let i = 0; i < 2; i++) expect((await send()).provider).toBe('vonage');
    expect(await decisions('vonage', 'cheaper_stepped_down')).toBe(3);

    // The figures the decision used, on /admin/routing and on the console.
    const { gb, member } = await infobipGB();
    expect(member).toMatchObject({ price: '0.02', currency: 'EUR', state: 'stepped_down', counted: true });
    expect(member!.share).toBeLessThan(0.85);
    expect(gb!.last_decision).toMatchObject({ rule: 'catch-all', order: ['vonage', 'infobip'], reason: 'cheaper_stepped_down' });
    expect(gb!.last_decision.members.find((m: { member: string }) => m.member === 'vonage')).toMatchObject({ price: '0.05', state: 'in' });
    const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await fetch(`${gw.url}/console/routing`, { headers: { cookie } })).text();
    expect(page).toContain('Cheapest member that delivers: route promo');
    expect(page).toMatch(/<tr data-country="GB" data-member="infobip">.*0\.02 EUR.*stepped down since/s);
    expect(page).toMatch(/vonage → infobip \(cheaper stepped down\); used vonage 0\.05, (?:[\d.]+%|—) of \d+; infobip 0\.02, [\d.]+% of \d+, stepped down/);

    // Its receipts come at last, late: they do not bring it back.
    for (const smsId of silent) await deliverAtInfobip(smsId);
    expect((await send()).provider).toBe('vonage');
  });

  it('comes back to the cheaper member once its late messages have left the window, and stays while its receipts are fast', async () => {
    // The cool-down (1 s) is over and its late messages have left the 3 s window: back, to be judged afresh.
    await waitFor(async () => (await infobipGB()).member?.state === 'in', 8_000, 'infobip back in GB');
    for (let i = 0; i < 6; i++) {
      const { smsId, provider } = await send();
      expect(provider).toBe('infobip');
      await deliverAtInfobip(smsId);
    }
    // Past the deadline its fresh messages are judged, all on time: it stays in.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await send()).provider).toBe('infobip');
    const { member } = await infobipGB();
    expect(member).toMatchObject({ state: 'in' });
    expect(await decisions('infobip', 'cheapest')).toBeGreaterThanOrEqual(11);
  });
});
