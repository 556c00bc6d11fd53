/**
 * src/kit/counted-log.ts: events a stranger can cause at will are written as counts, at most one line per key a
 * minute (one warning per forged callback once wrote 163 MB in 90 s: docs/trust.md).
 */
import { describe, expect, it } from 'vitest';
import { type CountedLine, createCountedLog, MAX_REASON_LENGTH, MAX_REASONS } from '../../src/kit/counted-log.js';

const MINUTE = 60_000;

function counted() {
  let time = 1_800_000_000_000;
  const lines: CountedLine[] = [];
  const log = createCountedLog(
    (line) => lines.push(line),
    MINUTE,
    () => time,
  );
  return { log, lines, advance: (ms: number) => void (time += ms), start: time };
}

describe('a counted log', () => {
  it('writes the first event at once, then nothing until a minute has passed, then the events since as one line', () => {
    const { log, lines, advance, start } = counted();
    log.count('dlr twilio', { door: 'dlr', provider: 'twilio' }, 403, 'signature does not match');
    expect(lines).toEqual([
      {
        labels: { door: 'dlr', provider: 'twilio' },
        count: 1,
        byStatus: { 403: 1 },
        reasons: { 'signature does not match': 1 },
        otherReasons: 0,
        since: start,
      },
    ]);
    for (let i = 0; i < 999; i++)
      log.count('dlr twilio', { door: 'dlr', provider: 'twilio' }, i % 2 ? 403 : 429, i % 2 ? 'signature does not match' : 'too many');
    expect(lines).toHaveLength(1);
    advance(MINUTE);
    log.count('dlr twilio', { door: 'dlr', provider: 'twilio' }, 403, 'signature does not match');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual({
      labels: { door: 'dlr', provider: 'twilio' },
      count: 1_000,
      byStatus: { 403: 500, 429: 500 },
      reasons: { 'signature does not match': 500, 'too many': 500 },
      otherReasons: 0,
      since: start,
    });
  });

  it('keeps a line per key: another door or provider is written on its own', () => {
    const { log, lines } = counted();
    log.count('dlr twilio', { door: 'dlr', provider: 'twilio' }, 403, 'a');
    log.count('mo twilio', { door: 'mo', provider: 'twilio' }, 403, 'a');
    log.count('dlr vonage', { door: 'dlr', provider: 'vonage' }, 413, 'b');
    log.count('dlr twilio', { door: 'dlr', provider: 'twilio' }, 403, 'a');
    expect(lines.map((l) => l.labels)).toEqual([
      { door: 'dlr', provider: 'twilio' },
      { door: 'mo', provider: 'twilio' },
      { door: 'dlr', provider: 'vonage' },
    ]);
  });

  it('writes what is pending when flushed', () => {
    const { log, lines } = counted();
    log.count('k', { door: 'dlr', provider: 'twilio' }, 403, 'a');
    log.count('k', { door: 'dlr', provider: 'twilio' }, 403, 'a');
    log.count('k', { door: 'dlr', provider: 'twilio' }, 403, 'a');
    log.flush();
    expect(lines.map((l) => l.count)).toEqual([1, 2]);
    log.flush();
    expect(lines).toHaveLength(2);
  });

  it('keeps a line small whatever the events say: a few reasons, each cut, the rest counted', () => {
    const { log, lines } = counted();
    log.count('k', {}, 403, 'first');
    for (let i = 0; i < 100; i++) log.count('k', {}, 403, `reason ${i} ${'x'.repeat(10_000)}`);
    log.flush();
    const line = lines[1]!;
    expect(Object.keys(line.reasons)).toHaveLength(MAX_REASONS);
    expect(Object.keys(line.reasons).every((r) => r.length <= MAX_REASON_LENGTH)).toBe(true);
    expect(line.otherReasons).toBe(100 - MAX_REASONS);
    expect(line.count).toBe(100);
  });

  it('counts a reason named like what every object inherits as a reason like any other', () => {
    const { log, lines } = counted();
    log.count('k', {}, 403, 'first');
    log.count('k', {}, 403, '__proto__');
    log.count('k', {}, 403, 'constructor');
    log.count('k', {}, 403, 'constructor');
    log.flush();
    expect(lines[1]!.reasons).toEqual(
      Object.fromEntries([
        ['__proto__', 1],
        ['constructor', 2],
      ]),
    );
  });
});
