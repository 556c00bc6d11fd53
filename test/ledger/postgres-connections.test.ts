/**
 * PostgreSQL dropping the gateway's idle pooled connections (a server restart, a failover, an administrator):
 * the gateway must neither crash on the connection error nor fail the next request. And what every connection of the
 * ledger's pool is set to.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openLedger } from '../../src/ledger/engine/db.js';
import { dropPostgresDatabase, postgresDatabaseUrl } from '../helpers/database.js';
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

describe('the ledger’s PostgreSQL connections', () => {
  const jitOf = async (url: string) => {
    const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
    try {
      return (await sql<{ jit: string }>`show jit`.execute(ledger.db)).rows[0]!.jit;
    } finally {
      await ledger.close();
    }
  };

  it('plan without JIT, unless the URL’s own options turn it on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postgres-jit-'));
    const url = postgresDatabaseUrl(dir);
    try {
      expect(await jitOf(url)).toBe('off');
      expect(await jitOf(`${url}?options=${encodeURIComponent('-c jit=on')}`)).toBe('on');
    } finally {
      await dropPostgresDatabase(dir);
    }
  });
});
