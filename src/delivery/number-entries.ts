/**
 * SQLite: `serve` moves each day's numbers' entries from recipient_messages_recent, where sends write them by the hour,
 * into recipient_messages, by the day, once the day is over (src/ledger/number-messages.ts). Sends wrote each entry of
 * a day straight into the day's part of recipient_messages, about 100 MB by evening at 5 million messages a day, one
 * to a page; into the current hour's part, their pages are few and shared (bench/README.md "The number's entries by
 * the hour"). A reader finds an entry in either table, so the move changes nothing a search sees; it keeps a search's
 * seeks to a day each for every day but the last one or two. Unpaced, a day of 2.9 million entries moved beside
 * saturated batch sends took 11% of their rate (bench/README.md "The move beside sends"): it gives way as retention
 * does, taking a twentieth of the writer while sends wait and all of it when they do not. The day's (player, number)
 * pairs move with them, from message_user_recipients_recent into message_user_recipients, in player order.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { inTransaction } from '../ledger/engine/db.js';
import { dialectFlagsOf } from '../ledger/engine/flags.js';
import { findRecentHours, moveNumberEntriesOfDay, movePlayerNumbersOfDay } from '../ledger/number-messages.js';
import type { Database } from '../ledger/schema.js';
import { bucketAt, dayOfHour } from '../ledger/time-buckets.js';
import { dayName, pauseAfterChunk, yieldToRequests } from './retention.js';

/** Entries moved a transaction: a few milliseconds of the writer, between which sends go on. */
export const MOVE_CHUNK = 2_000;
/** How often the serving process looks for a day to move: a seek per hour that holds entries. */
export const MOVE_CHECK_MS = 60_000;

/** The days whose entries are to move, oldest first: those of `hours` (the hours holding entries) before today. Pure. */
export function daysToMove(hours: readonly number[], now: number): number[] {
  const today = bucketAt(now);
  return [...new Set(hours.map(dayOfHour))].filter((d) => d < today).sort((a, b) => a - b);
}

export interface NumberEntryMoves {
  /** One look, and the moves it calls for; resolves when done. Returns the entries moved. */
  runOnce(): Promise<number>;
  /** No more looks; a move under way ends after its current chunk, and this resolves then. */
  stop(): Promise<void>;
}

export interface NumberEntryMoveDeps {
  db: Kysely<Database>;
  logger: Pick<Logger, 'error' | 'info'>;
  now?: () => number;
  /** Whether sends wait for the ledger's writer: the move then gives way to them (pauseAfterChunk). */
  writesWaiting?: () => boolean;
  /** Waits between chunks (yieldToRequests: a timer, or the requests already queued when 0 ms). */
  pause?: (ms: number) => Promise<void>;
}

/** Looks every MOVE_CHECK_MS. */
export function startNumberEntryMoves({ db, logger, now = Date.now, writesWaiting, pause = yieldToRequests }: NumberEntryMoveDeps): NumberEntryMoves {
  let running: Promise<number> | undefined;
  let stopped = false;
  /** Moves one day of one table, chunk by chunk; returns the rows moved. */
  async function moveDay(day: number, moveChunk: typeof moveNumberEntriesOfDay): Promise<number> {
    let moved = 0;
    for (let after: string | undefined; !stopped; ) {
      const started = performance.now();
      const chunk = await inTransaction(db, (trx) => moveChunk(trx, day, after, MOVE_CHUNK));
      moved += chunk.moved;
      if (chunk.last === undefined) break;
      after = chunk.last;
      // Sends queued meanwhile go first; while more wait, the move rests 19 times as long as the chunk took.
      await pause(pauseAfterChunk(performance.now() - started, writesWaiting?.() ?? false));
    }
    return moved;
  }
  async function moveDays(): Promise<number> {
    let total = 0;
    const hours = [...(await findRecentHours(db, 'recipient_messages_recent')), ...(await findRecentHours(db, 'message_user_recipients_recent'))];
    for (const day of daysToMove(hours, now())) {
      const pairs = await moveDay(day, movePlayerNumbersOfDay);
      // PostgreSQL has no entries to move: they are an index of messages.
      const entries = dialectFlagsOf(db).writesNumberEntries ? await moveDay(day, moveNumberEntriesOfDay) : 0;
      total += entries;
      logger.info({ day: dayName(day), entries, pairs }, "moved a day's number entries and player numbers");
    }
    return total;
  }
  const runOnce = () => {
    running ??= moveDays().finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => {
    runOnce().catch((error: unknown) => logger.error({ err: error }, "moving the numbers' entries failed"));
  }, MOVE_CHECK_MS);
  timer.unref();
  return {
    runOnce,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => {});
    },
  };
}
