/**
 * sms.concurrent_batches against the real server: batches over the bound wait their turn unread and are still all
 * answered, every message stored and sent once (src/sms/batch-admission.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, type TestGateway } from './helpers/gateway.js';
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
});
