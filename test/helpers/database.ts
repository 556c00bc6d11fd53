/**
 * The ledger database of a test gateway, chosen by its temp dir: a SQLite file in the dir, or, when
 * TEST_DATABASE_URL points at a PostgreSQL server, a database of its own created for that dir (so test files
 * running in parallel never see each other's rows, and gateways given the same dir share one database, as
 * instances sharing a ledger do). Databases are created synchronously with psql so that config documents can
 * be built synchronously; the run's global teardown drops whatever a test left behind.
 *
 * A new PostgreSQL ledger is laid out by day, as the gateway makes one (database.layout). TEST_PG_LAYOUT=flat makes the
 * test ledgers flat instead (testLayout: the gateways' config and openTestLedger), and TEST_PG_LAYOUT=converted migrates
 * each database flat and converts it as `crm-sms-gateway partition` does (src/ledger/engine/partitions.ts), so that the
 * default partition holds the days around today, as it does on an operator's converted ledger (.ci/run).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import { migrations } from '../../src/ledger/engine/migrations.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';

const created = new Set<string>();

/**
 * `flat`: the database as created, whatever TEST_PG_LAYOUT says, and migrated flat by openTestLedger: for a test of the
 * conversion itself, or of a schema before its migrations.
 */
export type TestLayout = 'as-configured' | 'flat';

/** The layout a test's new PostgreSQL ledger is made with (database.layout), by TEST_PG_LAYOUT. */
export function testLayout(): 'by_day' | 'flat' {
  return process.env.TEST_PG_LAYOUT === 'flat' || process.env.TEST_PG_LAYOUT === 'converted' ? 'flat' : 'by_day';
}

function databaseName(dir: string): string {
  const run = process.env.GW_TEST_RUN ?? 'adhoc';
  return `gw_test_${run}_${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`;
}

export function testDatabaseUrl(dir: string, layout: TestLayout = 'as-configured'): string {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return `sqlite:${join(dir, 'ledger.db')}`;
  const fresh = !created.has(databaseName(dir));
  const url = createdDatabaseUrl(base, dir);
  if (fresh && layout === 'as-configured' && process.env.TEST_PG_LAYOUT === 'converted') partitionSync(url);
  return url;
}

/** Migrates the database at `url` flat and converts it by day, in a process of its own: config documents are built synchronously. */
function partitionSync(url: string): void {
  const dist = (path: string) => new URL(`../../dist/src/ledger/${path}`, import.meta.url).href;
  const script = `
    const { openLedger, migrateToLatest } = await import(${JSON.stringify(dist('engine/db.js'))});
    const { partitionByDay, ensureDayPartitions } = await import(${JSON.stringify(dist('engine/partitions.js'))});
    const ledger = openLedger({ url: process.argv[1], pool_size: 1 });
    await migrateToLatest(ledger.db, { layout: 'flat' });
    await partitionByDay(ledger.db, Date.now());
    const made = await ensureDayPartitions(ledger.db, Date.now());
    await ledger.close();
    if (made.gaveUp) throw new Error(made.gaveUp);`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script, url], { stdio: 'pipe' });
}

/** The PostgreSQL server of the runs with no TEST_DATABASE_URL (.ci/run starts it before either run). */
const MACHINE_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A PostgreSQL database of its own for `dir` even on the SQLite run, for what must be checked on PostgreSQL whatever
 * the run (a documented production configuration naming postgres://). Drop it with dropPostgresDatabase.
 */
export function postgresDatabaseUrl(dir: string): string {
  return createdDatabaseUrl(process.env.TEST_DATABASE_URL ?? MACHINE_POSTGRES, dir);
}

export async function dropPostgresDatabase(dir: string): Promise<void> {
  created.delete(databaseName(dir));
  await dropDatabases(databaseName(dir), process.env.TEST_DATABASE_URL ?? MACHINE_POSTGRES);
}

function createdDatabaseUrl(base: string, dir: string): string {
  const name = databaseName(dir);
  if (!created.has(name)) {
    try {
      execFileSync('psql', [base, '-qc', `create database ${name}`], { stdio: 'pipe' });
    } catch (error) {
      if (!String((error as { stderr?: Buffer }).stderr).includes('already exists')) throw error;
    }
    created.add(name);
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabases(pattern: string, base = process.env.TEST_DATABASE_URL): Promise<void> {
  if (!base) return;
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [pattern]);
    for (const { datname } of rows) {
      // A pool's end() resolves before its connections' sessions have ended on the server; one still ending when
      // the forced drop terminates it reports the termination as an error no test listens for. Wait for them first
      // (a second at most), then force out whatever a test left open.
      for (let waited = 0; waited < 1_000; waited += 20) {
        const open = await client.query<{ n: string }>('select count(*) as n from pg_stat_activity where datname = $1', [datname]);
        if (Number(open.rows[0]!.n) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await client.query(`drop database if exists ${datname} with (force)`);
    }
  } finally {
    await client.end();
  }
}

export async function dropTestDatabase(dir: string): Promise<void> {
  created.delete(databaseName(dir));
  await dropDatabases(databaseName(dir));
}

/** For vitest's global teardown: every database this run created. */
export const dropRunDatabases = (run: string) => dropDatabases(`gw_test_${run}_%`);

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(dir: string, layout: TestLayout = 'as-configured'): Promise<TestDatabase> {
  return { url: testDatabaseUrl(dir, layout), drop: () => dropTestDatabase(dir) };
}

/** A migrated ledger of a test file's own, opened as a process opens it; `close` closes it and drops its database. */
export interface TestLedger {
  ledger: Ledger;
  url: string;
  close(): Promise<void>;
}

/** `name` begins the temp dir's name (the PostgreSQL database is named after that dir): one per test file. */
export async function openTestLedger(name: string, poolSize = 2, layout: TestLayout = 'as-configured'): Promise<TestLedger> {
  return openLedgerUpTo(name, poolSize, (db) => migrateToLatest(db, { layout: layout === 'flat' ? 'flat' : testLayout() }), layout);
}

/**
 * The same, migrated only up to the migration before `migration`: a test of that migration fills it with rows as
 * the version before wrote them, then runs migrateToLatest.
 */
export async function openTestLedgerBefore(migration: string, name: string): Promise<TestLedger> {
  const names = Object.keys(migrations);
  return openLedgerUpTo(
    name,
    1,
    async (db) => {
      const { error } = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateTo(names[names.indexOf(migration) - 1]!);
      if (error) throw error;
    },
    'flat',
  );
}

async function openLedgerUpTo(name: string, poolSize: number, migrate: (db: Ledger['db']) => Promise<unknown>, layout: TestLayout): Promise<TestLedger> {
  const database = await createTestDatabase(mkdtempSync(join(tmpdir(), `${name}-`)), layout);
  const ledger = openLedger({ url: database.url, sqlite_synchronous: 'normal', pool_size: poolSize });
  await migrate(ledger.db);
  return {
    ledger,
    url: database.url,
    async close() {
      await ledger.close();
      await database.drop();
    },
  };
}
