/** Progress lines of long command-line work (src/observability/progress.ts): the text, and how often it goes out. */
import { describe, expect, it } from 'vitest';
import { createProgressLine, describeProgress, LOG_INTERVAL_MS, shortDuration } from '../../src/observability/progress.js';

describe('progress text', () => {
  it.each([
    [0, '0 s'],
    [59_400, '59 s'],
    [245_000, '4 min 05 s'],
    [3_720_000, '1 h 02 min'],
  ])('%s ms reads %s', (ms, text) => {
    expect(shortDuration(ms)).toBe(text);
  });

  it.each([
    [{ done: 50_000, startedAt: 0, now: 10_000 }, '50,000 rows, 5,000 rows/s, 10 s elapsed'],
    [{ done: 50_000, fraction: 0.25, startedAt: 0, now: 10_000 }, '50,000 rows, 5,000 rows/s, 10 s elapsed, 25 % (ETA 30 s)'],
    [{ done: 7, fraction: 1, startedAt: 0, now: 2_000 }, '7 rows, 4 rows/s, 2 s elapsed, 100 % (ETA 0 s)'],
    [{ done: 0, fraction: 0, startedAt: 0, now: 0 }, '0 rows, 0 rows/s, 0 s elapsed'],
  ])('%j reads %s', (state, text) => {
    expect(describeProgress(state)).toBe(text);
  });
});

describe('progress output', () => {
  const output = (isTTY: boolean) => {
    const written: string[] = [];
    return { written, stream: { isTTY, write: (text: string) => written.push(text) } };
  };

  it('writes a full line every few seconds when not on a terminal', () => {
    let clock = 0;
    const out = output(false);
    const line = createProgressLine(out.stream, 'import users', () => clock, 'lines');
    for (clock = 0; clock <= 12_000; clock += 100) line.update(clock * 10);
    clock = 12_000;
    line.finish(120_000, 1);
    expect(out.written).toHaveLength(Math.floor(12_000 / LOG_INTERVAL_MS) + 1);
    expect(out.written[0]).toBe('import users: 50,000 lines, 10,000 lines/s, 5 s elapsed\n');
    expect(out.written.at(-1)).toBe('import users: 120,000 lines, 10,000 lines/s, 12 s elapsed, 100 % (ETA 0 s)\n');
  });

  it('rewrites one line on a terminal and ends it before other output', () => {
    let clock = 0;
    const out = output(true);
    const line = createProgressLine(out.stream, 'import users', () => clock, 'lines');
    clock = 300;
    line.update(10, 0.5);
    line.breakLine();
    line.breakLine();
    expect(out.written).toEqual(['\r\x1b[2Kimport users: 10 lines, 33 lines/s, 0 s elapsed, 50 % (ETA 0 s)', '\n']);
  });
});
