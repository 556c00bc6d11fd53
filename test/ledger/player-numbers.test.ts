/**
 * The (player, number) pairs of the search by player (message_user_recipients, migration 2026-11-24-81-search-keys). A
 * stored message records its pair by the hour in message_user_recipients_recent (migration
 * 2026-12-01-20-recent-player-numbers), moved into message_user_recipients in player order once the day is over; a
 * search by player reads both. A blanked or deleted message's pair goes once no message of it is left, wherever it
 * waits. Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { searchMessages } from '../../src/ledger/message-search.js';
import { insertNewMessages, type NewMessage, reclaimMessageForRetry } from '../../src/ledger/messages.js';
import { findRecentHours, movePlayerNumbersOfDay } from '../../src/ledger/number-messages.js';
import { blankFinalMessages, SCAN_START } from '../../src/ledger/retention.js';
import { bucketAt, hourAt } from '../../src/ledger/time-buckets.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { moveDayInChunks, runningAfterFirstRead, submittedMessageRow } from '../helpers/ledger.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
// Noon UTC two days ago: the sends below a few hours apart share their day, and the next day is over too.
const NOON = Math.floor(Date.now() / DAY) * DAY - 2 * DAY + DAY / 2;

let opened: TestLedger | undefined;
let ledger: Ledger;
beforeEach(async () => {
  opened = await openTestLedger('player-numbers');
  ledger = opened.ledger;
});
afterEach(async () => {
  await opened?.close();
});

/** Messages as the claim stores them, in one statement: [sms_id, player, number, at, activity]. */
async function claim(...sends: Array<[id: string, userId: string | null, recipient: string, at: number, activity?: string]>): Promise<Set<string>> {
  const rows = sends.map(
    ([id, user_id, recipient, at, activity]) =>
      submittedMessageRow(id, 'sandbox', at, { user_id, recipient, ...(activity ? { activity_key: activity } : {}) }) as unknown as NewMessage,
  );
  return inTransaction(ledger.db, (trx) => insertNewMessages(trx, rows));
}

const pairsMoved = async () =>
  (await ledger.db.selectFrom('message_user_recipients').select(['user_id', 'recipient']).orderBy('user_id').orderBy('recipient').execute()).map(
    (p) => `${p.user_id} ${p.recipient}`,
  );

const pairsWaiting = async () =>
  (await ledger.db.selectFrom('message_user_recipients_recent').selectAll().orderBy('hour').orderBy('user_id').orderBy('recipient').execute()).map(
    (p) => `${Number(p.hour) - hourAt(NOON)} ${p.user_id} ${p.recipient}`,
  );

const foundFor = async (userId: string) => (await searchMessages(ledger.db, { userId, limit: 10 })).rows.map((r) => r.sms_id);

describe('a (player, number) pair', () => {
  it('is recorded once an hour for each stored message with a player, and not for a repeat', async () => {
    const stored = await claim(
      ['m1', 'p1', '+447700900001', NOON],
      ['m2', 'p1', '+447700900001', NOON + 1_000],
      ['m3', 'p2', '+447700900002', NOON + 2_000],
      ['m4', null, '+447700900003', NOON + 3_000],
      ['m5', 'p1', '+447700900001', NOON + HOUR],
    );
    expect(stored.size).toBe(5);
    // The same activity again, for another player and number: its message is m1's, and records nothing.
    expect(await claim(['m6', 'p9', '+447700900009', NOON + HOUR, 'act-m1'])).toEqual(new Set());
    expect(await pairsWaiting()).toEqual(['0 p1 +447700900001', '0 p2 +447700900002', '1 p1 +447700900001']);
    expect(await pairsMoved()).toEqual([]);
    expect(await foundFor('p1')).toEqual(['m5', 'm2', 'm1']);
    expect(await foundFor('p9')).toEqual([]);
  });

  it('moves into message_user_recipients a day at a time, whole players in player order, found by the search throughout', async () => {
    await claim(['a1', 'p3', '+447700900003', NOON], ['a2', 'p1', '+447700900001', NOON + 1_000], ['a3', 'p2', '+447700900002', NOON + 2_000]);
    // p1's second number, and p1's first number again an hour later: one pair of the day.
    await claim(
      ['b1', 'p1', '+447700900011', NOON + HOUR],
      ['b2', 'p1', '+447700900001', NOON + HOUR + 1_000],
      ['b3', 'p4', '+447700900004', NOON + HOUR + 2_000],
    );
    // The next day's.
    await claim(['c1', 'p1', '+447700900001', NOON + DAY]);
    // A pair known already (from an earlier day, moved before): moving it again adds nothing.
    await ledger.db
      .insertInto('message_user_recipients')
      .values({ user_id: 'p2', recipient: '+447700900002' })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const findsAll = async () => {
      expect(await foundFor('p1')).toEqual(['c1', 'b2', 'b1', 'a2']);
      expect(await foundFor('p2')).toEqual(['a3']);
      expect(await foundFor('p3')).toEqual(['a1']);
      expect(await foundFor('p4')).toEqual(['b3']);
    };
    await findsAll();
    expect(await findRecentHours(ledger.db, 'message_user_recipients_recent')).toEqual([hourAt(NOON), hourAt(NOON) + 1, hourAt(NOON + DAY)]);
    const day = bucketAt(NOON);

    // About 24 a chunk is one an hour: the lowest player either hour reaches first. Noon's first is p1, and both of
    // p1's pairs of the day go with it, from both hours.
    const first = await inTransaction(ledger.db, (trx) => movePlayerNumbersOfDay(trx, day, undefined, 24));
    expect(first).toEqual({ moved: 3, last: 'p1' });
    expect(await pairsMoved()).toEqual(['p1 +447700900001', 'p1 +447700900011', 'p2 +447700900002']);
    await findsAll();

    expect(await moveDayInChunks(ledger.db, movePlayerNumbersOfDay, day, 24)).toEqual([1, 1, 1, 0]);
    expect(await pairsMoved()).toEqual(['p1 +447700900001', 'p1 +447700900011', 'p2 +447700900002', 'p3 +447700900003', 'p4 +447700900004']);
    expect(await pairsWaiting()).toEqual(['24 p1 +447700900001']);
    await findsAll();
    expect(await moveDayInChunks(ledger.db, movePlayerNumbersOfDay, day + 1, 2_000)).toEqual([1]);
    expect(await pairsWaiting()).toEqual([]);
    expect(await pairsMoved()).toHaveLength(5);
    await findsAll();
  });

  it("finds a player's messages once each when the day's move runs between the search's two reads of the pairs", async () => {
    await claim(['a1', 'p1', '+447700900001', NOON], ['a2', 'p1', '+447700900011', NOON + 1_000], ['b1', 'p1', '+447700900001', NOON + DAY]);
    // The waiting pairs are read first, then the day's pairs move, then message_user_recipients is read: read the other
    // way round, the second number would be in neither read.
    const moving = runningAfterFirstRead(ledger.db, 'message_user_recipients_recent', () =>
      moveDayInChunks(ledger.db, movePlayerNumbersOfDay, bucketAt(NOON), 2_000),
    );
    expect((await searchMessages(moving, { userId: 'p1', limit: 10 })).rows.map((r) => r.sms_id)).toEqual(['b1', 'a2', 'a1']);
    expect(await pairsMoved()).toEqual(['p1 +447700900001', 'p1 +447700900011']);
  });

  it('is recorded for the number a retry carries, at its message’s hour', async () => {
    await claim(['m1', 'p1', '+447700900001', NOON]);
    // A CRM retry of a send that failed for a while carries another number.
    await ledger.db.updateTable('messages').set({ state: 'retryable' }).where('sms_id', '=', 'm1').execute();
    const retry = submittedMessageRow('m1', 'sandbox', NOON, { user_id: 'p1', recipient: '+447700900002' }) as unknown as NewMessage;
    expect(await inTransaction(ledger.db, (trx) => reclaimMessageForRetry(trx, 'm1', retry, NOON + 60_000, { uncertainCutoff: NOON }))).toBe(true);
    expect(await pairsWaiting()).toEqual(['0 p1 +447700900001', '0 p1 +447700900002']);
    expect(await foundFor('p1')).toEqual(['m1']);
    expect((await searchMessages(ledger.db, { userId: 'p1', recipient: '+447700900002', limit: 10 })).rows.map((r) => r.sms_id)).toEqual(['m1']);
  });

  it('goes when its last message is blanked, from where it waits, and stays while another is kept', async () => {
    const final = { delivery_status: 'delivered' as const, completed_at: NOON + 10_000 };
    const rows = [
      submittedMessageRow('g1', 'sandbox', NOON, { user_id: 'p1', recipient: '+447700900001', ...final }),
      submittedMessageRow('g2', 'sandbox', NOON + 1_000, { user_id: 'p2', recipient: '+447700900002', ...final }),
      // p2's number again, an hour later and not final: kept.
      submittedMessageRow('g3', 'sandbox', NOON + HOUR, { user_id: 'p2', recipient: '+447700900002' }),
      // p1's number again two hours later, blanked in the same chunk: the pair goes from both hours.
      submittedMessageRow('g4', 'sandbox', NOON + 2 * HOUR, { user_id: 'p1', recipient: '+447700900001', ...final }),
    ] as unknown as NewMessage[];
    await inTransaction(ledger.db, (trx) => insertNewMessages(trx, rows));
    expect(await pairsWaiting()).toEqual(['0 p1 +447700900001', '0 p2 +447700900002', '1 p2 +447700900002', '2 p1 +447700900001']);
    const chunk = await inTransaction(ledger.db, (trx) => blankFinalMessages(trx, NOON + DAY, SCAN_START));
    expect(chunk.blanked).toBe(3);
    expect(await pairsWaiting()).toEqual(['0 p2 +447700900002', '1 p2 +447700900002']);
    expect(await foundFor('p1')).toEqual([]);
    expect(await foundFor('p2')).toEqual(['g3']);
    // Nothing of p1's number comes back with the day's move.
    expect(await moveDayInChunks(ledger.db, movePlayerNumbersOfDay, bucketAt(NOON), 2_000)).toEqual([2]);
    expect(await pairsMoved()).toEqual(['p2 +447700900002']);
  });
});
