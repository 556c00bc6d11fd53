/** A clock that only moves when the test says so (docs/design.md §7: time is passed in). Implements the Clock of src/kit/clock.ts. */
import type { Clock } from '../../src/kit/clock.js';

interface Timer {
  at: number;
  resolve: () => void;
}

export interface ManualClock extends Clock {
  /** Moves time forward, firing due timers in order and letting their continuations run. */
  advance(ms: number): Promise<void>;
  /** Timers not yet fired. */
  pending(): number;
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export function manualClock(start = 1_800_000_000_000): ManualClock {
  let time = start;
  let timers: Timer[] = [];
  return {
    now: () => time,
    sleep(ms, signal) {
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const timer: Timer = { at: time + Math.max(0, ms), resolve };
        timers.push(timer);
        signal?.addEventListener(
          'abort',
          () => {
            timers = timers.filter((t) => t !== timer);
            reject(signal.reason);
          },
          { once: true },
        );
      });
    },
    async advance(ms) {
      const target = time + ms;
      await settle();
      for (;;) {
        const due = timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        time = due.at;
        due.resolve();
        await settle();
      }
      time = target;
      await settle();
    },
    pending: () => timers.length,
  };
}
