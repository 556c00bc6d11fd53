import { describe, expect, it } from 'vitest';
import { PACED_READ_DEFAULTS, pacedRead, readIsDue } from '../../src/observability/paced-read.js';
import { manualClock } from '../helpers/manual-clock.js';

describe('readIsDue', () => {
  const pace = PACED_READ_DEFAULTS;
  it.each([
    ['never read', undefined, 0, true],
    ['a fast read, at once', { startedAt: 0, tookMs: 24 }, 1, true],
    ['300 ms, 29.9 s later', { startedAt: 0, tookMs: 300 }, 29_900, false],
    ['300 ms, 30 s later', { startedAt: 0, tookMs: 300 }, 30_000, true],
    ['25 ms, 2.4 s later', { startedAt: 0, tookMs: 25 }, 2_400, false],
    ['25 ms, 2.5 s later', { startedAt: 0, tookMs: 25 }, 2_500, true],
    ['5 s, 119 s later (capped by the oldest a value may be)', { startedAt: 0, tookMs: 5_000 }, 119_999, false],
    ['5 s, 120 s later', { startedAt: 0, tookMs: 5_000 }, 120_000, true],
    ['a clock stepped back', { startedAt: 10_000, tookMs: 300 }, 5_000, false],
  ])('%s', (_label, last, now, due) => {
    expect(readIsDue(last, now, pace)).toBe(due);
  });

  it('a larger share reads more often', () => {
    expect(readIsDue({ startedAt: 0, tookMs: 300 }, 3_000, { ...pace, share: 0.1 })).toBe(true);
  });
});

describe('pacedRead', () => {
  function countingRead(clock: ReturnType<typeof manualClock>, takesMs: () => number) {
    const read = { runs: 0 };
    const fn = async () => {
      read.runs += 1;
      const value = read.runs;
      await clock.advance(takesMs());
      return value;
    };
    return { read, fn };
  }

  it('answers a slow count from its last run until its share of the time has passed, then reads again', async () => {
    const clock = manualClock(0);
    const { read, fn } = countingRead(clock, () => 400);
    const scrape = pacedRead(fn, { now: clock.now });
    expect(await scrape()).toBe(1);
    await clock.advance(15_000);
    expect(await scrape()).toBe(1);
    await clock.advance(24_599);
    expect(await scrape()).toBe(1);
    await clock.advance(1);
    expect(await scrape()).toBe(2);
    expect(read.runs).toBe(2);
  });

  it('reads a fast count afresh at every call', async () => {
    const clock = manualClock(0);
    const { read, fn } = countingRead(clock, () => 2);
    const scrape = pacedRead(fn, { now: clock.now });
    for (let i = 1; i <= 5; i += 1) expect(await scrape()).toBe(i);
    expect(read.runs).toBe(5);
  });

  it('concurrent callers share one run', async () => {
    let release = () => {};
    let runs = 0;
    const scrape = pacedRead(() => {
      runs += 1;
      return new Promise<number>((resolve) => {
        release = () => resolve(runs);
      });
    });
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
      { now: clock.now },
    );
    expect(await scrape()).toBe(1);
    await clock.advance(40_000);
    await expect(scrape()).rejects.toThrow('connection lost');
    expect(await scrape()).toBe(3);
  });
});
