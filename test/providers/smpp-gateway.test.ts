/**
 * SMPP end to end through the real gateway (HTTP server, SQLite or PostgreSQL ledger, conversion worker): POST
 * /channels/sms/single → submit_sm to the fake SMSC → deliver_sm receipt on the bind → conversion at the fake CRM.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { startSmppFake, type SmppFake } from '../fakes/smpp.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
let smsc: SmppFake;
let gw: TestGateway;

const conversionsFor = (smsId: string) => crm.conversions.filter((c) => c.sms_id === smsId);
const messageRow = (smsId: string) => gw.gateway.ledger.db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirstOrThrow();

beforeAll(async () => {
  await crm.start();
  smsc = await startSmppFake({ receipts: 'after' });
  gw = await startTestGateway({
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
    providers: {
      smpp: {
        type: 'smpp',
        aliases: ['aggregator'],
        host: smsc.host,
        port: smsc.port,
        system_id: smsc.systemId,
        password: smsc.password,
        rebind_min: '20ms',
        rebind_max: '100ms',
      },
    },
  });
  await waitFor(() => smsc.boundSessions() === 1, 5_000, 'the bind');
});
afterAll(async () => {
  await gw.close();
  await smsc.close();
  await crm.stop();
});
beforeEach(() => {
  smsc.options.receipts = 'after';
  smsc.options.receiptStat = 'DELIVRD';
});

describe('smpp through the gateway', () => {
  it('sends a single message and posts its delivered conversion after the deliver_sm receipt', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('smpp-1', { provider_name: 'aggregator' }));
    expect(res.status).toBe(200);
    const submit = smsc.submits.at(-1)!;
    expect(submit).toMatchObject({ destination: '447700900123', source: 'Casino', text: 'Your bonus is waiting' });
    await waitFor(() => conversionsFor(res.json.sms_id).length > 0, 10_000, 'the conversion');
    expect(conversionsFor(res.json.sms_id)).toEqual([{ activity: smsMessage('smpp-1').activity, sms_id: res.json.sms_id, delivery_status: 'delivered' }]);
    expect(await messageRow(res.json.sms_id)).toMatchObject({
      provider: 'smpp',
      state: 'submitted',
      provider_message_id: submit.messageId,
      delivery_status: 'delivered',
    });
  });

  it("matches receipts that arrive before each part's submit_sm_resp and reports one status for the whole message", async () => {
    smsc.options.receipts = 'before';
    // Parked until the send is recorded, then rolled up: part one's DELIVRD alone must not report the message.
    smsc.options.receiptStats = ['DELIVRD', 'UNDELIV', 'DELIVRD'];
    const res = await gw.post(
      '/channels/sms/single',
      smsMessage('smpp-long', { provider_name: 'smpp', content: 'Free bet on the match tonight! '.repeat(12) }),
    );
    expect(res.status).toBe(200);
    const parts = await gw.gateway.ledger.db.selectFrom('message_parts').selectAll().where('sms_id', '=', res.json.sms_id).orderBy('part_index').execute();
    expect(parts).toHaveLength(3);
    await waitFor(() => conversionsFor(res.json.sms_id).length > 0, 10_000, 'the conversion');
    expect(conversionsFor(res.json.sms_id).map((c) => c.delivery_status)).toEqual(['undelivered']);
    expect(smsc.receiptAnswers.slice(-3)).toEqual([0, 0, 0]);
  });

  it('reports a multipart message undelivered when one part is, once, whatever the other parts say later', async () => {
    smsc.options.receipts = 'none';
    const res = await gw.post(
      '/channels/sms/single',
      smsMessage('smpp-partial', { provider_name: 'smpp', content: 'Cashback weekend starts now. '.repeat(8) }),
    );
    expect(res.status).toBe(200);
    const ids = smsc.submits.slice(-2).map((s) => s.messageId!);
    await smsc.sendReceipt(ids[0]!, 'DELIVRD');
    await smsc.sendReceipt(ids[1]!, 'UNDELIV', 'tlv');
    await waitFor(() => conversionsFor(res.json.sms_id).length > 0, 10_000, 'the conversion');
    await smsc.sendReceipt(ids[1]!, 'DELIVRD');
    expect(conversionsFor(res.json.sms_id).map((c) => c.delivery_status)).toEqual(['undelivered']);
  });

  it('answers 400 for an invalid destination and 503 for throttling', async () => {
    smsc.nextStatuses.push(0x0b);
    const invalid = await gw.post('/channels/sms/single', smsMessage('smpp-invalid', { provider_name: 'smpp' }));
    expect(invalid.status).toBe(400);
    expect(invalid.json.error).toMatch(/ESME_RINVDSTADR/);
    smsc.nextStatuses.push(0x58);
    const throttled = await gw.post('/channels/sms/single', smsMessage('smpp-throttled', { provider_name: 'smpp' }));
    expect(throttled.status).toBe(503);
    expect(throttled.json.error).toMatch(/ESME_RTHROTTLED/);
    const retry = await gw.post('/channels/sms/single', smsMessage('smpp-throttled', { provider_name: 'smpp' }));
    expect(retry.status).toBe(200);
  });

  it('answers 503 at once while the bind is down, and sends again after the rebind', async () => {
    smsc.refuseBinds = true;
    smsc.dropConnections();
    await waitFor(() => smsc.binds.at(-1)?.accepted === false, 5_000, 'a refused rebind');
    const started = Date.now();
    const down = await gw.post('/channels/sms/single', smsMessage('smpp-down', { provider_name: 'smpp' }));
    expect(down.status).toBe(503);
    expect(down.json.error).toMatch(/bind to the SMSC is down/);
    expect(Date.now() - started).toBeLessThan(1_000);
    smsc.refuseBinds = false;
    await waitFor(() => smsc.boundSessions() === 1, 5_000, 'the rebind');
    expect((await gw.post('/channels/sms/single', smsMessage('smpp-down', { provider_name: 'smpp' }))).status).toBe(200);
  });

  it('refuses receipts posted over HTTP to /dlr/smpp', async () => {
    const res = await fetch(`${gw.url}/dlr/smpp`, { method: 'POST', body: 'id:1 stat:DELIVRD' });
    expect(res.status).toBe(403);
  });
});

describe('smpp with several gateway instances', () => {
  it("each instance holds its own bind, and a receipt arriving on the other instance's bind still converts once", async () => {
    const shared = await startSmppFake({ receipts: 'none' });
    const providers = { smpp: { type: 'smpp', host: shared.host, port: shared.port, system_id: shared.systemId, password: shared.password } };
    const settings = { crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' }, delivery: { poll_interval: '20ms' }, providers };
    const first = await startTestGateway(settings);
    const second = await startTestGateway(settings, { dir: first.dir });
    try {
      await waitFor(() => shared.boundSessions() === 2, 5_000, 'two binds');
      const res = await first.post('/channels/sms/single', smsMessage('smpp-two-binds', { provider_name: 'smpp' }));
      expect(res.status).toBe(200);
      await shared.sendReceipt(shared.submits.at(-1)!.messageId!, 'DELIVRD', 'text', 'other');
      expect(shared.receiptAnswers).toEqual([0]);
      await waitFor(() => conversionsFor(res.json.sms_id).length > 0, 10_000, 'the conversion');
      expect(conversionsFor(res.json.sms_id).map((c) => c.delivery_status)).toEqual(['delivered']);
    } finally {
      await second.close();
      await first.close();
      await shared.close();
    }
  });
});

describe("smpp and the gateway's lifecycle", () => {
  it('unbinds when the gateway stops', async () => {
    const own = await startSmppFake();
    const other = await startTestGateway({
      providers: { smpp: { type: 'smpp', host: own.host, port: own.port, system_id: own.systemId, password: own.password } },
    });
    // Bound on both sides once a send goes through (the fake counts the bind before its answer arrives).
    await waitFor(async () => (await other.post('/channels/sms/single', smsMessage('smpp-stop', { provider_name: 'smpp' }))).status === 200, 5_000, 'a send');
    await other.close();
    expect(own.unbinds).toBe(1);
    await waitFor(() => own.boundSessions() === 0, 5_000, 'the connection to close');
    await own.close();
  });
});
