/**
 * A fresh ledger database per test gateway: a SQLite file in the test's temp dir, or, when TEST_DATABASE_URL
 * points at a PostgreSQL server, a new database created for the test and dropped afterwards (so test files
 * running in parallel never see each other's rows).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

async function admin<T>(baseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function createTestDatabase(dir: string): Promise<TestDatabase> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return { url: `sqlite:${join(dir, 'ledger.db')}`, drop: async () => {} };
  const name = `gw_test_${randomBytes(6).toString('hex')}`;
  await admin(base, (c) => c.query(`create database ${name}`));
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(base, (c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}
