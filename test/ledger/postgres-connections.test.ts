/**
 * PostgreSQL dropping the gateway's idle pooled connections (a server restart, a failover, an administrator):
 * the gateway must neither crash on the connection error nor fail the next request.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

describe.runIf(Boolean(process.env.TEST_DATABASE_URL))('when PostgreSQL terminates idle connections', () => {
  it('keeps serving: the pool drops them and reconnects', async () => {
    gw = await startTestGateway();
    expect((await gw.post('/channels/sms/single', smsMessage('before-terminate'))).status).toBe(200);
    const admin = new pg.Client({ connectionString: gw.config.database.url });
    await admin.connect();
    try {
      const terminated = await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      expect(terminated.rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    // Let the terminated connections report their error to the pool (an unhandled one would fail this run).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await gw.post('/channels/sms/single', smsMessage('after-terminate'))).status).toBe(200);
  });
});
