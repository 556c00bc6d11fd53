/**
 * Marking parked receipts matched (src/ledger/receipts.ts): each is given the key it would have had matched on arrival,
 * unless another receipt holds it. Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set; the race with
 * another instance's uncommitted copy exists on PostgreSQL only (SQLite has one writer).
 */
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { markReceiptsMatched, type NewReceipt } from '../../src/ledger/receipts.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';

const parkedRow = (pm: string, dedupKey = `smsc||${pm}|DELIVRD|`): NewReceipt => ({
  provider: 'smsc',
  dedup_key: dedupKey,
  sms_id: null,
  provider_message_id: pm,
  provider_status: 'DELIVRD',
  mapped_status: 'delivered',
  error_code: null,
  matched: 0,
  received_at: 1_800_000_000_000,
  price_micros: null,
  price_currency: null,
});

describe('markReceiptsMatched', () => {
  let opened: TestLedger | undefined;
  let ledger: Ledger;
  beforeAll(async () => {
    opened = await openTestLedger('receipts');
    ledger = opened.ledger;
  });
  afterAll(async () => {
    await opened?.close();
  });

  const keysOf = async (pm: string) =>
    (await ledger.db.selectFrom('receipts').select(['dedup_key', 'matched']).where('provider_message_id', '=', pm).orderBy('id').execute()).map((r) => [
      r.dedup_key,
      Number(r.matched),
    ]);
  const park = async (row: NewReceipt) => Number((await ledger.db.insertInto('receipts').values(row).returning('id').executeTakeFirstOrThrow()).id);

  it('gives each its matched key, and keeps the parked key where that one is taken', async () => {
    const free = await park(parkedRow('P1'));
    const taken = await park(parkedRow('P2'));
    await ledger.db.insertInto('receipts').values(parkedRow('P2', 'smsc|CLOCK-B|P2|DELIVRD|')).execute();
    await ledger.db.transaction().execute((trx) =>
      markReceiptsMatched(trx, [
        { id: free, smsId: 'sms-a', dedupKey: 'smsc|CLOCK-A|P1|DELIVRD|', parkedSmsId: null },
        { id: taken, smsId: 'sms-b', dedupKey: 'smsc|CLOCK-B|P2|DELIVRD|', parkedSmsId: null },
      ]),
    );
    expect(await keysOf('P1')).toEqual([['smsc|CLOCK-A|P1|DELIVRD|', 1]]);
    expect(await keysOf('P2')).toEqual([
      ['smsc||P2|DELIVRD|', 1],
      ['smsc|CLOCK-B|P2|DELIVRD|', 0],
    ]);
  });

  it("marks a receipt parked under the sms_id it named (on PostgreSQL by day: in that day's table, not the default one)", async () => {
    const named = uuidv7({ msecs: Date.now() + 3 * 86_400_000 });
    const parked = await park({ ...parkedRow('P4'), sms_id: named });
    await ledger.db
      .transaction()
      .execute((trx) => markReceiptsMatched(trx, [{ id: parked, smsId: named, dedupKey: `smsc|${named}|P4|DELIVRD|`, parkedSmsId: named }]));
    expect(await keysOf('P4')).toEqual([[`smsc|${named}|P4|DELIVRD|`, 1]]);
  });

  it.runIf(Boolean(process.env.TEST_DATABASE_URL))('keeps the parked keys when another instance stores the same key meanwhile, and fails nothing', async () => {
    const parked = await park(parkedRow('P3'));
    const other = new pg.Client({ connectionString: opened!.url });
    await other.connect();
    try {
      // Another instance's copy, stored in a transaction still open: the check in the update cannot see it.
      await other.query('begin');
      await other.query(
        `insert into receipts (provider, dedup_key, sms_id, provider_message_id, provider_status, mapped_status, matched, received_at)
         values ('smsc', 'smsc|CLOCK-C|P3|DELIVRD|', 'sms-c', 'P3', 'DELIVRD', 'delivered', 1, 1800000000000)`,
      );
      const marking = ledger.db
        .transaction()
        .execute((trx) => markReceiptsMatched(trx, [{ id: parked, smsId: 'sms-c', dedupKey: 'smsc|CLOCK-C|P3|DELIVRD|', parkedSmsId: null }]));
      // The update waits on the open copy's key; the copy commits, and the update breaks the unique key.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await other.query('commit');
      await marking;
    } finally {
      await other.end();
    }
    expect(await keysOf('P3')).toEqual([
      ['smsc||P3|DELIVRD|', 1],
      ['smsc|CLOCK-C|P3|DELIVRD|', 1],
    ]);
  });
});
