/**
 * Idempotency on activity.id (docs/design.md §4): what a retry answers and whether it reaches the provider, checked in the
 * ledger on its own read-only connection. A send that reached the sandbox leaves its provider_message_id (random
 * per call) in the row and `attempts` counts provider calls, so a second call would show in either.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, TEST_API_KEY, type TestGateway } from '../helpers/gateway.js';
import { countMessages, readMessage, readMessages } from '../helpers/ledger.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

const single = (message: unknown) => gw.post('/channels/sms/single', message);

describe('sequential retries', () => {
  it('a retry of a sent id answers the same sms_id and does not call the provider again', async () => {
    const first = await single(smsMessage('idem-sent'));
    const sent = await readMessage(gw, 'idem-sent');
    const second = await single(smsMessage('idem-sent'));
    expect(first.status).toBe(200);
    expect(second).toMatchObject({ status: 200, json: { sms_id: first.json.sms_id } });
    const after = await readMessage(gw, 'idem-sent');
    expect(after).toEqual(sent);
    expect(after).toMatchObject({ state: 'submitted', attempts: 1, provider_message_id: expect.stringMatching(/^sbx-/) });
  });

  it('a retry with different content is still the same message: same sms_id, nothing sent', async () => {
    const first = await single(smsMessage('idem-changed'));
    const second = await single(smsMessage('idem-changed', { content: 'A different text', recipient: '+447700900999' }));
    expect(second.json.sms_id).toBe(first.json.sms_id);
    expect(await readMessage(gw, 'idem-changed')).toMatchObject({ attempts: 1, recipient: '+447700900123' });
  });

  it('a retry of a permanently failed id answers the same 400 error and sms_id without sending again', async () => {
    const message = smsMessage('idem-rejected', { recipient: '+447700900004' });
    const first = await single(message);
    const second = await single(message);
    expect(first.status).toBe(400);
    expect(first.json).toEqual({ error: expect.stringMatching(/rejects/), sms_id: expect.any(String) });
    expect(second).toMatchObject({ status: 400, json: first.json });
    expect(await readMessage(gw, 'idem-rejected')).toMatchObject({ state: 'rejected', attempts: 1, sms_id: first.json.sms_id });
  });

  it('a retry of a transiently failed id is sent again each time, under the same sms_id', async () => {
    // The sandbox decides by recipient, so every attempt at …0005 is transient again: attempts must grow.
    const message = smsMessage('idem-transient', { recipient: '+447700900005' });
    const smsIds = new Set<string>();
    for (let attempt = 1; attempt <= 3; attempt++) {
      const res = await single(message);
      expect(res.status).toBe(503);
      expect(await readMessage(gw, 'idem-transient')).toMatchObject({ state: 'retryable', attempts: attempt });
      smsIds.add((await readMessage(gw, 'idem-transient')).sms_id);
    }
    expect(smsIds.size).toBe(1);
  });

  it('a transient failure retried to a deliverable recipient is sent and keeps its sms_id', async () => {
    await single(smsMessage('idem-recovers', { recipient: '+447700900005' }));
    const failed = await readMessage(gw, 'idem-recovers');
    const retry = await single(smsMessage('idem-recovers'));
    expect(retry).toMatchObject({ status: 200, json: { sms_id: failed.sms_id } });
    expect(await readMessage(gw, 'idem-recovers')).toMatchObject({ state: 'submitted', attempts: 2, recipient: '+447700900123' });
  });

  it('string "123" and integer 123 are the same activity by design (one key, one message)', async () => {
    const asString = await single(smsMessage('123'));
    const asNumber = await single(smsMessage(123));
    expect(asNumber).toMatchObject({ status: 200, json: { sms_id: asString.json.sms_id } });
    expect(await readMessage(gw, '123')).toMatchObject({ attempts: 1 });
  });
});

describe('concurrent duplicates', () => {
  it('20 parallel singles with one activity.id all answer 200 with one sms_id, and one row is sent once', async () => {
    const rowsBefore = await countMessages(gw);
    const answers = await Promise.all(Array.from({ length: 20 }, () => single(smsMessage('idem-parallel'))));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.json.sms_id)).size).toBe(1);
    expect(await countMessages(gw)).toBe(rowsBefore + 1);
    expect(await readMessage(gw, 'idem-parallel')).toMatchObject({ state: 'submitted', attempts: 1, sms_id: answers[0]!.json.sms_id });
  });

  it('a single and a batch racing on one activity.id share one sms_id', async () => {
    const [one, many] = await Promise.all([single(smsMessage('idem-race')), gw.post('/channels/sms/batch', [smsMessage('idem-race')])]);
    expect(one.status).toBe(200);
    expect(many.json.successful).toEqual([{ id: 'idem-race', sms_id: one.json.sms_id }]);
    expect(await readMessage(gw, 'idem-race')).toMatchObject({ attempts: 1 });
  });

  it('two batches racing on the same 200 ids answer each id with one sms_id, and each row is sent once', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `idem-batches-${i}`);
    const rowsBefore = await countMessages(gw);
    const [a, b] = await Promise.all(
      [0, 1].map(() =>
        gw.post(
          '/channels/sms/batch',
          ids.map((id) => smsMessage(id)),
        ),
      ),
    );
    for (const res of [a!, b!]) expect(res.json).toMatchObject({ failed: [], fatal: [] });
    expect(a!.json.successful.map((e: { id: string }) => e.id)).toEqual(ids);
    expect(b!.json.successful).toEqual(a!.json.successful);
    expect(await countMessages(gw)).toBe(rowsBefore + 200);
    expect((await readMessages(gw, ids)).every((row) => row.attempts === 1)).toBe(true);
  });

  it('duplicates inside one batch make one row and both entries are successful with the same sms_id', async () => {
    const rowsBefore = await countMessages(gw);
    const res = await gw.post('/channels/sms/batch', [smsMessage('idem-dup'), smsMessage('idem-other'), smsMessage('idem-dup')]);
    expect(res.json.failed).toEqual([]);
    expect(res.json.fatal).toEqual([]);
    const dup = res.json.successful.filter((e: { id: string }) => e.id === 'idem-dup');
    expect(dup).toHaveLength(2);
    expect(dup[0].sms_id).toBe(dup[1].sms_id);
    expect(await countMessages(gw)).toBe(rowsBefore + 2);
    expect(await readMessage(gw, 'idem-dup')).toMatchObject({ attempts: 1, sms_id: dup[0].sms_id });
  });

  it('a batch holding 456 and "456" answers both entries with one sms_id and their own id types', async () => {
    const res = await gw.post('/channels/sms/batch', [smsMessage(456), smsMessage('456')]);
    expect(res.json.successful).toEqual([
      { id: 456, sms_id: expect.any(String) },
      { id: '456', sms_id: res.json.successful[0].sms_id },
    ]);
  });
});

describe('two gateways sharing one ledger file (two instances behind a load balancer)', () => {
  it('let one request per activity.id reach the provider; the others answer 503 or the same sms_id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-shared-'));
    const a = await startTestGateway({}, { dir });
    const b = await startTestGateway({}, { dir });
    try {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).post('/channels/sms/single', smsMessage('idem-two-instances'))));
      const row = await readMessage(a, 'idem-two-instances');
      expect(row).toMatchObject({ state: 'submitted', attempts: 1 });
      for (const answer of answers) {
        if (answer.status === 200) expect(answer.json).toEqual({ sms_id: row.sms_id });
        else expect(answer).toMatchObject({ status: 503, json: { error: expect.stringMatching(/being sent by another request/) } });
      }
      expect(answers.some((x) => x.status === 200)).toBe(true);
      // Once the send is recorded, either instance answers the retry with the same sms_id.
      expect((await b.post('/channels/sms/single', smsMessage('idem-two-instances'))).json).toEqual({ sms_id: row.sms_id });
    } finally {
      await Promise.all([a.close(), b.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the stored activity', () => {
  it('is the request activity byte for byte: same keys in the same order, same JSON types', async () => {
    const activityText =
      '{"trigger_hash":"h-9","id":"act-raw","brand_id":12,"user_id":"u-77","internal_user_id":4455,' +
      '"activity_id":31,"action_group_id":2,"action_id":8,"nested":{"z":1,"a":[true,null,"x"]},"score":2.5,"note":"é ✓"}';
    const body = `{"content":"hello","recipient":"+447700900123","provider_name":"sandbox","activity":${activityText}}`;
    expect((await single(body)).status).toBe(200);
    const stored = (await readMessage(gw, 'act-raw')).activity_json;
    expect(stored).toBe(activityText);
    expect(Object.keys(JSON.parse(stored))).toEqual(Object.keys(JSON.parse(activityText)));
  });

  it('keeps a numeric activity.id a number in the stored activity', async () => {
    expect((await single(smsMessage(778899))).status).toBe(200);
    expect(JSON.parse((await readMessage(gw, '778899')).activity_json)).toEqual(smsMessage(778899).activity);
  });

  it('keeps numbers a double cannot hold exactly: 64-bit ids and long decimals, in keys, answers and the ledger', async () => {
    // Both ids parse to the same double (2^53): they are still two activities, each answered with its own id.
    const activity = (id: string) => `{"id":${id},"brand_id":12345678901234567890,"score":0.12345678901234567890123,"user_id":"u-1"}`;
    const message = (id: string) => `{"content":"hello","recipient":"+447700900123","provider_name":"sandbox","activity":${activity(id)}}`;
    const post = async (path: string, body: string) => {
      const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY }, body });
      return { status: res.status, text: await res.text() };
    };

    const batch = await post('/channels/sms/batch', `[${message('9007199254740993')},${message('9007199254740992')}]`);
    expect(batch.status).toBe(200);
    expect(batch.text).toMatch(
      /^\{"successful":\[\{"id":9007199254740993,"sms_id":"[^"]+"\},\{"id":9007199254740992,"sms_id":"[^"]+"\}\],"failed":\[\],"fatal":\[\]\}$/,
    );
    const smsIds = [...batch.text.matchAll(/"sms_id":"([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(smsIds).size).toBe(2);

    for (const [k, id] of ['9007199254740993', '9007199254740992'].entries()) {
      expect((await readMessage(gw, id)).activity_json).toBe(activity(id));
      // A retry through the single endpoint is the same activity: same sms_id, nothing sent again.
      const retry = await post('/channels/sms/single', message(id));
      expect(JSON.parse(retry.text)).toEqual({ sms_id: smsIds[k] });
    }
    // The operators' view shows it as stored, not parsed into doubles.
    const admin = await fetch(`${gw.url}/admin/messages/${smsIds[0]}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    expect(await admin.text()).toContain(`"activity":${activity('9007199254740993')}`);
    const rows = await readMessages(gw, ['9007199254740993', '9007199254740992']);
    expect(rows.map((r) => [r.sms_id, r.attempts])).toEqual([
      [smsIds[1], 1],
      [smsIds[0], 1],
    ]);
  });
});
