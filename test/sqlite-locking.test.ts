/**
 * Another process holding SQLite's write lock (a cron flush, a second instance) must not stop this one: the
 * gateway waits for the lock off the event loop, keeps answering, and sends once the lock is free.
 */
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, type TestGateway } from './helpers/gateway.js';

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('while another process holds the SQLite write lock', () => {
  it('keeps answering other requests, then commits and sends once the lock is released', async () => {
    gw = await startTestGateway();
    const other = new BetterSqlite3(gw.config.database.url.slice('sqlite:'.length));
    other.exec('begin immediate');
    const lockedAt = Date.now();
    try {
      const send = gw.post('/channels/sms/single', smsMessage('locked-out-1'));
      // The send is waiting for the lock; liveness answers meanwhile (a blocked event loop would hold it too).
      await new Promise((resolve) => setTimeout(resolve, 50));
      const healthStarted = Date.now();
      const health = await gw.get('/healthz');
      expect(health.status).toBe(200);
      expect(Date.now() - healthStarted).toBeLessThan(150);
      await new Promise((resolve) => setTimeout(resolve, 300 - (Date.now() - lockedAt)));
      other.exec('commit');
      const sent = await send;
      expect(sent.status).toBe(200);
      expect(sent.json).toEqual({ sms_id: expect.any(String) });
    } finally {
      if (other.inTransaction) other.exec('rollback');
      other.close();
    }
  });
});
