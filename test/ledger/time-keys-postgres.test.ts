/**
 * PostgreSQL and the indexes led by the day (migration 2026-11-29-70-time-keys, docs/ledger.md): a day newer than the
 * table's last ANALYZE was taken for an empty one, and a receipt's lookup of today and yesterday then read both days
 * through messages_recipient_time. With no statistics on the day, the lookup keeps to its index (messages_provider_id_only) with
 * all three keys, and the search by number reads messages through messages_recipient_time (src/ledger/number-messages.ts),
 * whether the planner has seen the days or not. Runs on PostgreSQL in every run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import { findReceiptTargetsByProviderId } from '../../src/ledger/receipt-targets.js';
import { searchMessages } from '../../src/ledger/message-search.js';
import type { Database } from '../../src/ledger/schema.js';
import { dropPostgresDatabase, postgresDatabaseUrl } from '../helpers/database.js';

const DAY = 86_400_000;
const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-time-keys-'));

afterAll(async () => {
  await dropPostgresDatabase(dir);
  rmSync(dir, { recursive: true, force: true });
});

/** 20,000 messages over the `days` days that end `endDaysAgo` days before now (three providers, 10,000 numbers). */
const fill = (prefix: string, endDaysAgo: number, days: number) => sql`insert into messages (sms_id, activity_key, activity_json, provider,
    provider_message_id, recipient, encoding, segments, state, created_at, updated_at, dispatched_at, user_id)
  select ${prefix} || g, ${prefix} || g, '{}', (array['sandbox', 'twilio', 'smpp'])[1 + g % 3], ${prefix} || md5(g::text),
    '+4477' || lpad(((g * 7919) % 10000)::text, 8, '0'), 'gsm7', 1, 'submitted', t, t, t, 'player-' || (g % 5000)
  from generate_series(1, 20000) g, lateral (select ${Date.now() - endDaysAgo * DAY}::bigint - (g::bigint * ${days * DAY} / 20000) as t) at`;

describe('PostgreSQL: the day has no statistics', () => {
  it("reads a receipt's days and a number's days through their own index, days the last ANALYZE never saw included", async () => {
    const url = postgresDatabaseUrl(dir);
    const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 2 });
    // The flat tables' indexes (the layout by day's day tables are given the same: day-partitions.test.ts).
    await migrateToLatest(ledger.db, { layout: 'flat' });
    const targets = await sql<{ idx: string; target: number }>`select c.relname as idx, a.attstattarget as target from pg_attribute a
      join pg_class c on c.oid = a.attrelid where c.relname in ('messages_recipient_time', 'messages_provider_id_only') and a.attnum = 1
      order by 1`.execute(ledger.db);
    expect(targets.rows).toEqual([
      { idx: 'messages_provider_id_only', target: 0 },
      { idx: 'messages_recipient_time', target: 0 },
    ]);
    // Thirty days the statistics know, then today and yesterday that they do not.
    await fill('old-', 2, 30).execute(ledger.db);
    await sql`analyze messages`.execute(ledger.db);
    await fill('new-', 0, 2).execute(ledger.db);
    await ledger.close();

    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const captured: CompiledQuery[] = [];
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (event) => void captured.push(event.query) });
    const planOf = async (query: CompiledQuery) =>
      (
        await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(query.sql.replace(/\$(\d+)/g, (_, n) => literal(query.parameters[Number(n) - 1])))}`.execute(db)
      ).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    try {
      const found = await findReceiptTargetsByProviderId(db, 'twilio', ['not-stored-1', 'not-stored-2'], Date.now());
      const receipt = captured.find((q) => /provider_message_id" in/.test(q.sql) && !/message_parts/.test(q.sql))!;
      const receiptPlan = await planOf(receipt);
      expect(receiptPlan).toMatch(/Index Scan using messages_provider_id_only/);
      expect(receiptPlan).toMatch(/Index Cond: .*provider_message_id/);
      expect(found).toEqual([]);

      captured.length = 0;
      await searchMessages(db, { recipient: '+447700000001', limit: 50 });
      const searchPlan = await planOf(captured.at(-1)!);
      expect(searchPlan).toMatch(/Index Scan Backward using messages_recipient_time/);
      expect(searchPlan).toMatch(/Index Cond: .*recipient = /);
      // Each message read once, by that index (src/ledger/number-messages.ts); nothing read whole.
      expect(searchPlan).not.toMatch(/messages_pkey/);
      expect(searchPlan).not.toMatch(/Seq Scan/);
    } finally {
      await db.destroy();
    }
  });
});

/** A parameter written into the statement for EXPLAIN (numbers and strings only). */
function literal(value: unknown): string {
  return typeof value === 'number' ? String(value) : `'${String(value).replaceAll("'", "''")}'`;
}
