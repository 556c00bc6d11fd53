/**
 * The transaction queue (src/ledger/engine/transaction-queue.ts), the ledger's one grouping layer: pieces of work and
 * writers' items queued together share one commit, their counter increments are written once at the end, and one
 * failing piece or item fails only itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { createTransactionQueue } from '../../src/ledger/engine/transaction-queue.js';

let dir: string;
let ledger: Ledger;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tx-queue-'));
  ledger = openLedger({ url: `sqlite:${join(dir, 'ledger.db')}`, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db);
});
afterEach(async () => {
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

const statsRows = (db: Ledger['db']) =>
  db.selectFrom('delivery_stats').select(['period', 'provider', 'outcome', 'n']).orderBy('period').orderBy('outcome').execute();

describe('createTransactionQueue', () => {
  it('hands every piece of a shared transaction one tally, and writes its sum once they have all run', async () => {
    const { transact } = createTransactionQueue(ledger.db);
    const at = Date.now();
    const seenInside: number[] = [];
    await Promise.all(
      ['submitted', 'submitted', 'delivered'].map((outcome) =>
        transact(async (trx, tally) => {
          tally.push({ at, provider: 'sandbox', outcome: outcome as 'submitted' | 'delivered' });
          seenInside.push((await statsRows(trx)).length);
        }),
      ),
    );
    expect(seenInside).toEqual([0, 0, 0]);
    expect(await statsRows(ledger.db)).toEqual([
      { period: 'hour', provider: 'sandbox', outcome: 'delivered', n: 1 },
      { period: 'hour', provider: 'sandbox', outcome: 'submitted', n: 2 },
      { period: 'minute', provider: 'sandbox', outcome: 'delivered', n: 1 },
      { period: 'minute', provider: 'sandbox', outcome: 'submitted', n: 2 },
    ]);
  });

  it('fails only the piece that fails, and keeps the others and their counts', async () => {
    const { transact } = createTransactionQueue(ledger.db);
    const at = Date.now();
    const results = await Promise.allSettled([
      transact(async (_trx, tally) => tally.push({ at, provider: 'sandbox', outcome: 'submitted' })),
      transact(async (trx, tally) => {
        tally.push({ at, provider: 'sandbox', outcome: 'failed' });
        await sql`insert into no_such_table values (1)`.execute(trx);
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect((await statsRows(ledger.db)).map((r) => [r.period, r.outcome, r.n])).toEqual([
      ['hour', 'submitted', 1],
      ['minute', 'submitted', 1],
    ]);
  });

  it('hands a writer all its items queued together in one call, and splits a failing group until only the bad item fails', async () => {
    const queue = createTransactionQueue(ledger.db);
    const calls: string[][] = [];
    const committed: string[][] = [];
    const writer = queue.writer<string, string>(
      async (trx, items) => {
        calls.push(items);
        await sql`select 1`.execute(trx);
        if (items.includes('poison')) throw new Error('poisoned');
        return items.map((i) => i.toUpperCase());
      },
      (items) => committed.push(items),
    );
    const first = await Promise.all([writer.run(['a', 'b']), writer.run(['c'])]);
    expect(first).toEqual([['A', 'B'], ['C']]);
    expect(calls).toEqual([['a', 'b', 'c']]);
    expect(committed).toEqual([['a', 'b', 'c']]);
    const settled = await writer.settle(['d', 'e', 'poison', 'f']);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : 'failed'))).toEqual(['D', 'E', 'failed', 'F']);
    expect(committed.flat().sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('answers a run once all its items are settled: the first bad item’s error, the good ones written; an empty run at once', async () => {
    const queue = createTransactionQueue(ledger.db);
    const committed: string[] = [];
    const writer = queue.writer<string, string>(
      async (_trx, items) => {
        const bad = items.find((i) => i.startsWith('bad'));
        if (bad) throw new Error(bad);
        return items.map((i) => i.toUpperCase());
      },
      (items) => committed.push(...items),
    );
    await expect(writer.run(['g', 'bad-1', 'h', 'bad-2', 'i'])).rejects.toThrow('bad-1');
    expect(committed.sort()).toEqual(['g', 'h', 'i']);
    expect(await writer.run([])).toEqual([]);
    expect(await writer.settle([])).toEqual([]);
  });

  it('shares one commit between writers and single pieces of work', async () => {
    const queue = createTransactionQueue(ledger.db);
    const seen: string[] = [];
    const writer = queue.writer<string, void>(async (_trx, items) => {
      seen.push(`writer:${items.join(',')}`);
      return items.map(() => undefined);
    });
    await Promise.all([writer.run(['x']), queue.transact(async () => void seen.push('work')), writer.run(['y'])]);
    expect(seen).toEqual(['writer:x,y', 'work']);
  });

  it('takes at most maxItems items of each writer into one transaction, the rest into the next', async () => {
    const queue = createTransactionQueue(ledger.db, 2);
    const calls: string[] = [];
    const writerOf = (name: string) =>
      queue.writer<number, void>(async (_trx, items) => {
        calls.push(`${name}:${items.join(',')}`);
        return items.map(() => undefined);
      });
    const [a, b] = [writerOf('a'), writerOf('b')];
    await Promise.all([a.run([1, 2, 3, 4, 5]), b.run([1])]);
    // One call per writer per transaction: a's first two with b's one, then two, then the last.
    expect(calls).toEqual(['a:1,2', 'b:1', 'a:3,4', 'a:5']);
  });
});
