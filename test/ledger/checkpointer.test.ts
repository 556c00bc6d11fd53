/**
 * Background WAL checkpoints (src/ledger/engine/checkpointer.ts): with `serve`'s ledger options, commits never checkpoint,
 * and a thread copies committed pages into the database file soon after.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { startCheckpointer } from '../../src/ledger/engine/checkpointer.js';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';

let dir: string;
let ledger: Ledger | undefined;
afterEach(async () => {
  await ledger?.close();
  ledger = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function openWithRows(backgroundCheckpoints: boolean, spaceOut?: (ledger: Ledger) => void) {
  dir = mkdtempSync(join(tmpdir(), 'checkpointer-'));
  const file = join(dir, 'ledger.db');
  ledger = openLedger(
    { url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 },
    backgroundCheckpoints ? { backgroundCheckpoints: { logger: console } } : {},
  );
  await migrateToLatest(ledger.db);
  spaceOut?.(ledger);
  // Settle what the migrations wrote, then measure what the inserts below add.
  await sql`pragma wal_checkpoint(truncate)`.execute(ledger.db);
  const before = statSync(file).size;
  // Background: ~1,500 pages, past the 4 MiB at which the thread starts (commits never checkpoint, so only the
  // thread moves them). Without: ~300 pages, under SQLite's own 1,000-page checkpoint.
  await ledger.db.transaction().execute(async (trx) => {
    for (let i = 0; i < (backgroundCheckpoints ? 10_000 : 2_000); i++) {
      await sql`insert into delivery_stats (period, bucket_start, provider, outcome, n) values ('minute', ${i}, ${'p'.repeat(300)}, 'submitted', 1)`.execute(
        trx,
      );
    }
  });
  const pragma = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(ledger.db);
  return { file, before, autocheckpoint: pragma.rows[0]!.wal_autocheckpoint };
}

/**
 * A bare SQLite file in WAL mode with the thread started on it (a 1 MiB bound unless given, 20 ms intervals), and a
 * commit of 25 rows of 200 bytes (~2 pages).
 */
function openWithThread(pragmas: string[], limit = 1024 * 1024) {
  dir = mkdtempSync(join(tmpdir(), 'checkpointer-'));
  const file = join(dir, 'ledger.db');
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  for (const pragma of pragmas) sqlite.pragma(pragma);
  sqlite.exec('create table t (id integer primary key, v text)');
  const checkpointer = startCheckpointer(sqlite, file, console, 20, limit);
  const insert = sqlite.prepare('insert into t (v) values (?)');
  const commit = sqlite.transaction(() => {
    for (let i = 0; i < 25; i++) insert.run('x'.repeat(200));
  });
  const close = async () => {
    await checkpointer.close();
    sqlite.close();
  };
  return { file, sqlite, limit, commit, close };
}

/** The WAL header's checkpoint sequence (bytes 12–15), one more each time a writer starts the WAL again; 0 while empty. */
function walStarts(file: string): number {
  const header = Buffer.alloc(16);
  const fd = openSync(`${file}-wal`, 'r');
  try {
    return readSync(fd, header, 0, 16, 0) === 16 ? header.readUInt32BE(12) : 0;
  } finally {
    closeSync(fd);
  }
}

async function grows(file: string, before: number, withinMs: number): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < withinMs; await new Promise((r) => setTimeout(r, 50))) {
    if (statSync(file).size > before) return true;
  }
  return false;
}

describe('background WAL checkpoints', () => {
  it('turns off checkpoints in commits and copies committed pages into the database file from a thread', async () => {
    const { file, before, autocheckpoint } = await openWithRows(true);
    expect(autocheckpoint).toBe(0);
    expect(await grows(file, before, 5_000)).toBe(true);
  });

  it('leaves SQLite’s own checkpoints alone without the option (short commands such as flush)', async () => {
    const { file, before, autocheckpoint } = await openWithRows(false);
    expect(autocheckpoint).toBe(1_000);
    // Under 1,000 pages nothing checkpoints yet: the rows are still only in the WAL.
    expect(await grows(file, before, 600)).toBe(false);
  });

  it('while spaced out (a retention pass), leaves the WAL alone until it reaches the spacing, and checkpoints once released', async () => {
    let release = () => {};
    const { file, before } = await openWithRows(true, (l) => {
      release = l.spaceCheckpoints(1024 * 1024 * 1024);
    });
    // The thread starts within a second of the WAL passing 4 MiB and would copy the rows at once (the test above).
    expect(await grows(file, before, 2_500)).toBe(false);
    release();
    expect(await grows(file, before, 5_000)).toBe(true);
  });

  it('spaced out without the thread (a command), commits checkpoint past the spacing instead of 1,000 pages, and at 1,000 again once released', async () => {
    let release = () => {};
    await openWithRows(false, (l) => {
      release = l.spaceCheckpoints(64 * 1024 * 1024);
    });
    const pages = async () => (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(ledger!.db)).rows[0]!.wal_autocheckpoint;
    expect(await pages()).toBe(16_384);
    release();
    expect(await pages()).toBe(1_000);
  });

  it('has the WAL restarted under writes that never pause, so the writer writes over its file, not past its end', async () => {
    const { file, sqlite, limit, commit, close } = openWithThread(['synchronous = NORMAL']);
    // One commit a turn of the event loop, as serve's transaction queue runs them (`pauseMs` 0): no passive checkpoint
    // catches up with them, so SQLite alone would never restart the WAL.
    const write = async (pauseMs: number, until: (commits: number, ms: number) => boolean) => {
      let commits = 0;
      for (const started = Date.now(); !until(commits, Date.now() - started); commits++) {
        commit();
        await new Promise((r) => (pauseMs > 0 ? setTimeout(r, pauseMs) : setImmediate(r)));
      }
      return commits;
    };
    try {
      // First the thread: it starts within a second of the WAL passing 4 MiB (later on a loaded machine), and only a
      // checkpoint of its own lets a writer start the WAL again. Commits 5 ms apart until then.
      const first = walStarts(file);
      const before = await write(5, (_, ms) => walStarts(file) > first || ms > 20_000);
      expect(walStarts(file)).toBeGreaterThan(first);
      // Then commits back to back. A RESTART needs the write lock between two of them, which they leave it only now
      // and then (here it once missed for 80 MB of frames), so this writes until the WAL has started again three
      // times, or 256 MiB have been written past the file's end (at least 2 pages a commit) as without restarts.
      const from = walStarts(file);
      const commits = await write(0, (n) => (n % 16 === 0 && walStarts(file) - from >= 3) || n * 8_192 > 256 * limit);
      expect(walStarts(file) - from).toBeGreaterThanOrEqual(3);
      // Every row is there, read through the restarted WAL and the file.
      expect(sqlite.prepare('select count(*) as n from t').get()).toEqual({ n: (before + commits) * 25 });
    } finally {
      await close();
    }
  });

  it('tries no restart while a reader holds the checkpoint back, so the writer is not held at each interval', async () => {
    // As serve's writer: never waits inside SQLite; a commit that finds the write lock taken is tried again.
    const { file, limit, commit, close } = openWithThread(['busy_timeout = 0']);
    // Episodes of the write lock held by the thread: a commit refused after one that went through.
    let held = 0;
    const write = async (ms: number) => {
      let refused = false;
      for (let n = 0, started = Date.now(); Date.now() - started < ms; n++) {
        try {
          commit();
          refused = false;
        } catch (error) {
          if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
          if (!refused) held++;
          refused = true;
        }
        if (n % 20 === 0) await new Promise((r) => setImmediate(r));
      }
    };
    const reader = new Database(file, { readonly: true });
    try {
      await write(1_200);
      expect(statSync(`${file}-wal`).size).toBeGreaterThan(limit);
      // A long read: its snapshot keeps the WAL's frames from being written over.
      reader.exec('begin');
      reader.prepare('select count(*) from t').get();
      held = 0;
      await write(1_500);
      // An interval is 20 ms: tried at each, the restart would have held the writer dozens of times; it is tried once,
      // before the passive checkpoint has shown the reader holding it back.
      expect(held).toBeLessThanOrEqual(3);
      reader.exec('commit');
    } finally {
      reader.close();
      await close();
    }
  });

  it('restarts the WAL once a limit of frames has been written since it started, not at every interval once its file has reached the limit', async () => {
    // As serve's writer: never waits inside SQLite, and leaves the lock between two commits (a turn of the event loop).
    const { file, sqlite, limit, commit, close } = openWithThread(['busy_timeout = 0'], 32 * 1024 * 1024);
    const walSize = () => statSync(`${file}-wal`).size;
    const frameBytes = (sqlite.pragma('page_size', { simple: true }) as number) + 24;
    // Episodes of the write lock held by the thread (a commit refused after one that went through), and commits made.
    const write = async (until: (commits: number, ms: number) => boolean) => {
      let held = 0;
      let commits = 0;
      let refused = false;
      for (const started = Date.now(); !until(commits, Date.now() - started); await new Promise((r) => setImmediate(r))) {
        try {
          commit();
          commits++;
          refused = false;
        } catch (error) {
          if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
          if (!refused) held++;
          refused = true;
        }
      }
      return { held, commits };
    };
    try {
      // The frames a commit adds, read off the WAL while nothing checkpoints it (the thread starts past 4 MiB).
      commit();
      const start = walSize();
      await write((n) => n === 100);
      const framesPerCommit = (walSize() - start) / frameBytes / 100;
      expect(framesPerCommit).toBeGreaterThanOrEqual(2);
      // Until the WAL has been started again, its file left at the limit or more, where it stays from then on.
      const first = walStarts(file);
      await write((_, ms) => walStarts(file) > first || ms > 30_000);
      expect(walStarts(file)).toBeGreaterThan(first);
      expect(walSize()).toBeGreaterThanOrEqual(limit);
      // Restarted by the file's size, the WAL would be at every 20 ms interval the thread gets the lock in, each
      // holding the writer: dozens of times in 1.5 s. By the frames written, once per limit of them.
      const { held, commits } = await write((_, ms) => ms > 1_500);
      expect(held).toBeLessThanOrEqual(Math.ceil((commits * framesPerCommit * frameBytes) / limit) + 2);
    } finally {
      await close();
    }
  });

  it('cuts the WAL file back to nothing once writes stop (not at the next write)', async () => {
    const { file } = await openWithRows(true);
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(4_000_000);
    let size = -1;
    for (const started = Date.now(); Date.now() - started < 10_000; await new Promise((r) => setTimeout(r, 50))) {
      size = statSync(`${file}-wal`).size;
      if (size === 0) break;
    }
    expect(size).toBe(0);
  });
});
