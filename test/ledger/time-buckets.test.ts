/**
 * The days a query by number or provider id names (src/ledger/time-buckets.ts): newest first, from the oldest
 * message's day (or the range's start) to the newest's (or the range's end, or a later page's cursor).
 */
import { describe, expect, it } from 'vitest';
import { BUCKET_MS, bucketAt, recentBuckets, searchBuckets, type BucketBounds } from '../../src/ledger/time-buckets.js';

const DAY = BUCKET_MS;
const D = (day: number, ms = 0) => day * DAY + ms;

describe('searchBuckets', () => {
  it.each<[string, BucketBounds, number[]]>([
    ['no bounds: every day of the ledger, newest first', {}, [13, 12, 11, 10]],
    ['from inside the span', { from: D(12, 5) }, [13, 12]],
    ['from before the oldest message', { from: D(2) }, [13, 12, 11, 10]],
    ['to at a day boundary excludes that day', { to: D(12) }, [11, 10]],
    ['to just after a day starts includes it', { to: D(12, 1) }, [12, 11, 10]],
    ['a later page: up to the cursor', { atMost: D(11, 500) }, [11, 10]],
    ['cursor and range together', { from: D(11), to: D(13, 7), atMost: D(12, 3) }, [12, 11]],
    ['a range after the newest message', { from: D(20) }, []],
    ['a range before the oldest', { to: D(9) }, []],
  ])('%s', (_label, bounds, expected) => {
    expect(searchBuckets({ oldest: D(10, 123), newest: D(13, 45) }, bounds)).toEqual(expected);
  });

  it('one message: its day', () => {
    expect(searchBuckets({ oldest: D(7, 1), newest: D(7, 1) }, {})).toEqual([7]);
  });
});

describe('bucketAt and recentBuckets', () => {
  it.each([
    [0, 0],
    [DAY - 1, 0],
    [DAY, 1],
    [Date.UTC(2026, 10, 29, 23, 59), Math.floor(Date.UTC(2026, 10, 29) / DAY)],
  ])('%d ms falls in day %d', (ms, day) => {
    expect(bucketAt(ms)).toBe(day);
  });

  it('today then yesterday', () => {
    expect(recentBuckets(D(100, 5))).toEqual([100, 99]);
  });
});
