/**
 * POST /channels/sms/batch against the real server: every entry lands in exactly one of successful | failed | fatal
 * with its id as received (same JSON type), all three arrays are always present, and the batch deadline turns
 * entries not yet sent into fatal ones that a retry sends (docs/design.md §4).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { readMessages } from '../helpers/ledger.js';

type Entry = { id: unknown; sms_id?: string; error?: string };
type Answer = { successful: Entry[]; failed: Entry[]; fatal: Entry[] };

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

function entriesWithId(answer: Answer, id: unknown): Array<[keyof Answer, Entry]> {
  return (['successful', 'failed', 'fatal'] as const).flatMap((k) => answer[k].filter((e) => Object.is(e.id, id)).map((e): [keyof Answer, Entry] => [k, e]));
}

describe('a mixed batch', () => {
  const batch: unknown[] = [
    smsMessage('mix-ok'),
    smsMessage(9001),
    smsMessage('mix-invalid', { content: '' }),
    smsMessage('mix-permanent', { recipient: '+447700900004' }),
    smsMessage(9002, { recipient: '+447700900005' }),
    42,
    { content: 'no activity', recipient: '+447700900123', provider_name: 'sandbox' },
    smsMessage('mix-unknown-provider', { provider_name: 'nowhere' }),
  ];
  let res: { status: number; json: Answer };
  beforeAll(async () => {
    res = await gw.post('/channels/sms/batch', batch);
  });

  it('answers 200 with exactly the three arrays', () => {
    expect(res.status).toBe(200);
    expect(Object.keys(res.json).sort()).toEqual(['failed', 'fatal', 'successful']);
  });

  it('accounts for every request entry exactly once', () => {
    const { successful, failed, fatal } = res.json;
    expect(successful.length + failed.length + fatal.length).toBe(batch.length);
    for (const id of ['mix-ok', 9001, 'mix-invalid', 'mix-permanent', 9002, 'mix-unknown-provider']) expect(entriesWithId(res.json, id)).toHaveLength(1);
    expect(entriesWithId(res.json, null)).toHaveLength(2);
  });

  it.each<[string, unknown, keyof Answer, boolean, RegExp | null]>([
    ['a deliverable message with a string id', 'mix-ok', 'successful', true, null],
    ['a deliverable message with a numeric id', 9001, 'successful', true, null],
    ['an invalid message', 'mix-invalid', 'failed', false, /^content: must not be empty/],
    ['a message the provider rejects (…0004)', 'mix-permanent', 'failed', true, /rejects/],
    ['a message hitting a transient provider error (…0005)', 9002, 'fatal', true, /temporary/],
    ['a message naming an unknown provider', 'mix-unknown-provider', 'failed', false, /^provider_name: "nowhere" is not configured/],
  ])('puts %s in the right array, with an sms_id only when a row was written', (_label, id, category, hasSmsId, error) => {
    const [[where, entry]] = entriesWithId(res.json, id) as [[keyof Answer, Entry]];
    expect(where).toBe(category);
    expect(typeof entry.id).toBe(typeof id);
    if (hasSmsId) expect(entry.sms_id).toMatch(/^[0-9a-f-]{36}$/);
    else expect(entry).not.toHaveProperty('sms_id');
    if (error) expect(entry.error).toMatch(error);
    else expect(entry).not.toHaveProperty('error');
  });

  it('answers entries that are not objects or have no activity as failed with id null', () => {
    const errors = res.json.failed.filter((e) => e.id === null).map((e) => e.error);
    expect(errors.sort()).toEqual(['activity: is required', 'body: must be an SMS message object']);
  });

  it('writes ledger rows only for the entries that reached the dispatcher', async () => {
    const rows = await readMessages(gw, ['mix-ok', '9001', 'mix-invalid', 'mix-permanent', '9002', 'mix-unknown-provider']);
    expect(rows.map((r) => [r.activity_key, r.state])).toEqual([
      ['9001', 'submitted'],
      ['9002', 'retryable'],
      ['mix-ok', 'submitted'],
      ['mix-permanent', 'rejected'],
    ]);
  });
});

describe('batch bodies', () => {
  it('answers an empty array with three empty arrays', async () => {
    const res = await gw.post('/channels/sms/batch', []);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ successful: [], failed: [], fatal: [] });
  });

  it.each([
    ['an object', smsMessage('not-an-array')],
    ['a string', 'hello'],
    ['a number', 12],
    ['null', null],
  ])('answers 400 {error} when the body is %s instead of an array', async (_label, body) => {
    const res = await gw.post('/channels/sms/batch', JSON.stringify(body));
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: 'body: must be a JSON array of SMS message objects' });
  });

  it('echoes ids with unusual but valid JSON types as they arrived', async () => {
    const res = await gw.post('/channels/sms/batch', [smsMessage(0), smsMessage(-5), smsMessage('0')]);
    expect(res.json.successful.map((e: Entry) => e.id)).toEqual([0, -5, expect.anything()]);
    // "0" and 0 share one activity key by design, so the string entry is the same message as the integer one.
    expect(res.json.successful[2]).toEqual({ id: '0', sms_id: res.json.successful[0].sms_id });
  });
});

describe('the batch deadline', () => {
  const size = 1_000;
  const ids = Array.from({ length: size }, (_, i) => `deadline-${i}`);
  const batch = ids.map((id) => smsMessage(id));
  let dir: string;
  let first: Answer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-deadline-'));
    const hurried = await startTestGateway({ sms: { batch_deadline: '1ms' } }, { dir });
    try {
      const res = await hurried.post('/channels/sms/batch', batch);
      expect(res.status).toBe(200);
      first = res.json;
    } finally {
      await hurried.close();
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers entries not sent before it as fatal, each with its sms_id, and loses none', () => {
    expect(first.fatal.length).toBeGreaterThan(0);
    expect(first.failed).toEqual([]);
    expect(first.successful.length + first.fatal.length).toBe(size);
    for (const entry of first.fatal) {
      expect(entry.error).toMatch(/deadline/);
      expect(entry.sms_id).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(new Set([...first.successful, ...first.fatal].map((e) => e.id))).toEqual(new Set(ids));
  });

  it('sends the fatal entries when the CRM retries the batch, keeping every sms_id', async () => {
    const patient = await startTestGateway({}, { dir });
    try {
      const res = await patient.post('/channels/sms/batch', batch);
      expect(res.json.fatal).toEqual([]);
      expect(res.json.failed).toEqual([]);
      const before = new Map([...first.successful, ...first.fatal].map((e) => [e.id, e.sms_id]));
      expect(res.json.successful).toHaveLength(size);
      for (const entry of res.json.successful as Entry[]) expect(entry.sms_id).toBe(before.get(entry.id));

      const rows = await readMessages(patient, ids);
      expect(rows).toHaveLength(size);
      expect(rows.every((r) => r.state === 'submitted')).toBe(true);
      const retried = new Set(first.fatal.map((e) => e.id));
      for (const row of rows) expect(row.attempts).toBe(retried.has(row.activity_key) ? 2 : 1);
    } finally {
      await patient.close();
    }
  });
});

describe('a graceful stop while a batch waits for provider capacity', () => {
  const ids = Array.from({ length: 10 }, (_, i) => `stopping-${i}`);
  const batch = ids.map((id) => smsMessage(id));
  let dir: string;
  let first: Answer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-stopping-'));
    // Two messages a second: the first two go at once, the other eight wait their turn (up to 4 s).
    const slow = await startTestGateway({ providers: { sandbox: { rate_per_second: 2 } }, sms: { batch_deadline: '20s' } }, { dir });
    const answer = slow.post('/channels/sms/batch', batch);
    await waitFor(async () => (await readMessages(slow, ids)).filter((r) => r.state === 'submitted').length >= 2, 5_000, 'the first sends');
    await slow.close(); // what SIGTERM does
    const res = await answer;
    expect(res.status).toBe(200);
    first = res.json;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers at once: what was sent as successful, what still waited as fatal with its sms_id', () => {
    expect(first.failed).toEqual([]);
    expect(first.successful.length).toBeGreaterThanOrEqual(2);
    expect(first.fatal.length).toBeGreaterThan(0);
    expect(first.successful.length + first.fatal.length).toBe(ids.length);
    for (const entry of first.fatal) {
      expect(entry.error).toBe('not sent: the gateway is shutting down; retry');
      expect(entry.sms_id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('leaves those messages free to send: the retry on the next gateway sends them, keeping every sms_id', async () => {
    const next = await startTestGateway({}, { dir });
    try {
      const res = await next.post('/channels/sms/batch', batch);
      expect(res.json.fatal).toEqual([]);
      const before = new Map([...first.successful, ...first.fatal].map((e) => [e.id, e.sms_id]));
      for (const entry of res.json.successful as Entry[]) expect(entry.sms_id).toBe(before.get(entry.id));
      const rows = await readMessages(next, ids);
      expect(rows.every((r) => r.state === 'submitted')).toBe(true);
      const retried = new Set(first.fatal.map((e) => e.id));
      for (const row of rows) expect(row.attempts).toBe(retried.has(row.activity_key) ? 2 : 1);
    } finally {
      await next.close();
    }
  });
});
