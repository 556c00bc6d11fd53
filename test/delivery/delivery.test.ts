import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
let gw: TestGateway;

function gatewayWith(overrides: Record<string, unknown> = {}) {
  return startTestGateway({
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
    ...overrides,
  });
}

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const conversionsFor = (smsId: string) => crm.conversions.filter((c) => c.sms_id === smsId);

beforeAll(async () => {
  await crm.start();
});
afterAll(async () => crm.stop());
afterEach(async () => {
  await gw?.close();
  crm.reset();
});

describe('send → receipt → conversion', () => {
  it.each([
    ['a string activity id', 'e2e-string', '+447700900123', 'delivered'],
    ['an integer activity id', 424242, '+447700900124', 'delivered'],
    ['an undelivered message', 'e2e-undelivered', '+447700900001', 'undelivered'],
    ['a message failing after acceptance', 'e2e-failed', '+447700900002', 'failed'],
  ])('reports %s to the CRM once, with the activity exactly as sent', async (_label, id, recipient, status) => {
    gw = await gatewayWith();
    const message = smsMessage(id, { recipient });
    const sent = await gw.post('/channels/sms/single', message);
    expect(sent.status).toBe(200);
    const [conversion] = await waitFor(() => (conversionsFor(sent.json.sms_id).length > 0 ? conversionsFor(sent.json.sms_id) : undefined));
    expect(conversion).toEqual({ activity: message.activity, sms_id: sent.json.sms_id, delivery_status: status });
    // Same keys in the same order, same JSON types.
    expect(JSON.stringify(conversion!.activity)).toBe(JSON.stringify(message.activity));
  });

  it('ignores duplicate and out-of-order receipts after the first terminal status', async () => {
    gw = await gatewayWith({ providers: { sandbox: { type: 'sandbox', dlr_delay_ms: 60_000 } } });
    const sent = await gw.post('/channels/sms/single', smsMessage('ooo-1'));
    const smsId = sent.json.sms_id as string;
    const post = (status: string) => gw.postReceipt([{ sms_id: smsId, message_id: 'x', status }]);
    expect((await post('sent')).status).toBe(200);
    expect((await post('delivered')).status).toBe(200);
    expect((await post('delivered')).status).toBe(200);
    expect((await post('sent')).status).toBe(200);
    expect((await post('undelivered')).status).toBe(200);
    await waitFor(() => conversionsFor(smsId).length > 0);
    const story = await gw.get(`/admin/messages/${smsId}`, admin);
    expect(story.json.message.delivery_status).toBe('delivered');
    expect(story.json.receipts.map((r: { provider_status: string }) => r.provider_status)).toEqual(['sent', 'delivered', 'undelivered']);
    await gw.gateway.sweep();
    expect(conversionsFor(smsId)).toHaveLength(1);
  });

  // The sandbox's receipts without the sms_id, as SMPP's: their messages are found by the provider's id.
  const idOnlySandbox = { providers: { sandbox: { type: 'sandbox', dlr_delay_ms: 60_000, receipts_name_sms_id: false } } };

  it('parks a receipt whose provider id is not known yet and applies it once the message appears', async () => {
    gw = await gatewayWith(idOnlySandbox);
    const early = await gw.postReceipt([{ message_id: 'not-yet-known', status: 'delivered' }]);
    expect(early.status).toBe(200);
    const rows = await gw.gateway.ledger.db.selectFrom('receipts').selectAll().where('provider_message_id', '=', 'not-yet-known').execute();
    expect(rows).toMatchObject([{ matched: 0, sms_id: null }]);
    // The message that this provider id belongs to: recorded by hand as a provider answer would be.
    const sent = await gw.post('/channels/sms/single', smsMessage('parked-1'));
    await gw.gateway.ledger.db.updateTable('messages').set({ provider_message_id: 'not-yet-known' }).where('sms_id', '=', sent.json.sms_id).execute();
    await gw.gateway.sweep();
    await waitFor(() => conversionsFor(sent.json.sms_id).length > 0);
    expect(conversionsFor(sent.json.sms_id)[0]!.delivery_status).toBe('delivered');
  });

  // A receipt found by the provider's id is keyed by its message's clock (receiptDedupKey), so that an SMPP receipt's key
  // is led by time too, and a parked one is given that key when it is matched; the key it had while parked, or under a
  // build that keyed it without, still makes it a duplicate.
  it('stores a receipt found by the provider id once, under its message, however it was first stored', async () => {
    gw = await gatewayWith(idOnlySandbox);
    const receiptsOf = (pm: string) =>
      gw.gateway.ledger.db.selectFrom('receipts').select(['dedup_key', 'sms_id', 'matched']).where('provider_message_id', '=', pm).orderBy('id').execute();
    const known = await gw.post('/channels/sms/single', smsMessage('keyed-by-message'));
    const parked = await gw.post('/channels/sms/single', smsMessage('parked-first'));
    const legacy = await gw.post('/channels/sms/single', smsMessage('stored-by-an-older-build'));
    for (const [sent, pm] of [
      [known, 'pm-known'],
      [legacy, 'pm-legacy'],
    ] as const) {
      await gw.gateway.ledger.db.updateTable('messages').set({ provider_message_id: pm }).where('sms_id', '=', sent.json.sms_id).execute();
    }
    // An older build's row: matched, its key without the sms_id.
    const olderBuildRow = (smsId: string, pm: string) => ({
      provider: 'sandbox',
      dedup_key: `sandbox||${pm}|delivered|`,
      sms_id: smsId,
      provider_message_id: pm,
      provider_status: 'delivered',
      mapped_status: 'delivered',
      error_code: null,
      matched: 1,
      received_at: Date.now(),
      price_micros: null,
      price_currency: null,
    });
    await gw.gateway.ledger.db.insertInto('receipts').values(olderBuildRow(legacy.json.sms_id, 'pm-legacy')).execute();
    const clock = (smsId: string) => smsId.replaceAll('-', '').slice(0, 12);
    expect((await gw.postReceipt([{ message_id: 'pm-parked', status: 'delivered' }])).status).toBe(200);
    // Parked too, while a copy matched by another instance already holds the key it would be given (PostgreSQL's race).
    const taken = await gw.post('/channels/sms/single', smsMessage('parked-and-taken'));
    expect((await gw.postReceipt([{ message_id: 'pm-taken', status: 'delivered' }])).status).toBe(200);
    await gw.gateway.ledger.db
      .insertInto('receipts')
      .values({ ...olderBuildRow(taken.json.sms_id, 'pm-taken'), dedup_key: `sandbox|${clock(taken.json.sms_id)}|pm-taken|delivered|` })
      .execute();
    await gw.gateway.ledger.db.updateTable('messages').set({ provider_message_id: 'pm-taken' }).where('sms_id', '=', taken.json.sms_id).execute();
    await gw.gateway.ledger.db.updateTable('messages').set({ provider_message_id: 'pm-parked' }).where('sms_id', '=', parked.json.sms_id).execute();
    await gw.gateway.sweep();
    for (let round = 0; round < 2; round++) {
      const body = ['pm-known', 'pm-parked', 'pm-legacy'].map((pm) => ({ message_id: pm, status: 'delivered' }));
      expect((await gw.postReceipt(body)).status).toBe(200);
    }
    expect(await receiptsOf('pm-known')).toEqual([
      { dedup_key: `sandbox|${clock(known.json.sms_id)}|pm-known|delivered|`, sms_id: known.json.sms_id, matched: 1 },
    ]);
    expect(await receiptsOf('pm-parked')).toEqual([
      { dedup_key: `sandbox|${clock(parked.json.sms_id)}|pm-parked|delivered|`, sms_id: parked.json.sms_id, matched: 1 },
    ]);
    expect(await receiptsOf('pm-legacy')).toHaveLength(1);
    expect((await receiptsOf('pm-taken')).map((r) => r.dedup_key)).toEqual([
      'sandbox||pm-taken|delivered|',
      `sandbox|${clock(taken.json.sms_id)}|pm-taken|delivered|`,
    ]);
    await waitFor(() => conversionsFor(known.json.sms_id).length > 0 && conversionsFor(parked.json.sms_id).length > 0);
    await gw.gateway.sweep();
    expect(conversionsFor(known.json.sms_id)).toHaveLength(1);
    expect(conversionsFor(parked.json.sms_id)).toHaveLength(1);
    // The older build's row was applied by that build: this one counted its repeats as duplicates, so none was posted.
    expect(conversionsFor(legacy.json.sms_id)).toHaveLength(0);
  });

  // messages_provider_id_only is led by the message's day: a receipt looks in today's and yesterday's first, then in
  // every older day back to the oldest message (src/ledger/receipt-targets.ts).
  it("applies a receipt carrying only the provider id (as SMPP's do) to a message created 80 days ago", async () => {
    gw = await gatewayWith(idOnlySandbox);
    const old = await gw.post('/channels/sms/single', smsMessage('eighty-days-old'));
    const recent = await gw.post('/channels/sms/single', smsMessage('sent-today'));
    const at = Date.now() - 80 * 86_400_000;
    await gw.gateway.ledger.db
      .updateTable('messages')
      .set({ provider_message_id: 'pm-80-days', created_at: at, updated_at: at, dispatched_at: at, submitted_at: at })
      .where('sms_id', '=', old.json.sms_id)
      .execute();
    await gw.gateway.ledger.db.updateTable('messages').set({ provider_message_id: 'pm-today' }).where('sms_id', '=', recent.json.sms_id).execute();
    expect((await gw.postReceipt([{ message_id: 'pm-today', status: 'delivered' }])).status).toBe(200);
    expect((await gw.postReceipt([{ message_id: 'pm-80-days', status: 'undelivered' }])).status).toBe(200);
    await waitFor(() => conversionsFor(old.json.sms_id).length > 0 && conversionsFor(recent.json.sms_id).length > 0);
    expect(conversionsFor(old.json.sms_id)).toMatchObject([{ delivery_status: 'undelivered' }]);
    expect(conversionsFor(recent.json.sms_id)).toMatchObject([{ delivery_status: 'delivered' }]);
    const receipts = await gw.gateway.ledger.db.selectFrom('receipts').select(['provider_message_id', 'sms_id']).orderBy('id').execute();
    expect(receipts).toEqual([
      { provider_message_id: 'pm-today', sms_id: recent.json.sms_id },
      { provider_message_id: 'pm-80-days', sms_id: old.json.sms_id },
    ]);
  });

  it('matches again every parked receipt, not only the oldest thousand', async () => {
    gw = await gatewayWith(idOnlySandbox);
    // Receipts for messages this gateway never sent (another system on the same provider account).
    const orphans = Array.from({ length: 1_200 }, (_, k) => ({ message_id: `someone-else-${k}`, status: 'delivered' }));
    // Two requests: one holds at most delivery.max_receipt_events (1,000).
    for (const part of [orphans.slice(0, 600), orphans.slice(600)]) expect((await gw.postReceipt(part)).status).toBe(200);
    expect((await gw.postReceipt([{ message_id: 'ours-later', status: 'delivered' }])).status).toBe(200);
    const sent = await gw.post('/channels/sms/single', smsMessage('parked-behind-orphans'));
    await gw.gateway.ledger.db.updateTable('messages').set({ provider_message_id: 'ours-later' }).where('sms_id', '=', sent.json.sms_id).execute();
    expect(await gw.gateway.sweep()).toMatchObject({ rematched: 1, expired: 0 });
    await waitFor(() => conversionsFor(sent.json.sms_id).length > 0);
  });

  it('sets aside receipts parked longer than delivery.parked_receipt_ttl, keeping them on record', async () => {
    let now = Date.now();
    gw = await startTestGateway(
      {
        crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
        delivery: { poll_interval: '20ms', parked_receipt_ttl: '1h' },
        providers: { sandbox: { type: 'sandbox', dlr_delay_ms: 60_000 } },
      },
      { now: () => now },
    );
    expect((await gw.postReceipt([{ message_id: 'never-ours', status: 'delivered' }])).status).toBe(200);
    expect(await gw.gateway.sweep()).toMatchObject({ expired: 0 });
    now += 3_600_001;
    expect((await gw.postReceipt([{ message_id: 'recent-orphan', status: 'delivered' }])).status).toBe(200);
    expect(await gw.gateway.sweep()).toMatchObject({ expired: 1, rematched: 0 });
    const rows = await gw.gateway.ledger.db.selectFrom('receipts').select(['provider_message_id', 'matched']).orderBy('id').execute();
    expect(rows).toEqual([
      { provider_message_id: 'never-ours', matched: 2 },
      { provider_message_id: 'recent-orphan', matched: 0 },
    ]);
    expect(await gw.gateway.sweep()).toMatchObject({ expired: 0 });
  });

  it('refuses a receipt that fails verification with 403 and records nothing', async () => {
    gw = await gatewayWith({ providers: { sandbox: { type: 'sandbox', dlr_delay_ms: 0, receipt_secret: 's3cret' } } });
    const forged = await gw.post('/dlr/sandbox', [{ sms_id: 'x', message_id: 'y', status: 'delivered' }], { 'x-sandbox-signature': 'bad' });
    expect(forged.status).toBe(403);
    const count = await gw.gateway.ledger.db
      .selectFrom('receipts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
    // Signed receipts from the sandbox itself still flow.
    const sent = await gw.post('/channels/sms/single', smsMessage('signed-1'));
    await waitFor(() => conversionsFor(sent.json.sms_id).length > 0);
  });

  it('turns a message without a terminal receipt into delivery_unknown after unknown_after, and lets a late receipt replace it', async () => {
    gw = await gatewayWith({ delivery: { unknown_after: '1ms', poll_interval: '20ms' } });
    const sent = await gw.post('/channels/sms/single', smsMessage('silent-1', { recipient: '+447700900003' }));
    // A sweep in the same millisecond as the send's record finds it not yet older than unknown_after: sweep again.
    await waitFor(async () => (await gw.gateway.sweep()).unknown > 0);
    const [unknown] = await waitFor(() => (conversionsFor(sent.json.sms_id).length > 0 ? conversionsFor(sent.json.sms_id) : undefined));
    expect(unknown!.delivery_status).toBe('delivery_unknown');
    await gw.postReceipt([{ sms_id: sent.json.sms_id, message_id: 'late', status: 'delivered' }]);
    await waitFor(() => conversionsFor(sent.json.sms_id).length === 2);
    expect(conversionsFor(sent.json.sms_id).map((c) => c.delivery_status)).toEqual(['delivery_unknown', 'delivered']);
  });
});

describe('the conversion webhook being down', () => {
  it('loses nothing and doubles nothing while the CRM fails and then recovers', async () => {
    gw = await gatewayWith();
    crm.failNext(3, 503);
    const ids = Array.from({ length: 30 }, (_, i) => `down-${i}`);
    const batch = await gw.post(
      '/channels/sms/batch',
      ids.map((id, i) => smsMessage(id, { recipient: `+44770091${1000 + i}` })),
    );
    expect(batch.json.successful).toHaveLength(30);
    const smsIds = batch.json.successful.map((s: { sms_id: string }) => s.sms_id);
    await waitFor(() => smsIds.every((id: string) => conversionsFor(id).length > 0), 15_000, 'all conversions');
    for (const id of smsIds) expect(conversionsFor(id)).toHaveLength(1);
  });

  it('dead-letters after max_attempts and posts again after an admin replay', async () => {
    gw = await gatewayWith({ delivery: { max_attempts: 2, poll_interval: '20ms', retry_initial_ms: 10, retry_max_ms: 20 } });
    crm.failNext(2, 500);
    const sent = await gw.post('/channels/sms/single', smsMessage('dead-1'));
    const smsId = sent.json.sms_id as string;
    await waitFor(async () => (await gw.get(`/admin/messages/${smsId}`, admin)).json.conversions?.[0]?.dead === 1, 10_000, 'dead letter');
    expect(conversionsFor(smsId)).toHaveLength(0);
    const replay = await gw.post('/admin/conversions/replay', {}, admin);
    expect(replay.json).toEqual({ replayed: 1 });
    await waitFor(() => conversionsFor(smsId).length === 1);
    const story = await gw.get(`/admin/messages/${smsId}`, admin);
    expect(story.json.conversions[0].attempt_log.map((a: { ok: number }) => a.ok)).toEqual([0, 0, 1]);
  });
});

describe('admin API', () => {
  it('requires the admin bearer key', async () => {
    gw = await gatewayWith();
    expect((await gw.get('/admin/messages?activity_id=x')).status).toBe(401);
    expect((await gw.get('/admin/messages?activity_id=x', { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await gw.get('/admin/messages?activity_id=x', admin)).json).toEqual({ messages: [], next_cursor: null });
  });
});

describe('receipts that race the send', () => {
  it('matches a receipt that arrives before the send call answered, and counts duplicates once', async () => {
    gw = await gatewayWith({ providers: { sandbox: { type: 'sandbox', early_receipts: true, duplicate_receipts: true } } });
    const sent = await gw.post('/channels/sms/single', smsMessage('early-1'));
    expect(sent.status).toBe(200);
    await waitFor(() => conversionsFor(sent.json.sms_id).length > 0);
    const story = await gw.get(`/admin/messages/${sent.json.sms_id}`, admin);
    expect(story.json.message).toMatchObject({ state: 'submitted', delivery_status: 'delivered' });
    expect(story.json.receipts).toHaveLength(1);
    await gw.gateway.sweep();
    expect(conversionsFor(sent.json.sms_id)).toHaveLength(1);
  });
});
