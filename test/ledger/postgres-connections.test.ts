/**
 * PostgreSQL dropping the gateway's idle pooled connections (a server restart, a failover, an administrator):
 * the gateway must neither crash on the connection error nor fail the next request. And what every connection of the
 * ledger's pool is set to, and how it sends its statements.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { named } from '../../src/ledger/engine/statement-names.js';
import { claimDueEvents } from '../../src/ledger/events.js';
import type { Database } from '../../src/ledger/schema.js';
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

  const preparedOn = async (db: Kysely<Database>) =>
    (
      await sql<{ statement: string }>`select statement from pg_prepared_statements where statement not like ${'%pg_prepared_statements%'}`.execute(db)
    ).rows.map((r) => r.statement);

  it('send the statements marked named under a name, parsed once per connection; none when turned off', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postgres-named-'));
    const url = postgresDatabaseUrl(dir);
    const claim = (ledger: Ledger, round: number) => claimDueEvents(ledger.db, ledger.flags, 10, Date.now(), 60_000, `round-${round}`);
    try {
      const withNames = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
      const without = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1, prepared_statements: false });
      try {
        await migrateToLatest(withNames.db);
        for (let i = 0; i < 3; i++) expect(await claim(withNames, i)).toEqual([]);
        for (let i = 0; i < 3; i++) expect(await claim(without, i)).toEqual([]);
        const prepared = await preparedOn(withNames.db);
        // The claim, and the decision of the round that claimed nothing; the unmarked statements are not named.
        expect(prepared.filter((s) => s.startsWith('/* named */') && s.includes('with heads as materialized'))).toHaveLength(1);
        expect(prepared.filter((s) => s.startsWith('/* named */') && s.includes('update crm_events set head'))).toHaveLength(1);
        expect(prepared.filter((s) => !s.startsWith('/* named */'))).toEqual([]);
        expect(await preparedOn(without.db)).toEqual([]);
      } finally {
        await withNames.close();
        await without.close();
      }
    } finally {
      await dropPostgresDatabase(dir);
    }
  });

  it('send every statement unnamed, and say so once, after the server lost one a connection prepared (a pooler in transaction mode)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postgres-named-'));
    const url = postgresDatabaseUrl(dir);
    const warnings: unknown[] = [];
    const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 }, { logger: { warn: (...args: unknown[]) => warnings.push(args) } });
    const claim = (round: number) => claimDueEvents(ledger.db, ledger.flags, 10, Date.now(), 60_000, `round-${round}`);
    try {
      await migrateToLatest(ledger.db);
      for (let i = 0; i < 3; i++) expect(await claim(i)).toEqual([]);
      // What a pooler does when it runs the next statement on another server connection: pg still takes the name for
      // prepared on this one, the server does not know it.
      await sql`deallocate all`.execute(ledger.db);
      await expect(claim(3)).rejects.toMatchObject({ code: '26000' });
      for (let i = 4; i < 7; i++) expect(await claim(i)).toEqual([]);
      expect(await preparedOn(ledger.db)).toEqual([]);
      expect(warnings).toHaveLength(1);
    } finally {
      await ledger.close();
      await dropPostgresDatabase(dir);
    }
  });

  it('keep serving named statements that list their columns, and the others, when their table gains a column (a newer version’s migration)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postgres-named-'));
    const url = postgresDatabaseUrl(dir);
    const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
    const other = new pg.Client({ connectionString: url });
    try {
      await other.connect();
      await other.query('create table widened (id int primary key, label text)');
      await other.query("insert into widened values (1, 'one')");
      const all = () => sql<{ id: number }>`select * from widened where id = ${1}`.execute(ledger.db);
      const some = () => named(sql<{ label: string }>`select label from widened where id = ${1}`).execute(ledger.db);
      // Past the fifth run, where PostgreSQL may settle on a generic plan.
      for (let i = 0; i < 7; i++) {
        expect((await all()).rows).toHaveLength(1);
        expect((await some()).rows[0]!.label).toBe('one');
      }
      await other.query('alter table widened add column added text');
      expect((await all()).rows[0]).toEqual({ id: 1, label: 'one', added: null });
      expect((await some()).rows[0]!.label).toBe('one');
      expect((await preparedOn(ledger.db)).some((s) => s.includes('select label from widened'))).toBe(true);
    } finally {
      await other.end();
      await ledger.close();
      await dropPostgresDatabase(dir);
    }
  });

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
