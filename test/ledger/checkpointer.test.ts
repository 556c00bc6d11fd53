/**
 * Background WAL checkpoints (src/ledger/engine/checkpointer.ts): with `serve`'s ledger options, commits never checkpoint,
 * and a thread copies committed pages into the database file soon after.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
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
 * A bare SQLite file in WAL mode with the thread started on it (a 1 MiB bound, 20 ms intervals), and a commit of 25
 * rows of 200 bytes (~2 pages).
 */
function openWithThread(pragmas: string[]) {
  dir = mkdtempSync(join(tmpdir(), 'checkpointer-'));
  const file = join(dir, 'ledger.db');
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  for (const pragma of pragmas) sqlite.pragma(pragma);
  sqlite.exec('create table t (id integer primary key, v text)');
  const limit = 1024 * 1024;
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
    const walSize = () => statSync(`${file}-wal`).size;
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
    // The WAL file's size every `every` commits: `cuts` counts the times it was cut back, as a writer starting the WAL
    // again cuts it to the limit (journal_size_limit).
    const sizes = (every: number) => {
      const seen = { cuts: 0, last: walSize() };
      const sample = (n: number) => {
        if (n % every !== 0) return;
        const size = walSize();
        if (size < seen.last) seen.cuts++;
        seen.last = size;
      };
      return { seen, sample };
    };
    try {
      // First the thread: it starts within a second of the WAL passing 4 MiB (later on a loaded machine), and only a
      // checkpoint of its own lets the file be cut back. Commits 5 ms apart until then, so the file stays small.
      const up = sizes(1);
      const before = await write(5, (n, ms) => {
        up.sample(n);
        return up.seen.cuts > 0 || ms > 20_000;
      });
      expect(up.seen.cuts).toBeGreaterThan(0);
      // Then commits back to back. A RESTART needs the write lock between two of them, which they leave it only now
      // and then (here it once missed for 80 MB of frames), so this writes until the file has been cut back three
      // times, or has had 256 MiB written past its end (at least 2 pages a commit) as it would without restarts.
      const next = sizes(16);
      const commits = await write(0, (n) => {
        next.sample(n);
        return next.seen.cuts >= 3 || n * 8_192 > 256 * limit;
      });
      expect(next.seen.cuts).toBeGreaterThanOrEqual(3);
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
