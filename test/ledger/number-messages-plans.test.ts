/**
 * The messages that still have a number (src/ledger/number-messages.ts), as the search by number and by player and a
 * lookup's other sends read them: on SQLite the number's entries, each joined to its message by sms_id (EXPLAIN QUERY
 * PLAN); on PostgreSQL messages read once, through its own index messages_recipient_time, where the view
 * recipient_messages joined back to messages read each message a second time through the primary key (EXPLAIN).
 */
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { searchMessages } from '../../src/ledger/message-search.js';
import type { Database } from '../../src/ledger/schema.js';
import { findOtherProviderIds } from '../../src/ledger/send-lookups.js';
import { submittedMessageRow } from '../helpers/ledger.js';
import { postgresPlanOf, sqlitePlanOf } from '../helpers/query-plans.js';

const DAY = 86_400_000;
const NUMBER = '+447700900123';

/** Two messages to the number a few days apart (so there are days to name), and player-1's pair with it. */
async function fill(db: Kysely<Database>): Promise<void> {
  const old = submittedMessageRow('old', 'sandbox', Date.now() - 3 * DAY, { user_id: 'player-1' });
  await db
    .insertInto('messages')
    .values([old, { ...old, sms_id: 'young', activity_key: 'act-young', created_at: Date.now() }])
    .execute();
  await db.insertInto('message_user_recipients').values({ user_id: 'player-1', recipient: NUMBER }).execute();
}

const cases: Array<[string, (db: Kysely<Database>) => Promise<unknown>]> = [
  ['the search by number', (db) => searchMessages(db, { recipient: NUMBER, limit: 50 })],
  [
    'the search by number, a later page in a range',
    (db) => searchMessages(db, { recipient: NUMBER, from: 1, after: { createdAt: Date.now(), smsId: 'x' }, limit: 50 }),
  ],
  ['the search by number and status', (db) => searchMessages(db, { recipient: NUMBER, status: 'delivered', limit: 50 })],
  ['the search by player', (db) => searchMessages(db, { userId: 'player-1', limit: 50 })],
  ["a lookup's other sends to the number", (db) => findOtherProviderIds(db, NUMBER, 'young', 0, Date.now())],
];

/** The statement that reads the messages (not the span's, nor the player's numbers). */
const reading = (q: { sql: string }) => /^select [^]* from "(recipient_)?messages(_recent)?"/.test(q.sql);

/** 20,000 more messages to 10,000 other numbers over the same days, analysed: on a table of two rows PostgreSQL reads the table whole. */
const crowd = sql`insert into messages (sms_id, activity_key, activity_json, provider, provider_message_id, recipient, encoding,
    segments, state, created_at, updated_at, dispatched_at, user_id)
  select 'c' || g, 'c' || g, '{}', 'sandbox', 'pm-c' || g, '+4477' || lpad((g % 10000)::text, 8, '0'), 'gsm7', 1, 'submitted', t, t, t,
    'player-c' || (g % 5000)
  from generate_series(1, 20000) g, lateral (select ${Date.now()}::bigint - (g::bigint * ${3 * DAY} / 20000) as t) at`;

describe('the messages of a number on PostgreSQL', () => {
  it.each(cases)('%s reads messages once, through messages_recipient_time', async (_name, run) => {
    const plan = await postgresPlanOf(
      async (db) => {
        await fill(db);
        await crowd.execute(db);
        await sql`analyze messages`.execute(db);
        await run(db);
      },
      { which: reading },
    );
    // messages is partitioned by day (DialectFlags.partitionsByDay): the index and the table are named as the partition
    // holding these rows names them (the default partition, messages_legacy, here).
    expect(plan).toMatch(/Index Scan (Backward )?using messages_recipient_time\w* on messages\w*/);
    expect(plan).toMatch(/Index Cond: .*recipient = /);
    // Through the view recipient_messages, each message found was joined to itself by sms_id and read a second time.
    expect(plan.match(/ on messages\w*/g)).toHaveLength(1);
    expect(plan).not.toMatch(/messages_pkey|Seq Scan/);
  });
});

describe('the messages of a number on SQLite', () => {
  it.each(cases)("%s: the number's entries day by day, each message by its primary key", async (_name, run) => {
    const plan = await sqlitePlanOf(
      async (db) => {
        await fill(db);
        await run(db);
      },
      { which: reading },
    );
    expect(plan).toMatch(/SEARCH r USING PRIMARY KEY \(day=\? AND recipient=\?/);
    expect(plan).toMatch(/SEARCH (m|messages) USING INDEX sqlite_autoindex_messages_1 \(sms_id=\?\)/);
    expect(plan).not.toMatch(/^SCAN/m);
  });
});
