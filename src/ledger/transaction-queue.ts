/**
 * Shares commits between independent writers: work queued while a transaction runs is done together in the next
 * one. The send path's claims, its recorded provider answers and receipt ingestion each batch their own rows;
 * this lets them also share the commit, the most expensive step of a small SQLite write (DESIGN §6).
 * If a shared transaction fails, each piece of work is retried alone, so one bad write fails only itself; a piece
 * that loses a deadlock or serialization conflict (PostgreSQL, several instances) is tried again a few times.
 * Counter increments of all the pieces are written once, last (withDeferredStats).
 */
import type { Kysely, Transaction } from 'kysely';
import { withDeferredStats } from './delivery-stats.js';
import type { Database } from './schema.js';

export type Transact = <T>(work: (trx: Transaction<Database>) => Promise<T>) => Promise<T>;

interface Queued {
  work: (trx: Transaction<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** PostgreSQL's deadlock_detected and serialization_failure: the transaction was fine, another one was in the way. */
function isConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

async function runAlone(db: Kysely<Database>, work: Queued['work']): Promise<unknown> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute((trx) => withDeferredStats(trx, () => work(trx)));
    } catch (error) {
      if (!isConflict(error) || attempt === 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}

export function createTransactionQueue(db: Kysely<Database>): Transact {
  let queue: Queued[] = [];
  let running = false;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        const results = await db.transaction().execute((trx) =>
          withDeferredStats(trx, async () => {
            const out: unknown[] = [];
            for (const q of batch) out.push(await q.work(trx));
            return out;
          }),
        );
        batch.forEach((q, i) => q.resolve(results[i]));
      } catch (error) {
        if (batch.length === 1 && !isConflict(error)) batch[0]!.reject(error);
        else for (const q of batch) await runAlone(db, q.work).then(q.resolve, q.reject);
      }
    }
    running = false;
  }

  return <T>(work: (trx: Transaction<Database>) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!running) {
        running = true;
        setImmediate(() => void drain());
      }
    });
}
