/**
 * A burst of hostile bodies of every kind, sent at once with ordinary messages, against the real server: no
 * hostile body gets a 5xx, none is stored, and every ordinary message is sent once (docs/security.md).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const message = (id: string, extra = '') => JSON.stringify(smsMessage(id)).replace('"activity":{', `"activity":{${extra}`);

/** [label, path, body] for the i-th hostile request: a single must answer 4xx, a batch 200 with every entry failed. */
const hostile: Array<(i: number) => [string, string, string]> = [
  (i) => ['activity nesting 5,000 levels', 'single', message(`h-deep-${i}`, `"x":${deep(5_000)},`)],
  (i) => ['object nesting 100,000 levels', 'single', `{"activity":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`.replace('HOLE', String(i))],
  (i) => ['lone surrogate in activity.id', 'single', JSON.stringify(smsMessage(`h-sur-${i}-\ud83d`))],
  (i) => ['NUL in content', 'single', JSON.stringify(smsMessage(`h-nul-${i}`, { content: 'a\u0000b' }))],
  (i) => ['activity.id of 10,000 characters', 'single', JSON.stringify(smsMessage(`h-long-${i}-${'x'.repeat(10_000)}`))],
  (i) => [
    '__proto__ and constructor keys',
    'single',
    `{"__proto__":{"activity":{"id":"h-proto-${i}"}},"constructor":{"prototype":1},"content":"x","recipient":"+447700900123"}`,
  ],
  () => ['unparsable JSON', 'single', '{"activity":{"id":'],
  () => ['a batch of only deep entries', 'batch', `[${deep(3_000)},${deep(3_000)}]`],
];

describe('a burst of hostile bodies among ordinary messages', () => {
  it('answers every hostile one 4xx, stores none, and sends every ordinary message once', async () => {
    gw = await startTestGateway();
    const rounds = 60;
    const requests: Array<Promise<{ label: string; path: string; status: number; json: any }>> = [];
    const good: Array<Promise<{ status: number; json: any }>> = [];
    for (let i = 0; i < rounds; i++) {
      for (const make of hostile) {
        const [label, path, body] = make(i);
        requests.push(gw.post(`/channels/sms/${path}`, body).then((r) => ({ label, path, status: r.status, json: r.json })));
      }
      if (i % 3 === 0) good.push(gw.post('/channels/sms/single', smsMessage(`ordinary-${i}`)));
      if (i % 10 === 0) {
        // A batch mixing good entries with the same hostile ones: only those fail.
        const body = `[${message(`mixed-deep-${i}`, `"x":${deep(5_000)},`)},${JSON.stringify(smsMessage(`mixed-good-${i}`))},${JSON.stringify(smsMessage(`mixed-sur-${i}-\udfff`))}]`;
        good.push(gw.post('/channels/sms/batch', body));
      }
    }
    const answers = await Promise.all(requests);
    const fiveXx = answers.filter((a) => a.status >= 500);
    expect(fiveXx).toEqual([]);
    for (const a of answers) {
      if (a.path === 'single') expect([400, 413, 415], a.label).toContain(a.status);
      else expect(a, a.label).toMatchObject({ status: 200, json: { successful: [], fatal: [], failed: [{ id: null }, { id: null }] } });
    }

    const sent: string[] = [];
    for (const r of await Promise.all(good)) {
      expect(r.status).toBe(200);
      if (Array.isArray(r.json.successful)) {
        expect(r.json.failed.map((e: { id: string }) => e.id.split('-')[1])).toEqual(['deep', 'sur']);
        sent.push(...r.json.successful.map((e: { id: string }) => e.id));
      } else sent.push(r.json.sms_id);
    }
    const rows = await gw.gateway.ledger.db.selectFrom('messages').select(['activity_key', 'state']).execute();
    expect(rows).toHaveLength(sent.length);
    expect(rows.every((r) => r.state === 'submitted' && /^(ordinary|mixed-good)-\d+$/.test(r.activity_key))).toBe(true);
  }, 60_000);
});
