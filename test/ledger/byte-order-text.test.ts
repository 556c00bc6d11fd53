/**
 * Migration 2026-11-30-30-byte-order-text on PostgreSQL, in every run: every text column of the ledger compares byte
 * by byte (collation "C"), on the flat tables and on the tables partitioned by day after it, so that a later
 * migration's text column without `collate "C"` fails here. On a ledger partitioned by day before it, the sms_id
 * columns keep their collation (the partition key's cannot change), every other text column takes "C", and a
 * table's sms_id still finds its messages by their primary key. The rows, the numbers' view, the day's statistics
 * target of the indexes led by it (each day's table's included) and the columns' statistics are kept.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { migrations } from '../../src/ledger/engine/migrations.js';
import { ensureDayPartitions, partitionByDay } from '../../src/ledger/engine/partitions.js';
import { dropPostgresDatabase, postgresDatabaseUrl } from '../helpers/database.js';
import { submittedMessageRow } from '../helpers/ledger.js';

const MIGRATION = '2026-11-30-30-byte-order-text';
const dirs: string[] = [];
const ledgers: Ledger[] = [];

afterAll(async () => {
  for (const ledger of ledgers) await ledger.close();
  for (const dir of dirs) {
    await dropPostgresDatabase(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A PostgreSQL ledger of its own, migrated up to the migration before this one. */
async function ledgerBefore(name: string): Promise<Ledger> {
  const dir = mkdtempSync(join(tmpdir(), `crm-sms-gw-${name}-`));
  dirs.push(dir);
  const ledger = openLedger({ url: postgresDatabaseUrl(dir), sqlite_synchronous: 'normal', pool_size: 1 });
  ledgers.push(ledger);
  const names = Object.keys(migrations);
  const { error } = await new Migrator({ db: ledger.db, provider: { getMigrations: async () => migrations } }).migrateTo(names[names.indexOf(MIGRATION) - 1]!);
  if (error) throw error;
  return ledger;
}

/** `table.column` of every text column (views' too) whose collation is not "C". */
async function notByteOrder(ledger: Ledger): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname || '.' || a.attname as name from pg_attribute a join pg_class c on c.oid = a.attrelid
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p', 'v') and c.relname not like 'kysely_migration%'
      and a.attnum > 0 and not a.attisdropped and a.atttypid = 'text'::regtype and a.attcollation <> 'pg_catalog."C"'::regcollation
    order by 1`.execute(ledger.db);
  return rows.map((r) => r.name);
}

/** The plan of `query` with sequential scans priced out: a scan still planned is one no index could replace. */
async function planOf(ledger: Ledger, query: string): Promise<string> {
  return ledger.db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    const { rows } = await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(query)}`.execute(trx);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

/** The statistics target of the day, the first column of the indexes led by it, in each table's index (time keys). */
async function dayKeyTargets(ledger: Ledger): Promise<Array<{ index: string; target: number }>> {
  const { rows } = await sql<{ index: string; target: number }>`
    select c.relname as index, a.attstattarget as target from pg_attribute a join pg_class c on c.oid = a.attrelid
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('i', 'I') and a.attnum = 1
      and exists (select 1 from pg_index x join pg_class t on t.oid = x.indrelid where x.indexrelid = c.oid and t.relname like 'messages%')
      and (pg_get_indexdef(c.oid) like '%(created_at / 86400000)), recipient,%'
        or pg_get_indexdef(c.oid) like '%(created_at / 86400000)), provider, provider_message_id)%')
    order by 1`.execute(ledger.db);
  return rows;
}

// A conversion's claim reads its message's activity by sms_id (src/ledger/conversions.ts, the flat layout's statement).
const CLAIM_READ = 'select (select activity_key from messages where messages.sms_id = conversions.sms_id) as activity_key from conversions';
/** A message read by an index whose key holds sms_id: one of another collation than the comparison's cannot be. */
const FOUND_BY_KEY = /Index (Only )?Scan using \S+ on messages\S*( messages)? .*\n\s+Index Cond: \(sms_id = conversions\.sms_id\)/;

async function storeMessageWithConversion(ledger: Ledger, smsId: string, at: number): Promise<void> {
  await ledger.db
    .insertInto('messages')
    .values(submittedMessageRow(smsId, 'sandbox', at, { recipient: '+447700900123' }))
    .execute();
  await ledger.db
    .insertInto('conversions')
    .values({ sms_id: smsId, delivery_status: 'delivered', attempts: 0, next_attempt_at: at, claimed_until: 0, dead: 0, created_at: at } as never)
    .execute();
}

describe(`migration ${MIGRATION} (PostgreSQL)`, () => {
  it('leaves no text column comparing by the database’s locale, flat and partitioned by day after it', async () => {
    const ledger = await ledgerBefore('byte-order-flat');
    const smsId = uuidv7();
    await storeMessageWithConversion(ledger, smsId, Date.now());
    expect((await notByteOrder(ledger)).length).toBeGreaterThan(100);
    await sql`analyze messages`.execute(ledger.db);
    const analysed = sql<{ n: number }>`select count(*)::int as n from pg_stats
      where schemaname = current_schema() and tablename = 'messages' and attname in ('recipient', 'provider', 'state')`;
    expect((await analysed.execute(ledger.db)).rows).toEqual([{ n: 3 }]);
    await migrateToLatest(ledger.db);
    expect(await notByteOrder(ledger)).toEqual([]);
    // The columns' statistics, which their new type took with it, sampled again.
    expect((await analysed.execute(ledger.db)).rows).toEqual([{ n: 3 }]);
    // The rows, and the numbers' view made again over messages.
    const entry = await ledger.db.selectFrom('recipient_messages').select(['recipient', 'sms_id']).executeTakeFirstOrThrow();
    expect(entry).toEqual({ recipient: '+447700900123', sms_id: smsId });
    expect(await planOf(ledger, CLAIM_READ)).toMatch(FOUND_BY_KEY);
    await partitionByDay(ledger.db, Date.now());
    expect(await notByteOrder(ledger)).toEqual([]);
  });

  it('on a ledger partitioned by day before it, keeps every sms_id’s collation and changes the rest', async () => {
    const ledger = await ledgerBefore('byte-order-by-day');
    const at = Date.now();
    const smsId = uuidv7();
    await storeMessageWithConversion(ledger, smsId, at);
    await partitionByDay(ledger.db, at);
    expect((await ensureDayPartitions(ledger.db, at)).created.length).toBeGreaterThan(0);
    const dayKeys = await dayKeyTargets(ledger);
    expect(dayKeys.length).toBeGreaterThan(2);
    expect(new Set(dayKeys.map((k) => k.target))).toEqual(new Set([0]));
    await migrateToLatest(ledger.db);
    // Built again for the numbers' and providers' ids of the new collation (the default partition's renamed by
    // PostgreSQL), each index keeps the day without statistics.
    const rebuilt = await dayKeyTargets(ledger);
    expect(rebuilt.length).toBe(dayKeys.length);
    expect(new Set(rebuilt.map((k) => k.target))).toEqual(new Set([0]));
    const left = await notByteOrder(ledger);
    expect(left.length).toBeGreaterThan(0);
    expect(left.filter((name) => !name.endsWith('.sms_id'))).toEqual([]);
    expect(left).toEqual(expect.arrayContaining(['messages.sms_id', 'receipts.sms_id', 'conversions.sms_id', 'crm_events.sms_id']));
    // Compared as messages.sms_id is, a conversion's sms_id finds its message by the key (in the default partition here).
    expect(await planOf(ledger, CLAIM_READ)).toMatch(FOUND_BY_KEY);
    const { rows } = await sql<{ activity_key: string }>`${sql.raw(CLAIM_READ)}`.execute(ledger.db);
    expect(rows).toEqual([{ activity_key: `act-${smsId}` }]);
  });
});
