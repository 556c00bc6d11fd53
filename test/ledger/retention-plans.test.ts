/**
 * Retention's choice of final messages finds each message's conversions and held sends by its sms_id (src/ledger/retention.ts,
 * isFinalMessage): on SQLite not through the outboxes' partial indexes of owed rows, which would scan every owed
 * conversion for each message looked at (EXPLAIN QUERY PLAN); on PostgreSQL as a lookup for each message, never a
 * join, which it may plan as a scan of every conversion for each chunk (EXPLAIN). And on PostgreSQL, forgetting a deleted
 * message's (player, number) pair reads each remaining message once, by its number's entry.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { blankFinalMessages, deleteFinalMessages, SCAN_START } from '../../src/ledger/retention.js';
import { submittedMessageRow } from '../helpers/ledger.js';
import { postgresPlanOf, sqlitePlanOf } from '../helpers/query-plans.js';

/** What `ANALYZE` wrote on a prefilled ledger of 30 million messages whose conversions were all posted. */
const ANALYSED = [
  ['conversions', 'conversions_sms_id', '30000000 1'],
  ['conversions', 'conversions_unposted', '0 0 0 0'],
  ['conversions', 'conversions_due', '0 0'],
  ['messages', 'messages_created_sms_id', '30000000 2 1'],
];

function withStatistics(statistics: string[][]) {
  return (sqlite: BetterSqlite3.Database) => {
    sqlite.exec('analyze');
    sqlite.exec(`delete from sqlite_stat1 where tbl in ('conversions', 'messages')`);
    const insert = sqlite.prepare('insert into sqlite_stat1 (tbl, idx, stat) values (?, ?, ?)');
    for (const row of statistics) insert.run(...row);
    sqlite.exec('analyze sqlite_schema');
  };
}

describe('retention query plans on SQLite', () => {
  it.each([
    ['deleting, on a ledger grown by sends (no statistics)', undefined, 'delete'],
    ['deleting, on an analysed ledger', ANALYSED, 'delete'],
    ['blanking, on a ledger grown by sends (no statistics)', undefined, 'blank'],
    ['blanking, on an analysed ledger', ANALYSED, 'blank'],
  ] as const)('%s: conversions and held sends by sms_id', async (_name, statistics, pass) => {
    const plan = await sqlitePlanOf(
      (db) =>
        db
          .transaction()
          .execute((trx) =>
            pass === 'delete' ? deleteFinalMessages(trx, Date.now()) : blankFinalMessages(trx, Date.now(), SCAN_START).then((chunk) => chunk.blanked),
          ),
      { prepare: statistics ? withStatistics(statistics as unknown as string[][]) : undefined, which: (q) => q.sql.startsWith('select') },
    );
    expect(plan).toContain('SEARCH c USING INDEX conversions_sms_id (sms_id=?)');
    expect(plan).toContain('SEARCH h USING INDEX sqlite_autoindex_held_sends_1 (sms_id=?)');
    expect(plan).not.toMatch(/conversions_unposted|conversions_due|held_sends_due|held_sends_owed/);
  });
});

describe('retention query plans on PostgreSQL', () => {
  it.each(['delete', 'blank'] as const)('%s: conversions and held sends looked up for each message, never joined', async (pass) => {
    const plan = await postgresPlanOf(
      (db) =>
        db
          .transaction()
          .execute((trx) =>
            pass === 'delete' ? deleteFinalMessages(trx, Date.now()) : blankFinalMessages(trx, Date.now(), SCAN_START).then((chunk) => chunk.blanked),
          ),
      { which: (q) => q.sql.startsWith('select') },
    );
    expect(plan).toMatch(/SubPlan[^]*SubPlan/);
    expect(plan).not.toMatch(/Join/);
  });

  it("a deleted message's (player, number) pair: a remaining message is found by its number's entry and read once", async () => {
    const day = 86_400_000;
    const plan = await postgresPlanOf(
      async (db) => {
        const old = submittedMessageRow('old', 'sandbox', Date.now() - 40 * day, { user_id: 'p1', delivery_status: 'delivered' });
        await db
          .insertInto('messages')
          .values([old, { ...old, sms_id: 'young', activity_key: 'act-young', created_at: Date.now() - day }])
          .execute();
        await db.insertInto('message_user_recipients').values({ user_id: 'p1', recipient: old.recipient }).execute();
        await db.transaction().execute((trx) => deleteFinalMessages(trx, Date.now() - 30 * day));
      },
      { which: (q) => q.sql.startsWith('delete from message_user_recipients') },
    );
    expect(plan).toContain('messages_recipient_time');
    // Through the view recipient_messages, each message found was joined to itself by sms_id and read a second time.
    // (messages is partitioned by day: the rows here are in its default partition, messages_legacy.)
    expect(plan.match(/ on messages\w*/g)).toHaveLength(1);
  });
});
