/**
 * WAL checkpoints on a thread of their own. SQLite's automatic checkpoint runs inside whichever commit pushes the
 * WAL past 1,000 pages: that commit copies the pages into the database file and fsyncs both, on the event loop
 * (better-sqlite3 is synchronous). Measured with groups of 25 sends: claim and record writes cost 78 µs a message
 * with automatic checkpoints, 47 µs without. `serve` turns them off and lets this thread checkpoint in PASSIVE
 * mode, which never blocks the writer, and truncates the WAL once a burst is over (67k messages left 467 MB until
 * the next write). During a burst it has the WAL restarted each time a limit of frames has been written since it last
 * started, so the writer writes over its file instead of past its end; `journal_size_limit` (twice the limit, room
 * for the frames written while a restart waits for the lock) cuts the file back as a writer restarts it.
 */
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';
import type { Logger } from 'pino';

/** The worker's code, evaluated (a file would need its own build step for the TypeScript tests). */
const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
// A frame is a page and its 24-byte header.
const frameBytes = db.pragma('page_size', { simple: true }) + 24;
let lastFrames = -1;
let lastCheckpointed = -1;
// While a bulk change runs (spaceOut), checkpoint only once the WAL file has grown to this many bytes. Nothing resets
// the WAL meanwhile (only a checkpoint lets a writer start it again), so its file's size is what was written since.
let spacedTo = workerData.spacedTo;
const walBytes = () => {
  try {
    return statSync(workerData.file + '-wal').size;
  } catch {
    return 0;
  }
};
const checkpoint = () => {
  try {
    if (spacedTo !== null && walBytes() < spacedTo) return;
    const [done] = db.pragma('wal_checkpoint(PASSIVE)');
    // Under writes that never pause, no passive checkpoint catches up with the writer, so SQLite never starts the WAL
    // again from its beginning: every frame lands past the file's end, where the file system allocates and zeroes
    // first (a sixth of the gateway's CPU in a batch run: bench/README.md "Sends to a prefilled ledger's own players;
    // the WAL written over, not past its end").
    // Once restartAt bytes of frames have been written since the WAL last started, and not while a bulk change
    // spaces checkpoints out, a RESTART checkpoint takes the write lock for the frames written since the passive one,
    // and the next commit writes over the WAL's old frames. The frames, not the file's size: a writer that restarts
    // the WAL leaves the file at its size up to journal_size_limit, so a restart by the size alone was tried at every
    // interval after the first, each holding the writer for its copy and two syncs (bench/README.md "The WAL
    // restarted at every interval"). It waits 20 ms at most for the writer (then tried next interval) and, holding the write
    // lock, for readers to leave the WAL. A long scan's snapshot holds the passive checkpoint back (it copied no frame
    // more than the last one, though frames wait): then no RESTART is tried, since it would hold the writer and fail.
    const heldBack = done.checkpointed < done.log && done.checkpointed === lastCheckpointed;
    lastCheckpointed = done.checkpointed;
    if (spacedTo === null && !heldBack && done.log * frameBytes >= workerData.restartAt) {
      db.pragma('busy_timeout = 20');
      try {
        db.pragma('wal_checkpoint(RESTART)');
      } finally {
        db.pragma('busy_timeout = 5000');
      }
    }
    // A burst is over when a whole interval added no frame and every frame is in the database file: cut the WAL
    // file to zero now, not at the next write. TRUNCATE holds the write lock while it waits for readers, so it
    // waits 50 ms at most (a writer arriving meanwhile waits that long once) and is tried again next interval.
    if (done.log > 0 && done.log === lastFrames && done.checkpointed === done.log) {
      db.pragma('busy_timeout = 50');
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        db.pragma('busy_timeout = 5000');
      }
    }
    lastFrames = done.log;
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (typeof message === 'object') {
    spacedTo = message.spacedTo;
    return;
  }
  if (message !== 'close') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

/** The bytes of frames written since the WAL last started at which the thread has it restarted. */
const WAL_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Commits stop checkpointing; a writer that restarts the WAL cuts its file back to twice `walLimitBytes`. Cut back to
 * the limit itself, the file would be extended again after every restart by the frames written while the restart
 * waited (up to 60 MB at 64 MiB in bench/README.md "The WAL restarted at every interval").
 */
function leaveCheckpointsToAnotherThread(sqlite: BetterSqlite3.Database, walLimitBytes: number): void {
  sqlite.pragma('wal_autocheckpoint = 0');
  sqlite.pragma(`journal_size_limit = ${2 * walLimitBytes}`);
}

export interface Checkpointer {
  /** Checkpoints once more and stops the thread. */
  close(): Promise<void>;
  /**
   * Until the returned function is called, checkpoints only once the WAL has grown to `walBytes`. A checkpoint copies
   * every page committed since the one before; a bulk delete (retention) touches pages all over the file, hundreds
   * per commit, so a checkpoint per commit wrote each of them again and again (bench/README.md "Retention on a prefilled ledger").
   */
  spaceOut(walBytes: number): () => void;
}

/** SQLite's own default: it checkpoints once the WAL holds 1,000 pages (4 MiB). */
const START_AT_WAL_BYTES = 1_000 * 4_096;

/**
 * Turns commit checkpoints off on `sqlite`; the thread that does them instead starts once the WAL reaches 4 MiB
 * (checked every second), so a gateway that writes little never pays the thread's ~9 MB of memory.
 */
export function startCheckpointer(
  sqlite: BetterSqlite3.Database,
  file: string,
  logger: Pick<Logger, 'warn'>,
  intervalMs = 200,
  walLimitBytes = WAL_LIMIT_BYTES,
): Checkpointer {
  leaveCheckpointsToAnotherThread(sqlite, walLimitBytes);
  let thread: Thread | undefined;
  let closed = false;
  // One entry per bulk change under way; the smallest spacing holds while several overlap. None: every interval.
  const spacings = new Set<{ walBytes: number }>();
  const spacedTo = () => (spacings.size === 0 ? null : Math.min(...[...spacings].map((s) => s.walBytes)));
  const watch = setInterval(() => {
    stat(`${file}-wal`).then(
      (wal) => {
        if (closed || thread || wal.size < START_AT_WAL_BYTES) return;
        clearInterval(watch);
        thread = startThread(sqlite, file, logger, { intervalMs, spacedTo: spacedTo(), restartAt: walLimitBytes });
      },
      () => {}, // no WAL file yet
    );
  }, 1_000);
  watch.unref();
  return {
    async close() {
      closed = true;
      clearInterval(watch);
      await thread?.close();
    },
    spaceOut(walBytes) {
      const token = { walBytes };
      spacings.add(token);
      thread?.space(spacedTo());
      return () => {
        if (!spacings.delete(token)) return;
        thread?.space(spacedTo());
      };
    },
  };
}

interface Thread {
  close(): Promise<void>;
  space(spacedTo: number | null): void;
}

function startThread(
  sqlite: BetterSqlite3.Database,
  file: string,
  logger: Pick<Logger, 'warn'>,
  settings: { intervalMs: number; spacedTo: number | null; restartAt: number },
): Thread {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  // A small heap: the thread holds one connection and a timer.
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { driver, file, ...settings },
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
  });
  worker.unref();
  let failed = false;
  // If the thread cannot checkpoint, the WAL would grow without end: give the job back to the writer.
  const fallBack = (reason: string) => {
    if (failed) return;
    failed = true;
    logger.warn({ reason }, 'background WAL checkpoints stopped; SQLite checkpoints on commit again');
    if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
  };
  worker.on('message', (message: { error?: string }) => message.error && logger.warn({ reason: message.error }, 'WAL checkpoint failed'));
  worker.on('error', (error) => fallBack(error.message));
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', (code) => {
      fallBack(`the checkpoint thread exited (code ${code})`);
      resolve();
    }),
  );
  return {
    space(to) {
      if (!failed) worker.postMessage({ spacedTo: to });
    },
    async close() {
      failed = true;
      worker.postMessage('close');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
      await worker.terminate();
    },
  };
}
