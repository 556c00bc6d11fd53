/**
 * The numbers' entries (recipient_messages, migration 2026-11-29-95-recipient-messages). On SQLite tables: written with
 * each message by the claim into recipient_messages_recent (migration 2026-12-01-10-recent-number-entries), one more
 * when a retry carries another number, and moved into recipient_messages in key order; a search finds a message
 * through an entry in either, and only while the message still has that number; retention deletes an entry once its
 * message is gone or blanked, and only with the rest of its day. On PostgreSQL a view over messages: each message's
 * own number, nothing to move or delete. Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/ledger/engine/db.js';
import { dialectFlagsOf } from '../../src/ledger/engine/flags.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { searchMessages } from '../../src/ledger/message-search.js';
import { insertNewMessages, type NewMessage, reclaimMessageForRetry } from '../../src/ledger/messages.js';
import { findRecentHours, moveNumberEntriesOfDay } from '../../src/ledger/number-messages.js';
import { BLANKED, type EntryPosition, purgeRecipientEntries } from '../../src/ledger/retention.js';
import { bucketAt, hourAt } from '../../src/ledger/time-buckets.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { moveDayInChunks, runningAfterFirstRead, submittedMessageRow } from '../helpers/ledger.js';

const DAY = 86_400_000;
// Noon UTC: the messages below a few hours apart share their day.
const NOON = Math.floor(Date.now() / DAY) * DAY - 2 * DAY + DAY / 2;

let opened: TestLedger | undefined;
let ledger: Ledger;
beforeEach(async () => {
  opened = await openTestLedger('recipient-entries');
  ledger = opened.ledger;
});
afterEach(async () => {
  await opened?.close();
});

/** A message as the claim stores it (insertNewMessages), to `recipient` at `at`. */
async function claim(id: string, recipient: string, at: number): Promise<void> {
  const row = submittedMessageRow(id, 'sandbox', at, { recipient }) as unknown as NewMessage;
  await inTransaction(ledger.db, (trx) => insertNewMessages(trx, [row]));
}

const writes = () => dialectFlagsOf(ledger.db).writesNumberEntries;

/** The moved entries (on PostgreSQL recipient_messages is the view: every message's), in (sms_id, recipient) order. */
const moved = async () =>
  (await ledger.db.selectFrom('recipient_messages').select(['day', 'recipient', 'sms_id']).orderBy('sms_id').orderBy('recipient').execute()).map((e) => ({
    ...e,
    day: Number(e.day),
  }));

/** Every entry, moved or not, by its day. */
const entries = async () => {
  if (!writes()) return moved();
  const recent = (await ledger.db.selectFrom('recipient_messages_recent').select(['hour', 'recipient', 'sms_id']).execute()).map((e) => ({
    day: Math.floor(Number(e.hour) / 24),
    recipient: e.recipient,
    sms_id: e.sms_id,
  }));
  return [...(await moved()), ...recent].sort((a, b) => a.sms_id.localeCompare(b.sms_id) || a.recipient.localeCompare(b.recipient));
};

const found = async (recipient: string) => (await searchMessages(ledger.db, { recipient, limit: 10 })).rows.map((r) => r.sms_id);

/** Purges as a pass does, in chunks of `limit`, the days before `dayBefore`; returns how many went. */
async function purge(dayBefore: number, limit: number): Promise<number> {
  let total = 0;
  for (let from: EntryPosition | undefined; ; ) {
    const chunk = await inTransaction(ledger.db, (trx) => purgeRecipientEntries(trx, dayBefore, from, limit));
    total += chunk.purged;
    if (!chunk.last) return total;
    from = chunk.last;
  }
}

describe("a message's number entries", () => {
  it('are written by the claim, one more for a retry to another number; only the number the message has finds it', async () => {
    await claim('m1', '+447700900001', NOON);
    expect(await entries()).toEqual([{ day: bucketAt(NOON), recipient: '+447700900001', sms_id: 'm1' }]);
    expect(await found('+447700900001')).toEqual(['m1']);

    // A CRM retry of a send that failed for a while carries another number.
    await ledger.db.updateTable('messages').set({ state: 'retryable' }).where('sms_id', '=', 'm1').execute();
    const retry = { ...(submittedMessageRow('m1', 'sandbox', NOON, { recipient: '+447700900002' }) as unknown as NewMessage) };
    expect(await inTransaction(ledger.db, (trx) => reclaimMessageForRetry(trx, 'm1', retry, NOON + 60_000, { uncertainCutoff: NOON }))).toBe(true);
    const now = { day: bucketAt(NOON), recipient: '+447700900002', sms_id: 'm1' };
    expect(await entries()).toEqual(writes() ? [{ day: bucketAt(NOON), recipient: '+447700900001', sms_id: 'm1' }, now] : [now]);
    expect(await found('+447700900002')).toEqual(['m1']);
    expect(await found('+447700900001')).toEqual([]);
  });

  it('go in key order once their message is deleted or blanked, only for the days asked, a chunk at a time', async () => {
    const day = bucketAt(NOON);
    // Day one: two messages deleted, one blanked, one kept (not final yet). Day two: one deleted.
    for (const [id, n, at] of [
      ['gone-1', 1, NOON],
      ['gone-2', 2, NOON + 1_000],
      ['blanked', 3, NOON + 2_000],
      ['kept', 4, NOON + 3_000],
      ['gone-next-day', 5, NOON + DAY],
    ] as const)
      await claim(id, `+44770090000${n}`, at);
    await ledger.db.deleteFrom('messages').where('sms_id', 'in', ['gone-1', 'gone-2', 'gone-next-day']).execute();
    await ledger.db.updateTable('messages').set({ recipient: BLANKED }).where('sms_id', '=', 'blanked').execute();
    expect(await found('+447700900003')).toEqual([]);
    if (!writes()) {
      // The view has each remaining message's number as it is now; nothing to purge.
      expect(await purge(day + 2, 2)).toBe(0);
      expect(await entries()).toEqual([
        { day, recipient: BLANKED, sms_id: 'blanked' },
        { day, recipient: '+447700900004', sms_id: 'kept' },
      ]);
      return;
    }

    // Retention purges the moved entries: until their days are moved, they wait in the recent table.
    expect(await purge(day + 1, 2)).toBe(0);
    await moveDayInChunks(ledger.db, moveNumberEntriesOfDay, day, 24);
    await moveDayInChunks(ledger.db, moveNumberEntriesOfDay, day + 1, 24);
    expect(await purge(day + 1, 2)).toBe(3);
    expect((await entries()).map((e) => e.sms_id)).toEqual(['gone-next-day', 'kept']);
    expect(await found('+447700900004')).toEqual(['kept']);
    // The next day's goes once its day is asked for too; the kept one stays.
    expect(await purge(day + 2, 2)).toBe(1);
    expect((await entries()).map((e) => e.sms_id)).toEqual(['kept']);
    expect(await purge(day + 2, 2)).toBe(0);
  });

  it('wait by the hour until their day is moved into recipient_messages, in number order, a chunk at a time; a search finds them throughout', async () => {
    const sends = [
      ['d1-b', '+447700900002', NOON],
      ['d1-a', '+447700900001', NOON + 1_000],
      ['d2-a', '+447700900001', NOON + DAY],
      ['d1-c', '+447700900003', NOON + 2_000],
      ['d1-a2', '+447700900001', NOON + 3_000],
      ['d1-d', '+447700900004', NOON + 3_600_000],
    ] as const;
    for (const [id, recipient, at] of sends) await claim(id, recipient, at);
    const findsAll = async () => {
      expect(await found('+447700900001')).toEqual(['d2-a', 'd1-a2', 'd1-a']);
      expect(await found('+447700900002')).toEqual(['d1-b']);
      expect(await found('+447700900003')).toEqual(['d1-c']);
      expect(await found('+447700900004')).toEqual(['d1-d']);
    };
    await findsAll();
    if (!writes()) {
      expect(await findRecentHours(ledger.db, 'recipient_messages_recent')).toEqual([]);
      return;
    }
    expect(await moved()).toEqual([]);
    const day = bucketAt(NOON);
    expect(await findRecentHours(ledger.db, 'recipient_messages_recent')).toEqual([hourAt(NOON), hourAt(NOON) + 1, hourAt(NOON + DAY)]);

    // About 24 a chunk is one an hour: the lowest number either hour reaches first. Noon's first is …001, both of its
    // messages that day go together.
    const first = await inTransaction(ledger.db, (trx) => moveNumberEntriesOfDay(trx, day, undefined, 24));
    expect(first).toEqual({ moved: 2, last: '+447700900001' });
    expect((await moved()).map((e) => e.sms_id)).toEqual(['d1-a', 'd1-a2']);
    // A page of the number's messages is put together from both tables, newest first.
    await findsAll();
    expect(await searchMessages(ledger.db, { recipient: '+447700900001', limit: 2 })).toEqual({
      rows: [expect.objectContaining({ sms_id: 'd2-a' }), expect.objectContaining({ sms_id: 'd1-a2' })],
      more: true,
    });

    expect(await moveDayInChunks(ledger.db, moveNumberEntriesOfDay, day, 24)).toEqual([1, 1, 1, 0]);
    expect(await moved()).toEqual(
      ['d1-a', 'd1-a2', 'd1-b', 'd1-c', 'd1-d'].map((id, i) => ({ day, recipient: `+44770090000${[1, 1, 2, 3, 4][i]}`, sms_id: id })),
    );
    expect(await findRecentHours(ledger.db, 'recipient_messages_recent')).toEqual([hourAt(NOON + DAY)]);
    await findsAll();
    // The next day's, in one chunk: fewer than its share wait.
    expect(await moveDayInChunks(ledger.db, moveNumberEntriesOfDay, day + 1, 2_000)).toEqual([1]);
    expect(await findRecentHours(ledger.db, 'recipient_messages_recent')).toEqual([]);
    await findsAll();
  });

  it("are found once each when their day's move runs between the search's two reads", async () => {
    for (const [id, at] of [
      ['m1', NOON],
      ['m2', NOON + 1_000],
      ['m3', NOON + DAY],
    ] as const)
      await claim(id, '+447700900001', at);
    // On SQLite the recent entries are read first, then the day is moved, then recipient_messages is read: m1 and m2
    // are in both reads. Read the other way round they would be in neither. (On PostgreSQL one read, nothing moved.)
    const moving = runningAfterFirstRead(ledger.db, 'recipient_messages_recent', () =>
      moveDayInChunks(ledger.db, moveNumberEntriesOfDay, bucketAt(NOON), 2_000),
    );
    expect(await searchMessages(moving, { recipient: '+447700900001', limit: 10 })).toEqual({
      rows: ['m3', 'm2', 'm1'].map((sms_id) => expect.objectContaining({ sms_id })),
      more: false,
    });
    expect(await findRecentHours(ledger.db, 'recipient_messages_recent')).toEqual(writes() ? [hourAt(NOON + DAY)] : []);
  });
});
