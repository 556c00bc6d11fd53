/**
 * The receipt intake's bound on parked receipts (src/delivery/intake.ts, `storePushed`): a source pushing receipts for
 * ids we never issued keeps at most about `max_parked_receipts` of them parked. Real ledger: SQLite, or PostgreSQL
 * when TEST_DATABASE_URL is set.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReceiptIntake, parkedCheckInterval, type ReceiptIntake } from '../../src/delivery/intake.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { createTransactionQueue } from '../../src/ledger/engine/transaction-queue.js';
import { RECEIPT_MATCH } from '../../src/ledger/receipts.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';

describe('parkedCheckInterval', () => {
  it.each([
    [1, 1],
    [9, 1],
    [10, 1],
    [25, 2],
    [10_000, 1_000],
    [10_000_000, 1_000_000],
  ])('a bound of %i is enforced every %i parked receipts', (maxParked, interval) => {
    expect(parkedCheckInterval(maxParked)).toBe(interval);
  });
});

describe('receipts pushed for ids we never issued', () => {
  let opened: TestLedger | undefined;
  let ledger: Ledger;
  let clock = 1_800_000_000_000;
  const intakeOn = (l: Ledger): ReceiptIntake =>
    createReceiptIntake({ queue: createTransactionQueue(l.db), now: () => clock++, logger: pino({ level: 'silent' }) });
  const push = (intake: ReceiptIntake, provider: string, id: string, maxParked: number) =>
    intake.storePushed(provider, [{ providerMessageId: id, providerStatus: 'DELIVRD', status: 'delivered', perPart: true }], { maxParked });
  const parkedIds = async (provider: string) =>
    (
      await ledger.db
        .selectFrom('receipts')
        .select('provider_message_id')
        .where('provider', '=', provider)
        .where('matched', '=', RECEIPT_MATCH.parked)
        .orderBy('id')
        .execute()
    ).map((r) => r.provider_message_id);
  const setAside = async (provider: string) =>
    Number(
      (
        await ledger.db
          .selectFrom('receipts')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('provider', '=', provider)
          .where('matched', '=', RECEIPT_MATCH.setAside)
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    opened = await openTestLedger('intake');
    ledger = opened.ledger;
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('keeps the newest within a tenth of the bound past it, setting the oldest aside', async () => {
    const intake = intakeOn(ledger);
    for (let i = 0; i < 47; i++) await push(intake, 'flood', `X${i}`, 20);
    // Enforced on the 1st, 3rd, … 47th parked receipt (every 2 for a bound of 20): the last left the newest 20.
    expect(await parkedIds('flood')).toEqual(Array.from({ length: 20 }, (_, i) => `X${27 + i}`));
    expect(await setAside('flood')).toBe(27);
    await push(intake, 'flood', 'X47', 20);
    expect(await parkedIds('flood')).toHaveLength(21);
    await push(intake, 'flood', 'X48', 20);
    expect((await parkedIds('flood'))[0]).toBe('X29');
  });

  it("enforces the bound on a process's first parked receipt, whatever an earlier process left", async () => {
    const before = intakeOn(ledger);
    for (let i = 0; i < 30; i++) await push(before, 'restart', `R${i}`, 1_000);
    expect(await parkedIds('restart')).toHaveLength(30);
    // A restart with a lower bound: the first receipt it parks trims the pile at once.
    await push(intakeOn(ledger), 'restart', 'R30', 10);
    expect(await parkedIds('restart')).toEqual(Array.from({ length: 10 }, (_, i) => `R${21 + i}`));
  });

  it("counts each provider's parked receipts apart", async () => {
    const intake = intakeOn(ledger);
    for (let i = 0; i < 12; i++) await push(intake, 'one', `O${i}`, 10);
    await push(intake, 'two', 'T0', 10);
    expect(await parkedIds('one')).toHaveLength(10);
    expect(await parkedIds('two')).toEqual(['T0']);
  });
});
