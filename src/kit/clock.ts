/**
 * The app-wide clock: the time now and a cancellable wait. Injected wherever code waits (provider throttles, tests
 * that move time by hand: test/helpers/manual-clock.ts), so no test sleeps a fixed time.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';

export interface Clock {
  now(): number;
  /** Resolves after `ms`, rejects when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export function systemClock(now: () => number = Date.now): Clock {
  return { now, sleep: (ms, signal) => sleepFor(ms, undefined, { signal }) };
}
