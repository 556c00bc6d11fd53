/**
 * sms.concurrent_batches against the real server: batches over the bound wait their turn and are still all
 * answered, every message stored and sent once; a client that uploads its batch slowly holds no slot
 * (src/sms/batch-admission.ts).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, TEST_API_KEY, type TestGateway } from './helpers/gateway.js';
import { readMessages } from './helpers/ledger.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ sms: { concurrent_batches: 1 } });
});
afterAll(async () => gw.close());

describe('batches over sms.concurrent_batches', () => {
  it('are answered in full once earlier batches are done', async () => {
    const batches = Array.from({ length: 6 }, (_, b) => Array.from({ length: 20 }, (_, i) => smsMessage(`adm-${b}-${i}`)));
    const answers = await Promise.all(batches.map((batch) => gw.post('/channels/sms/batch', batch)));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ failed: [], fatal: [] });
      expect((res.json as { successful: unknown[] }).successful).toHaveLength(20);
    }
    const keys = batches.flat().map((m) => (m as { activity: { id: string } }).activity.id);
    const rows = await readMessages(gw, keys);
    expect(rows).toHaveLength(120);
    expect(new Set(rows.map((r) => r.sms_id)).size).toBe(120);
    expect(rows.every((r) => r.state === 'submitted' && r.attempts === 1)).toBe(true);
  });

  it('do not wait for a batch whose body is still being uploaded', async () => {
    const { hostname, port } = new URL(gw.url);
    const trickle = connect(Number(port), hostname);
    await new Promise((resolve) => trickle.once('connect', resolve));
    const body = JSON.stringify([smsMessage('adm-trickle')]);
    trickle.write(`POST /channels/sms/batch HTTP/1.1\r\nHost: ${hostname}\r\nx-api-key: ${TEST_API_KEY}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
    // The server has its headers (and would have given it a slot) well before the next batch arrives.
    await new Promise((resolve) => setTimeout(resolve, 200));
    try {
      // With the slot taken before the body is read, this batch would wait half of sms.batch_deadline (10 s).
      const started = Date.now();
      const res = await gw.post('/channels/sms/batch', [smsMessage('adm-after-trickle')]);
      expect(res.status).toBe(200);
      expect((res.json as { successful: unknown[] }).successful).toHaveLength(1);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      trickle.destroy();
    }
  });
});
