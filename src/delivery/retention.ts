/**
 * The retention pass (docs/retention.md), run by `serve` every retention.interval (leader only) and by the `retention`
 * command: old final rows deleted and personal data blanked, one small transaction per chunk (src/ledger/retention.ts),
 * yielding to the event loop between chunks so requests are served meanwhile.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { inTransaction } from '../ledger/engine/db.js';
import { dialectFlagsOf } from '../ledger/engine/flags.js';
import { DAY_MS, ensureDayPartitions } from '../ledger/engine/partitions.js';
import {
  blankFinalMessages,
  blankInboundMessages,
  deleteFinalMessages,
  deleteFinishedEvents,
  deleteOldCosts,
  deleteOldInbound,
  deleteOldReceipts,
  dropFinishedDay,
  findDaysToDrop,
  type EntryPosition,
  purgeRecipientEntries,
  SCAN_START,
  type BlankChunk,
  type ScanPosition,
} from '../ledger/retention.js';
import type { Database } from '../ledger/schema.js';
import { bucketAt } from '../ledger/time-buckets.js';
import type { RetentionMetrics, RetentionTable } from '../observability/metrics.js';

const startOfDay = (at: number) => Math.floor(at / DAY_MS) * DAY_MS;
/** A UTC day's number as its date, for logs. */
export const dayName = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

export type RetentionSettings = Pick<Config['retention'], 'messages' | 'receipts' | 'events' | 'inbound' | 'costs' | 'blank_personal_data_after'>;

/** The time before which rows of each kind go (or are blanked); absent where the setting is 0 (kept for ever). */
export interface RetentionCutoffs {
  messages?: number;
  receipts?: number;
  events?: number;
  inbound?: number;
  /** cost_daily's days before this go. */
  costs?: number;
  /** budget_spend's periods that began before this go: never a period still running. */
  budgetPeriods?: number;
  blank?: number;
}

/** The longest budget period (a month) and a day: a period that began this long ago has ended. */
const ENDED_PERIOD_MS = 32 * 24 * 60 * 60 * 1000;

export function retentionCutoffs(now: number, settings: RetentionSettings): RetentionCutoffs {
  const before = (ms: number) => (ms > 0 ? now - ms : undefined);
  return {
    messages: before(settings.messages),
    receipts: before(settings.receipts),
    events: before(settings.events),
    inbound: before(settings.inbound),
    costs: before(settings.costs),
    budgetPeriods: settings.costs > 0 ? now - Math.max(settings.costs, ENDED_PERIOD_MS) : undefined,
    blank: before(settings.blank_personal_data_after),
  };
}

/**
 * Where the next pass starts blanking: at the time of the first row this pass had to leave (not final yet; the rows
 * of that same millisecond are read again), else after the last row it looked at. Rows already blanked are not read
 * again pass after pass; a row left unfinished is.
 */
export function nextBlankStart(start: ScanPosition, chunks: ReadonlyArray<Pick<BlankChunk, 'last' | 'firstUnfinished'>>): ScanPosition {
  let position = start;
  for (const chunk of chunks) {
    if (chunk.firstUnfinished) return { at: chunk.firstUnfinished.at, key: SCAN_START.key };
    if (chunk.last) position = chunk.last;
  }
  return position;
}

export interface RetentionResult {
  deleted: Record<RetentionTable, number>;
  blanked: { messages: number; inbound_messages: number };
}

export interface RetentionDeps {
  db: Kysely<Database>;
  /** The ledger's Ledger.spaceCheckpoints: SQLite copies the WAL into the file less often while a pass deletes. */
  spaceCheckpoints?: (walBytes: number) => () => void;
  /**
   * Whether writes of this process wait for the writer now (serve: its transaction queue). Absent (the `retention`
   * command, a process of its own): the pass never pauses.
   */
  writesWaiting?: () => boolean;
  settings: RetentionSettings;
  now: () => number;
  metrics?: RetentionMetrics;
  logger?: Pick<Logger, 'info' | 'error'>;
}

/**
 * How far apart SQLite's checkpoints are while a pass runs: a chunk's deletes touch pages all over every index of
 * random keys (numbers, provider ids, receipt keys), and each checkpoint writes every page touched since the one
 * before. Measured deleting 150,000 messages of a 3-million-message ledger (bench/README.md "Retention on a prefilled ledger"): bytes
 * written per deleted message 116 KB with a checkpoint per commit, 57 KB with one per 256 MB, 31 KB per 1 GB. The
 * WAL file grows to this size meanwhile and is cut back once the pass is over.
 */
export const RETENTION_CHECKPOINT_SPACING = 1024 * 1024 * 1024;

/**
 * The share of the ledger's writer (and, on SQLite, of the event loop its statements run on) a pass takes while sends
 * want it. Deleting a message costs about what sending one does (every b-tree it is in is written), so an unpaced pass
 * next to the bench's sends left them 11% of their rate (bench/README.md "Retention on a prefilled ledger"). A tenth
 * still cost saturated single sends at 5 million messages 22% of their rate (the chunk's own work on the event loop
 * comes on top of the writer's share); a twentieth kept 94–103% while deleting 342–351 messages a second, far above
 * what a million a day asks (bench/README.md "Sends while retention runs").
 */
export const RETENTION_SHARE = 0.05;

/**
 * What the pass waits after a chunk that took `busyMs`: nothing when no write waited for the writer meanwhile (the
 * gateway is quiet: delete at full speed), else long enough that the pass takes `share` of the writer. Pure.
 */
export function pauseAfterChunk(busyMs: number, writesWaited: boolean, share = RETENTION_SHARE): number {
  return !writesWaited || share >= 1 ? 0 : Math.ceil((busyMs * (1 - share)) / share);
}

/** Waits `ms` (pauseAfterChunk), or only for the requests already queued when it is 0. */
export const yieldToRequests = (ms: number) => new Promise<void>((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve)));

/** A retention runner: it remembers how far blanking got, so each pass reads only rows it has not blanked yet. */
export function createRetention(deps: RetentionDeps) {
  const { db, settings, metrics, logger } = deps;
  let messagesFrom = SCAN_START;
  let inboundFrom = SCAN_START;
  let running: Promise<RetentionResult> | undefined;

  async function deleteAll(table: RetentionTable, chunk: () => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      const started = performance.now();
      const n = await chunk();
      total += n;
      if (n > 0) metrics?.retentionRows(table, 'deleted', n);
      if (n === 0) return total;
      await yieldToRequests(pauseAfterChunk(performance.now() - started, deps.writesWaiting?.() ?? false));
    }
  }

  /** PostgreSQL: each day's tables that ended before `before` and hold no message still open, dropped whole. */
  async function dropFinishedDays(before: number): Promise<number> {
    let total = 0;
    for (const day of await findDaysToDrop(db, before)) {
      // Paced as the row deletes are: while sends wait for the ledger, the drop takes a twentieth of it.
      const outcome = await dropFinishedDay(db, day, {
        afterPage: (busyMs) => yieldToRequests(pauseAfterChunk(busyMs, deps.writesWaiting?.() ?? false)),
      });
      if (!outcome.dropped) {
        if (outcome.reason === 'lock not granted') logger?.info({ day: dayName(day) }, "retention: the day's tables were in use; dropped on a later pass");
        continue;
      }
      total += outcome.messages;
      if (outcome.messages > 0) metrics?.retentionRows('messages', 'deleted', outcome.messages);
      logger?.info({ day: dayName(day), messages: outcome.messages }, 'retention: dropped a day');
    }
    return total;
  }

  async function blankAll(table: 'messages' | 'inbound_messages', start: ScanPosition, chunk: (from: ScanPosition) => Promise<BlankChunk>) {
    const seen: BlankChunk[] = [];
    let total = 0;
    for (let from = start; ; ) {
      const started = performance.now();
      const result = await chunk(from);
      if (result.blanked > 0) metrics?.retentionRows(table, 'blanked', result.blanked);
      total += result.blanked;
      if (!result.last) break;
      seen.push(result);
      from = result.last;
      await yieldToRequests(pauseAfterChunk(performance.now() - started, deps.writesWaiting?.() ?? false));
    }
    return { total, next: nextBlankStart(start, seen) };
  }

  /**
   * The numbers' entries (recipient_messages) of the days wholly before `before`, those of messages deleted or blanked:
   * read in key order from the first each pass, so an entry left because its message was not final yet is read again
   * until it goes too.
   */
  async function purgeEntries(before: number): Promise<number> {
    let total = 0;
    for (let from: EntryPosition | undefined; ; ) {
      const started = performance.now();
      const chunk = await inTransaction(db, (trx) => purgeRecipientEntries(trx, bucketAt(before), from));
      total += chunk.purged;
      if (!chunk.last) return total;
      from = chunk.last;
      await yieldToRequests(pauseAfterChunk(performance.now() - started, deps.writesWaiting?.() ?? false));
    }
  }

  async function pass(): Promise<RetentionResult> {
    const release = deps.spaceCheckpoints?.(RETENTION_CHECKPOINT_SPACING);
    try {
      return await deleteAndBlank();
    } finally {
      release?.();
    }
  }

  async function deleteAndBlank(): Promise<RetentionResult> {
    const cut = retentionCutoffs(deps.now(), settings);
    const result: RetentionResult = {
      deleted: { messages: 0, receipts: 0, crm_events: 0, inbound_messages: 0, costs: 0 },
      blanked: { messages: 0, inbound_messages: 0 },
    };
    // PostgreSQL: the coming days' tables first, whatever is kept: a send needs its day's table.
    const partitions = await ensureDayPartitions(db, deps.now());
    if (partitions.gaveUp) logger?.info({ reason: partitions.gaveUp }, 'day partitions: gave up for now');
    if (cut.messages !== undefined) {
      const days = await dropFinishedDays(cut.messages);
      // Then row by row what is left before the cutoff's day (the default partition, and days a message kept): never
      // the rows of a day's table still to be dropped whole. SQLite: the cutoff as it is.
      const before = dialectFlagsOf(db).partitionsByDay ? startOfDay(cut.messages) : cut.messages;
      result.deleted.messages = days + (await deleteAll('messages', () => inTransaction(db, (trx) => deleteFinalMessages(trx, before))));
    }
    if (cut.receipts !== undefined) {
      const before = cut.receipts;
      result.deleted.receipts = await deleteAll('receipts', () => deleteOldReceipts(db, before));
    }
    if (cut.events !== undefined) {
      const before = cut.events;
      result.deleted.crm_events = await deleteAll('crm_events', () => deleteFinishedEvents(db, before));
    }
    if (cut.inbound !== undefined) {
      const before = cut.inbound;
      result.deleted.inbound_messages = await deleteAll('inbound_messages', () => deleteOldInbound(db, before));
    }
    if (cut.costs !== undefined && cut.budgetPeriods !== undefined) {
      const [days, periods] = [cut.costs, cut.budgetPeriods];
      const n = await deleteOldCosts(db, days, periods);
      if (n > 0) metrics?.retentionRows('costs', 'deleted', n);
      result.deleted.costs = n;
    }
    if (cut.blank !== undefined) {
      const before = cut.blank;
      const messages = await blankAll('messages', messagesFrom, (from) => inTransaction(db, (trx) => blankFinalMessages(trx, before, from)));
      messagesFrom = messages.next;
      result.blanked.messages = messages.total;
      const inbound = await blankAll('inbound_messages', inboundFrom, (from) => blankInboundMessages(db, before, from));
      inboundFrom = inbound.next;
      result.blanked.inbound_messages = inbound.total;
    }
    // After both: an entry goes once its message is deleted or blanked, and only with the rest of its day.
    const entriesBefore = Math.max(cut.messages ?? -1, cut.blank ?? -1);
    const entries = entriesBefore < 0 ? 0 : await purgeEntries(entriesBefore);
    const removed = Object.values(result.deleted).reduce((a, b) => a + b, 0) + result.blanked.messages + result.blanked.inbound_messages;
    if (removed + entries > 0) logger?.info({ deleted: result.deleted, blanked: result.blanked, number_entries: entries }, 'retention pass');
    return result;
  }

  return {
    /** One pass; a pass asked for while one runs joins it instead of running twice side by side. */
    runPass(): Promise<RetentionResult> {
      running ??= pass().finally(() => {
        running = undefined;
      });
      return running;
    },
  };
}
