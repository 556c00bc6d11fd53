/**
 * `serve`'s move of the numbers' entries by the hour into recipient_messages, and of the players' pairs into
 * message_user_recipients (src/delivery/number-entries.ts): which days move (a pure table), and the part on a real
 * ledger: a look moves every entry and pair of the days before today, in chunks, and leaves today's. Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set (where nothing waits).
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { daysToMove, MOVE_CHUNK, startNumberEntryMoves } from '../../src/delivery/number-entries.js';
import { dialectFlagsOf } from '../../src/ledger/engine/flags.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { findRecentHours } from '../../src/ledger/number-messages.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';

const DAY = 86_400_000;
const TODAY = 20_000;
const NOW = TODAY * DAY + 5 * 3_600_000;

describe('daysToMove', () => {
  it.each<[string, number[], number[]]>([
    ['nothing waits', [], []],
    ["only today's hours", [TODAY * 24, TODAY * 24 + 4], []],
    ["yesterday's last hour and today's first", [TODAY * 24 - 1, TODAY * 24], [TODAY - 1]],
    ['older days, in any order, each once', [TODAY * 24 - 30, (TODAY - 9) * 24 + 3, TODAY * 24 - 29, TODAY * 24 + 1], [TODAY - 9, TODAY - 2]],
  ])('%s', (_label, hours, expected) => {
    expect(daysToMove(hours, NOW)).toEqual(expected);
  });
});

let opened: TestLedger | undefined;
let ledger: Ledger;
beforeEach(async () => {
  opened = await openTestLedger('number-entries');
  ledger = opened.ledger;
});
afterEach(async () => {
  await opened?.close();
});

/** `n` entries at `hour`, as sends write them (numbers in no order), straight into the recent table. */
async function wait(hour: number, n: number): Promise<void> {
  await sql`with recursive k(i) as (select 1 union all select i + 1 from k where i < ${n})
    insert into recipient_messages_recent (hour, recipient, created_at, sms_id)
    select ${hour}, '+4477' || ((i * 7919) % 100000000), ${hour * 3_600_000} + i, ${`m-${hour}-`} || i from k`.execute(ledger.db);
}

/** `n` (player, number) pairs at `hour`, players p-1 … p-n with one number each, straight into the recent table. */
async function waitPairs(hour: number, n: number): Promise<void> {
  await sql`with recursive k(i) as (select 1 union all select i + 1 from k where i < ${n})
    insert into message_user_recipients_recent (hour, user_id, recipient)
    select ${hour}, 'p-' || i, '+4479' || i from k`.execute(ledger.db);
}

const QUIET = { error: () => {}, info: () => {} };

const count = async (table: 'recipient_messages' | 'recipient_messages_recent' | 'message_user_recipients' | 'message_user_recipients_recent') =>
  Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(ledger.db)).rows[0]!.n);

describe("the numbers' entries, moved by the day", () => {
  it("moves every entry of the days before today, in chunks, and leaves today's", async () => {
    const moves = startNumberEntryMoves({ db: ledger.db, logger: QUIET, now: () => NOW });
    try {
      if (!dialectFlagsOf(ledger.db).writesNumberEntries) {
        expect(await moves.runOnce()).toBe(0);
        return;
      }
      // Two days ago, spread over three hours and more than a chunk; yesterday's last hour; today's first.
      for (const hour of [(TODAY - 2) * 24, (TODAY - 2) * 24 + 7, (TODAY - 2) * 24 + 23]) await wait(hour, MOVE_CHUNK);
      await wait(TODAY * 24 - 1, 10);
      await wait(TODAY * 24, 5);
      // The players' pairs: two hours of two days ago, the same players in both; three days ago, a day with pairs
      // alone (a late retry's); today's.
      await waitPairs((TODAY - 2) * 24, MOVE_CHUNK + 5);
      await waitPairs((TODAY - 2) * 24 + 7, 100);
      await waitPairs((TODAY - 3) * 24 + 1, 3);
      await waitPairs(TODAY * 24, 4);
      expect(await moves.runOnce()).toBe(3 * MOVE_CHUNK + 10);
      // Each pair once, the players of both hours of a day as one.
      expect(await count('message_user_recipients')).toBe(MOVE_CHUNK + 5);
      expect(await findRecentHours(ledger.db, 'message_user_recipients_recent')).toEqual([TODAY * 24]);
      expect(await count('message_user_recipients_recent')).toBe(4);
      expect(await count('recipient_messages')).toBe(3 * MOVE_CHUNK + 10);
      expect(await findRecentHours(ledger.db, 'recipient_messages_recent')).toEqual([TODAY * 24]);
      // Each moved entry under its day.
      const days = await sql<{ day: number; n: number }>`select day, count(*) as n from recipient_messages group by day order by day`.execute(ledger.db);
      expect(days.rows.map((r) => [Number(r.day), Number(r.n)])).toEqual([
        [TODAY - 2, 3 * MOVE_CHUNK],
        [TODAY - 1, 10],
      ]);
      expect(await moves.runOnce()).toBe(0);
      expect(await count('recipient_messages_recent')).toBe(5);
    } finally {
      await moves.stop();
    }
  });

  it.each([
    ['while sends wait for the writer, gives way between chunks', true],
    ['while nothing waits, goes on at once', false],
  ])('%s', async (_label, waiting) => {
    if (!dialectFlagsOf(ledger.db).writesNumberEntries) return;
    await wait((TODAY - 1) * 24, 3 * MOVE_CHUNK);
    const pauses: number[] = [];
    const moves = startNumberEntryMoves({
      db: ledger.db,
      logger: QUIET,
      now: () => NOW,
      writesWaiting: () => waiting,
      pause: async (ms) => void pauses.push(ms),
    });
    try {
      expect(await moves.runOnce()).toBe(3 * MOVE_CHUNK);
      // After each chunk but the last (an hour's entries alone move a 24th of a chunk at a time): 19 times the chunk's
      // time, so that the move takes a twentieth of the writer (retention's share, pauseAfterChunk), or nothing.
      expect(pauses.length).toBeGreaterThan(24);
      expect(pauses.every((ms) => (waiting ? ms >= 1 : ms === 0))).toBe(true);
    } finally {
      await moves.stop();
    }
  });
});
