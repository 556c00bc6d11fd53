/**
 * Throughput control per provider instance (docs/configuration.md "Providers"; providers/types.ts: rate limits wrap every provider
 * once, outside it). Single and batch traffic go through the same wrapper, so they share one budget:
 *
 * - `rate_per_second` is counted in message segments, because providers bill and throttle per segment
 *   (Twilio's MPS queue, error 21611; Vonage's "Throughput Rate Exceeded", status 1: docs/providers.md §1.4, §3.1).
 * - `max_concurrency` bounds the requests in flight to the provider.
 *
 * Work over the limit waits until the request's `deadline` (SendRequest.deadline). When the wait would pass it,
 * the answer is transient (`retryable`, src/sms/outcome.ts), so the CRM retries.
 * Time comes from an injected clock so tests move it by hand.
 */
import { NOT_SENT_SHUTTING_DOWN, type SendRequest, type SendResult, type SmsProvider } from '../../providers/types.js';
import type { Clock } from '../kit/clock.js';
import { concurrencyShare, rateShare } from './shared-limits.js';

export interface ThrottleLimits {
  ratePerSecond?: number;
  maxConcurrency?: number;
}

/**
 * Token bucket that hands out reservations: a caller takes its tokens now, even into debt, and is told how long
 * to wait before using them. Callers are therefore served in arrival order and a message costing more than the
 * burst still gets through. The burst is one second's worth of tokens (at least one).
 */
export class SegmentRateLimiter {
  private available: number;
  private updatedAt: number;

  /**
   * `share` tells how many instances split `perSecond` (src/provider-wrappers/shared-limits.ts); read at each reservation, so a
   * change of the count applies from the next message on.
   */
  constructor(
    private readonly perSecond: number,
    private readonly now: () => number,
    private readonly share: () => number = () => 1,
  ) {
    this.available = Math.max(rateShare(perSecond, share()), 1);
    this.updatedAt = now();
  }

  /** Ms to wait before spending `cost`, or null (nothing taken) when that wait would end after `latestStart`. */
  reserve(cost: number, latestStart: number): number | null {
    const at = this.now();
    const perSecond = rateShare(this.perSecond, this.share());
    const burst = Math.max(perSecond, 1);
    this.available = Math.min(burst, this.available + ((at - this.updatedAt) * perSecond) / 1000);
    this.updatedAt = at;
    const shortfall = cost - this.available;
    const wait = shortfall <= 0 ? 0 : Math.ceil((shortfall * 1000) / perSecond);
    if (at + wait > latestStart) return null;
    this.available -= cost;
    return wait;
  }

  /** Gives back a reservation that was not used (its caller gave up while waiting). */
  cancel(cost: number): void {
    this.available = Math.min(Math.max(rateShare(this.perSecond, this.share()), 1), this.available + cost);
  }
}

/** Counting semaphore with a FIFO queue; a waiter that gives up leaves the queue. */
export class ConcurrencyLimiter {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  /** `share`: how many instances split `max` (src/provider-wrappers/shared-limits.ts), read whenever a slot is asked for or freed. */
  constructor(
    private readonly max: number,
    private readonly share: () => number = () => 1,
  ) {}

  private limit(): number {
    return concurrencyShare(this.max, this.share());
  }

  tryAcquire(): boolean {
    if (this.active >= this.limit()) return false;
    this.active++;
    return true;
  }

  /** Resolves true with a slot held, or false when `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<boolean> {
    if (this.tryAcquire()) return Promise.resolve(true);
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const grant = () => {
        signal.removeEventListener('abort', giveUp);
        resolve(true);
      };
      const giveUp = () => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      };
      this.waiters.push(grant);
      signal.addEventListener('abort', giveUp, { once: true });
    });
  }

  release(): void {
    this.active--;
    // The freed slot goes straight to the next waiter; when the share grew meanwhile, so do the new ones. When it
    // shrank, slots are not handed on until the instance is back under it.
    const limit = this.limit();
    while (this.active < limit && this.waiters.length > 0) {
      this.active++;
      this.waiters.shift()!();
    }
  }
}

/**
 * An AbortSignal that fires at `deadline` on `clock` or when any of `parents` aborts; dispose() stops the timer and
 * unhooks the parents (AbortSignal.any would keep a listener on a long-lived parent for every wait).
 */
function abortAtDeadline(clock: Clock, deadline: number, parents: Array<AbortSignal | undefined>) {
  const timer = new AbortController();
  const fired = new AbortController();
  const fire = () => fired.abort();
  const hooked = parents.filter((p): p is AbortSignal => p !== undefined);
  for (const parent of hooked) {
    if (parent.aborted) fire();
    else parent.addEventListener('abort', fire, { once: true });
  }
  if (Number.isFinite(deadline) && !fired.signal.aborted) {
    clock.sleep(Math.max(0, deadline - clock.now()), timer.signal).then(fire, () => undefined);
  }
  return {
    signal: fired.signal,
    dispose: () => {
      timer.abort();
      for (const parent of hooked) parent.removeEventListener('abort', fire);
    },
  };
}

/**
 * Wraps `provider` so every send first waits for capacity within its deadline. Without limits, returns it as is.
 * `instances`: how many gateway instances share the limits (src/provider-wrappers/shared-limits.ts); one when absent.
 */
export function withThrottle(provider: SmsProvider, limits: ThrottleLimits, clock: Clock, instances?: () => number): SmsProvider {
  const { ratePerSecond, maxConcurrency } = limits;
  if (!ratePerSecond && !maxConcurrency) return provider;
  const rate = ratePerSecond ? new SegmentRateLimiter(ratePerSecond, () => clock.now(), instances) : undefined;
  const slots = maxConcurrency ? new ConcurrencyLimiter(maxConcurrency, instances) : undefined;
  const overLimit = (what: string): SendResult => ({
    ok: false,
    kind: 'transient',
    error: `rate limit: provider ${provider.name} ${what}; not sent, retry later`,
    code: 'rate_limited',
  });

  async function waitForSlot(deadline: number, signals: Array<AbortSignal | undefined>): Promise<boolean> {
    if (!slots) return true;
    if (slots.tryAcquire()) return true;
    if (clock.now() >= deadline) return false;
    const until = abortAtDeadline(clock, deadline, signals);
    try {
      return await slots.acquire(until.signal);
    } finally {
      until.dispose();
    }
  }

  async function send(request: SendRequest, signal: AbortSignal): Promise<SendResult> {
    const deadline = request.waitForCapacity === false ? clock.now() : (request.deadline ?? Number.POSITIVE_INFINITY);
    const waitSignals = [signal, request.waitSignal];
    if (!(await waitForSlot(deadline, waitSignals))) {
      if (request.waitSignal?.aborted) return NOT_SENT_SHUTTING_DOWN;
      return overLimit(`has ${maxConcurrency} requests in flight (max_concurrency) until the deadline`);
    }
    try {
      const cost = Math.max(1, request.segments);
      const wait = rate?.reserve(cost, deadline);
      if (wait === null) return overLimit(`is over ${ratePerSecond} segments per second (rate_per_second) until the deadline`);
      if (wait) {
        const until = abortAtDeadline(clock, Number.POSITIVE_INFINITY, waitSignals);
        try {
          await clock.sleep(wait, until.signal);
        } catch {
          rate!.cancel(cost);
          return request.waitSignal?.aborted ? NOT_SENT_SHUTTING_DOWN : overLimit('capacity wait was cut short by the send timeout');
        } finally {
          until.dispose();
        }
      }
      if (request.waitSignal?.aborted) return NOT_SENT_SHUTTING_DOWN;
      return await provider.send(request, signal);
    } finally {
      slots?.release();
    }
  }

  // Spread, so everything but send stays the plugin's (see withSenderRules).
  return { ...provider, send };
}
