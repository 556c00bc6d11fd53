import { describe, expect, it } from 'vitest';
import { PACED_READ_DEFAULTS, pacedRead, readIsDue } from '../../src/observability/paced-read.js';
import { manualClock } from '../helpers/manual-clock.js';

describe('readIsDue', () => {
  const pace = PACED_READ_DEFAULTS;
  it.each([
    ['never read', undefined, 0, true],
    ['a small count, at once, however long it took (a busy machine)', { startedAt: 0, tookMs: 900, rows: 9_999 }, 1, true],
    ['300 ms, 29.9 s later', { startedAt: 0, tookMs: 300, rows: 1_000_000 }, 29_900, false],
    ['300 ms, 30 s later', { startedAt: 0, tookMs: 300, rows: 1_000_000 }, 30_000, true],
    ['10,000 rows in 2 ms: 199 ms later', { startedAt: 0, tookMs: 2, rows: 10_000 }, 199, false],
    ['10,000 rows in 2 ms: 200 ms later', { startedAt: 0, tookMs: 2, rows: 10_000 }, 200, true],
    ['5 s, 119 s later (capped by the oldest a value may be)', { startedAt: 0, tookMs: 5_000, rows: 1_000_000 }, 119_999, false],
    ['5 s, 120 s later', { startedAt: 0, tookMs: 5_000, rows: 1_000_000 }, 120_000, true],
    ['a clock stepped back', { startedAt: 10_000, tookMs: 300, rows: 1_000_000 }, 5_000, false],
  ])('%s', (_label, last, now, due) => {
    expect(readIsDue(last, now, pace)).toBe(due);
  });

  it('a larger share reads more often', () => {
    expect(readIsDue({ startedAt: 0, tookMs: 300, rows: 1_000_000 }, 3_000, { ...pace, share: 0.1 })).toBe(true);
  });
});

describe('pacedRead', () => {
  /** A count whose value is its run's number, counting `rows` rows in `takesMs`. */
  function countingRead(clock: ReturnType<typeof manualClock>, takesMs: number, rows: number) {
    const read = { runs: 0 };
    const fn = async () => {
      read.runs += 1;
      const value = read.runs;
      await clock.advance(takesMs);
      return value;
    };
    return { read, fn, rowsOf: () => rows };
  }

  it('answers a slow count from its last run until its share of the time has passed, then reads again', async () => {
    const clock = manualClock(0);
    const { read, fn, rowsOf } = countingRead(clock, 400, 1_000_000);
    const scrape = pacedRead(fn, rowsOf, { now: clock.now });
    expect(await scrape()).toBe(1);
    await clock.advance(15_000);
    expect(await scrape()).toBe(1);
    await clock.advance(24_599);
    expect(await scrape()).toBe(1);
    await clock.advance(1);
    expect(await scrape()).toBe(2);
    expect(read.runs).toBe(2);
  });

  it('reads a small count afresh at every call, however long it took', async () => {
    const clock = manualClock(0);
    const { read, fn, rowsOf } = countingRead(clock, 400, 12);
    const scrape = pacedRead(fn, rowsOf, { now: clock.now });
    for (let i = 1; i <= 5; i += 1) expect(await scrape()).toBe(i);
    expect(read.runs).toBe(5);
  });

  it('concurrent callers share one run', async () => {
    let release = () => {};
    let runs = 0;
    const scrape = pacedRead(
      () => {
        runs += 1;
        return new Promise<number>((resolve) => {
          release = () => resolve(runs);
        });
      },
      () => 1_000_000,
    );
    const both = Promise.all([scrape(), scrape()]);
    release();
    expect(await both).toEqual([1, 1]);
    expect(runs).toBe(1);
  });

  it('a failed run is not remembered: the next call reads again', async () => {
    const clock = manualClock(0);
    let runs = 0;
    const scrape = pacedRead(
      async () => {
        runs += 1;
        await clock.advance(400);
        if (runs === 2) throw new Error('connection lost');
        return runs;
      },
      () => 1_000_000,
      { now: clock.now },
    );
    expect(await scrape()).toBe(1);
    await clock.advance(40_000);
    await expect(scrape()).rejects.toThrow('connection lost');
    expect(await scrape()).toBe(3);
  });
});
