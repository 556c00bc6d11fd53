/**
 * Group commit: work items submitted while a write is running are written together by the next one, so concurrent
 * requests share transactions instead of paying one commit each (DESIGN §6). One flush runs at a time, which is
 * also what SQLite's single writer wants.
 * A group whose write fails is split in halves and each half written again, down to single items, so one item
 * that cannot be written (a poison item) fails alone and every other item of its group is written: about
 * 2·log2(n) extra transactions for one bad item among n. A failure that says the database itself is unreachable
 * or locked (ledger/write-errors.ts) fails the whole group at once: splitting would only repeat the wait.
 */
import { isLedgerUnavailable } from './write-errors.js';

export interface WriteBatcher<I, O> {
  /** Resolves with every item's output, or rejects with the first item's error. */
  run(items: readonly I[]): Promise<O[]>;
  /** Each item's own outcome: one item's failure leaves the others' results intact. */
  settle(items: readonly I[]): Promise<Array<PromiseSettledResult<O>>>;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

export function createWriteBatcher<I, O>(write: (items: I[]) => Promise<O[]>, maxItems = 1_000): WriteBatcher<I, O> {
  let queue: Pending<I, O>[] = [];
  let running = false;

  async function writeGroup(group: Pending<I, O>[]): Promise<void> {
    try {
      const outputs = await write(group.map((p) => p.item));
      group.forEach((p, i) => p.resolve(outputs[i]!));
    } catch (error) {
      if (group.length === 1 || isLedgerUnavailable(error)) {
        for (const p of group) p.reject(error);
        return;
      }
      const half = Math.ceil(group.length / 2);
      await writeGroup(group.slice(0, half));
      await writeGroup(group.slice(half));
    }
  }

  async function drain(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxItems);
      queue = queue.slice(batch.length);
      await writeGroup(batch);
    }
    running = false;
  }

  function enqueue(items: readonly I[]): Array<Promise<O>> {
    const promises = items.map((item) => new Promise<O>((resolve, reject) => queue.push({ item, resolve, reject })));
    // Wait one turn of the event loop so requests arriving together are written together.
    if (!running) {
      running = true;
      setImmediate(() => void drain());
    }
    return promises;
  }

  return {
    run: (items) => Promise.all(enqueue(items)),
    settle: (items) => Promise.allSettled(enqueue(items)),
  };
}
