/**
 * The ledger's one grouping layer (group commit, docs/design.md §6): every write queued while a transaction runs
 * is done together in the next one, so concurrent requests share a commit, the most expensive step of a small
 * SQLite write, instead of paying one each. One transaction runs at a time, which is also what SQLite's single
 * writer wants.
 *
 * Two ways in, one queue:
 * - `writer(write)`: items of one kind (the send path's claims and recorded answers, stored receipts). All items of
 *   a writer queued for the same transaction reach `write` in one call, so they cost a few multi-row statements,
 *   not one each. Writers run in the order their first item was queued.
 * - `transact(work)`: one piece of work of its own (an accepted CRM event, an admin change).
 *
 * A grouped transaction that fails is split in halves and each half tried again, down to single items, so one item
 * that cannot be written (a poison item) fails alone and every other item of its group is written: about
 * 2·log2(n) extra transactions for one bad item among n. A failure that says the database itself is unreachable
 * or locked (ledger/write-errors.ts) fails the whole group at once: splitting would only repeat the wait. A group
 * that loses a deadlock or serialization conflict (PostgreSQL, several instances) is tried again a few times.
 * Counter increments of the whole transaction are gathered on one tally handed to every writer and piece of work,
 * and written once, last (withStatsTally).
 */
import type { Kysely, Transaction } from 'kysely';
import { inTransaction } from './db.js';
import { type StatsTally, withStatsTally } from '../delivery-stats.js';
import type { Database } from '../schema.js';
import { isLedgerUnavailable } from './write-errors.js';

/** `tally`: where the work counts delivery stats; they are written when every piece of the transaction has run. */
export type Transact = <T>(work: (trx: Transaction<Database>, tally: StatsTally) => Promise<T>) => Promise<T>;

/** Writes a group of items in the transaction given, counting on `tally`; answers one output per item, in order. */
export type GroupWrite<I, O> = (trx: Transaction<Database>, items: I[], tally: StatsTally) => Promise<O[]>;

export interface GroupedWriter<I, O> {
  /** Resolves with every item's output, or rejects with the first item's error. */
  run(items: readonly I[]): Promise<O[]>;
  /** Each item's own outcome: one item's failure leaves the others' results intact. */
  settle(items: readonly I[]): Promise<Array<PromiseSettledResult<O>>>;
}

export interface TransactionQueue {
  transact: Transact;
  /** `committed`: told of each group of this writer's items once its transaction has committed. */
  writer<I, O>(write: GroupWrite<I, O>, committed?: (items: I[], outputs: O[]) => void): GroupedWriter<I, O>;
  /** Whether writes are queued or being written now: a bulk job (retention) that held the writer gives way then. */
  busy(): boolean;
}

/**
 * One call of `run`, `settle` or `transact`, answered once its last item is settled: one promise per call, not one
 * per item. A batch of 500 claims made 500 promises, their resolvers and Promise.all's, all alive until the commit
 * and so old enough to reach V8's old generation (bench/README.md "Memory, second round").
 */
interface Call {
  outputs: unknown[];
  /** Items whose write failed, by index in the call. */
  failures: Map<number, unknown> | undefined;
  left: number;
  done: (call: Call) => void;
}

interface Pending {
  write: GroupWrite<unknown, unknown>;
  committed: ((items: unknown[], outputs: unknown[]) => void) | undefined;
  item: unknown;
  call: Call;
  /** The item's place in its call. */
  index: number;
  /** What the write answered for this item, set inside the transaction and read once it has committed. */
  output?: unknown;
}

function fulfil(p: Pending, output: unknown): void {
  p.call.outputs[p.index] = output;
  if (--p.call.left === 0) p.call.done(p.call);
}

function fail(p: Pending, error: unknown): void {
  (p.call.failures ??= new Map()).set(p.index, error);
  if (--p.call.left === 0) p.call.done(p.call);
}

/** PostgreSQL's deadlock_detected and serialization_failure: the transaction was fine, another one was in the way. */
function isConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

const CONFLICT_ATTEMPTS = 3;

/** `transact`'s items are the pieces of work themselves, run one after the other. */
const runWork: GroupWrite<(trx: Transaction<Database>, tally: StatsTally) => Promise<unknown>, unknown> = async (trx, works, tally) => {
  const out: unknown[] = [];
  for (const work of works) out.push(await work(trx, tally));
  return out;
};

/** `maxItems`: the most items of one writer (or pieces of work) one transaction takes. */
export function createTransactionQueue(db: Kysely<Database>, maxItems = 1_000): TransactionQueue {
  let queue: Pending[] = [];
  let running = false;

  async function writeOnce(group: Pending[]): Promise<unknown[]> {
    // Items of one writer together, writers in the order they were first queued.
    const byWriter = new Map<GroupWrite<unknown, unknown>, Pending[]>();
    for (const p of group) {
      const same = byWriter.get(p.write);
      if (same) same.push(p);
      else byWriter.set(p.write, [p]);
    }
    // Each item's output is kept on its entry until the commit; the entries are this attempt's own (writeGroup).
    await inTransaction(db, (trx) =>
      withStatsTally(trx, async (tally) => {
        for (const [write, items] of byWriter) {
          const out = await write(
            trx,
            items.map((p) => p.item),
            tally,
          );
          for (let i = 0; i < items.length; i++) items[i]!.output = out[i];
        }
      }),
    );
    return group.map((p) => p.output);
  }

  /** After the commit: an observer's throw must not look like a failed write (that would write the group again). */
  function tellCommitted(group: Pending[], outputs: unknown[]): void {
    const byCallback = new Map<NonNullable<Pending['committed']>, { items: unknown[]; outputs: unknown[] }>();
    group.forEach((p, i) => {
      if (!p.committed) return;
      let entry = byCallback.get(p.committed);
      if (!entry) byCallback.set(p.committed, (entry = { items: [], outputs: [] }));
      entry.items.push(p.item);
      entry.outputs.push(outputs[i]);
    });
    for (const [committed, { items, outputs: out }] of byCallback) {
      try {
        committed(items, out);
      } catch {
        // An observer (metrics, a log line, a wake-up) failed; the rows are committed all the same.
      }
    }
  }

  async function writeGroup(group: Pending[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const outputs = await writeOnce(group);
        tellCommitted(group, outputs);
        group.forEach((p, i) => fulfil(p, outputs[i]));
        return;
      } catch (error) {
        if (isConflict(error) && attempt < CONFLICT_ATTEMPTS) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
          continue;
        }
        if (group.length === 1 || isLedgerUnavailable(error)) {
          for (const p of group) fail(p, error);
          return;
        }
        const half = Math.ceil(group.length / 2);
        await writeGroup(group.slice(0, half));
        await writeGroup(group.slice(half));
        return;
      }
    }
  }

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      // Everything queued, up to maxItems of each writer (a transaction's size stays bounded); the rest, in order, next.
      const group: Pending[] = [];
      const rest: Pending[] = [];
      const taken = new Map<GroupWrite<unknown, unknown>, number>();
      for (const p of queue) {
        const n = taken.get(p.write) ?? 0;
        if (n < maxItems) {
          taken.set(p.write, n + 1);
          group.push(p);
        } else rest.push(p);
      }
      queue = rest;
      await writeGroup(group);
    }
    running = false;
  }

  /** Queues a call's items; resolves with the call once every item is written or has failed. */
  function enqueue<I, O>(write: GroupWrite<I, O>, items: readonly I[], committed?: (items: I[], outputs: O[]) => void): Promise<Call> {
    const settled = new Promise<Call>((done) => {
      const call: Call = { outputs: new Array(items.length), failures: undefined, left: items.length, done };
      if (items.length === 0) return done(call);
      items.forEach((item, index) =>
        queue.push({ write: write as GroupWrite<unknown, unknown>, committed: committed as Pending['committed'], item, call, index }),
      );
    });
    // Wait one turn of the event loop so requests arriving together are written together.
    if (!running && queue.length > 0) {
      running = true;
      setImmediate(() => void drain());
    }
    return settled;
  }

  /** Every item's output, or the error of the first item (by its place in the call) that failed. */
  async function run<O>(settled: Promise<Call>): Promise<O[]> {
    const call = await settled;
    if (call.failures) throw call.failures.get(Math.min(...call.failures.keys()));
    return call.outputs as O[];
  }

  async function settle<O>(settled: Promise<Call>): Promise<Array<PromiseSettledResult<O>>> {
    const { outputs, failures } = await settled;
    // Array.from, not map: an item that failed is a hole in `outputs`, which map would skip.
    return Array.from(outputs, (value, i) => (failures?.has(i) ? { status: 'rejected', reason: failures.get(i) } : { status: 'fulfilled', value: value as O }));
  }

  return {
    transact: async <T>(work: (trx: Transaction<Database>, tally: StatsTally) => Promise<T>) => (await run<T>(enqueue(runWork, [work])))[0]!,
    writer: <I, O>(write: GroupWrite<I, O>, committed?: (items: I[], outputs: O[]) => void) => ({
      run: (items: readonly I[]) => run<O>(enqueue(write, items, committed)),
      settle: (items: readonly I[]) => settle<O>(enqueue(write, items, committed)),
    }),
    busy: () => running,
  };
}
