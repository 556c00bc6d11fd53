/** /healthz says the process answers; /readyz says the ledger answers too. Neither needs credentials. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

describe('health endpoints', () => {
  it.each([
    ['/healthz', { status: 'ok' }],
    ['/readyz', { status: 'ready' }],
  ])('%s answers 200 without an API key', async (path, body) => {
    const res = await fetch(gw.url + path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await res.json()).toEqual(body);
  });

  it('/readyz answers 503 {error} once the ledger is gone, while /healthz still answers 200', async () => {
    const broken = await startTestGateway();
    try {
      await broken.gateway.ledger.close();
      const ready = await broken.get('/readyz');
      expect(ready.status).toBe(503);
      // It names the dependency, never the driver's error text (paths, hosts, users).
      expect(ready.json).toEqual({ error: 'database: not answering (the gateway log has the cause)' });
      expect((await broken.get('/healthz')).status).toBe(200);
    } finally {
      await broken.close();
    }
  });

  it('a send while the ledger is gone answers 503, never a 4xx, so the CRM retries', async () => {
    const broken = await startTestGateway();
    try {
      await broken.gateway.ledger.close();
      const single = await broken.post('/channels/sms/single', smsMessage('no-ledger'));
      expect(single.status).toBe(503);
      expect(single.json).toEqual({ error: expect.stringMatching(/ledger unavailable/) });
      const batch = await broken.post('/channels/sms/batch', [smsMessage('no-ledger-batch')]);
      expect(batch.status).toBe(200);
      expect(batch.json).toEqual({ successful: [], failed: [], fatal: [{ id: 'no-ledger-batch', error: expect.stringMatching(/ledger unavailable/) }] });
    } finally {
      await broken.close();
    }
  });
});
