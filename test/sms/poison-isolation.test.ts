/**
 * One item that cannot be written never fails the others it was grouped with (docs/security.md). The poison is
 * real: a trigger in the test's SQLite ledger refuses one message's row at the moment of each grouped write (the
 * claim's insert, the recorded provider answer, the stored receipt), while good messages go through the same
 * groups at the same time. The lone-surrogate activity.id is the poison that turned a burst of bad bodies into
 * 503 `ledger unavailable` for ordinary messages: the ledger stored the key as other text, the claim could not
 * find it again and threw, and the whole group failed.
 */
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

function ledgerFile(g: TestGateway) {
  return new BetterSqlite3(g.config.database.url.slice('sqlite:'.length));
}

const goodIds = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-good-${i}`);

describe('a lone surrogate in activity.id among ordinary messages', () => {
  it('answers 400 naming the field for the bad bodies and sends every ordinary message', async () => {
    gw = await startTestGateway();
    const bad = Array.from({ length: 200 }, (_, i) => gw!.post('/channels/sms/single', JSON.stringify(smsMessage(`bad-${i}-\ud800`))));
    const good = goodIds('burst', 10).map((id) => gw!.post('/channels/sms/single', smsMessage(id)));
    const batch = gw.post('/channels/sms/batch', [smsMessage('batch-bad-\udc00'), smsMessage('batch-good')]);
    for (const r of await Promise.all(bad)) {
      expect(r.status).toBe(400);
      expect(r.json.error).toMatch(/^activity\.id: /);
    }
    for (const r of await Promise.all(good)) expect(r).toMatchObject({ status: 200, json: { sms_id: expect.any(String) } });
    const answer = (await batch).json;
    expect(answer.successful).toEqual([{ id: 'batch-good', sms_id: expect.any(String) }]);
    expect(answer.failed).toEqual([{ id: 'batch-bad-\udc00', error: expect.stringMatching(/^activity\.id: /) }]);
  });
});

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('a row the ledger refuses inside a grouped write', () => {
  it('claims: only the poison message fails; the rest of its batch and a concurrent single are sent', async () => {
    gw = await startTestGateway();
    const db = ledgerFile(gw);
    db.exec(`create trigger poison_claim before insert on messages when new.activity_key = 'poison-claim'
             begin select raise(abort, 'poisoned claim'); end`);
    db.close();
    const ids = goodIds('claim', 20);
    const [batch, single] = await Promise.all([
      gw.post('/channels/sms/batch', [
        ...ids.slice(0, 10).map((id) => smsMessage(id)),
        smsMessage('poison-claim'),
        ...ids.slice(10).map((id) => smsMessage(id)),
      ]),
      gw.post('/channels/sms/single', smsMessage('claim-single')),
    ]);
    expect(single).toMatchObject({ status: 200, json: { sms_id: expect.any(String) } });
    expect(batch.status).toBe(200);
    expect(batch.json.successful.map((e: { id: string }) => e.id).sort()).toEqual([...ids].sort());
    expect(batch.json.failed).toEqual([]);
    // The ledger did not say why (a trigger is not the caller's input): transient, nothing sent, the CRM retries.
    expect(batch.json.fatal).toEqual([{ id: 'poison-claim', error: 'ledger unavailable; nothing was sent, retry later' }]);
  });

  it('recorded answers: the poison message stays dispatching; every other answer is recorded', async () => {
    gw = await startTestGateway();
    const db = ledgerFile(gw);
    db.exec(`create trigger poison_record before update of state on messages
             when new.activity_key = 'poison-record' and new.state = 'submitted'
             begin select raise(abort, 'poisoned record'); end`);
    const ids = goodIds('record', 20);
    const batch = await gw.post('/channels/sms/batch', [...ids.map((id) => smsMessage(id)), smsMessage('poison-record')]);
    expect(batch.json.successful).toHaveLength(21);
    const states = new Map(
      (db.prepare(`select activity_key, state from messages`).all() as Array<{ activity_key: string; state: string }>).map((r) => [r.activity_key, r.state]),
    );
    db.close();
    for (const id of ids) expect(states.get(id)).toBe('submitted');
    expect(states.get('poison-record')).toBe('dispatching');
  });

  it('receipts: the events posted with the poison one are stored and reported', async () => {
    gw = await startTestGateway();
    const db = ledgerFile(gw);
    db.exec(`create trigger poison_receipt before insert on receipts
             when new.sms_id in (select sms_id from messages where activity_key = 'poison-receipt')
             begin select raise(abort, 'poisoned receipt'); end`);
    const ids = goodIds('receipt', 20);
    // One batch: the sandbox posts the receipts of messages sent together in one request (providers/sandbox.ts).
    const batch = await gw.post('/channels/sms/batch', [...ids.map((id) => smsMessage(id)), smsMessage('poison-receipt')]);
    expect(batch.json.successful).toHaveLength(21);
    const delivered = () =>
      (db.prepare(`select activity_key from messages where delivery_status is not null`).all() as Array<{ activity_key: string }>).map((r) => r.activity_key);
    await waitFor(() => delivered().length === ids.length, 10_000, 'the good receipts');
    expect(delivered().sort()).toEqual([...ids].sort());
    expect(db.prepare(`select count(*) as n from receipts`).get()).toEqual({ n: ids.length });
    db.close();
  });
});
