/**
 * Throughput control per provider instance (README "Providers"; providers/types.ts: rate limits wrap every provider
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
import { NOT_SENT_SHUTTING_DOWN, type IncomingReceipt, type LookupRequest, type SendRequest, type SendResult, type SmsProvider } from '../../providers/types.js';
import type { Clock } from '../clock.js';


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
  private readonly burst: number;
  private available: number;
  private updatedAt: number;

  constructor(private readonly perSecond: number, private readonly now: () => number) {
    this.burst = Math.max(perSecond, 1);
    this.available = this.burst;
    this.updatedAt = now();
  }

  /** Ms to wait before spending `cost`, or null (nothing taken) when that wait would end after `latestStart`. */
  reserve(cost: number, latestStart: number): number | null {
    const at = this.now();
    this.available = Math.min(this.burst, this.available + ((at - this.updatedAt) * this.perSecond) / 1000);
    this.updatedAt = at;
    const shortfall = cost - this.available;
    const wait = shortfall <= 0 ? 0 : Math.ceil((shortfall * 1000) / this.perSecond);
    if (at + wait > latestStart) return null;
    this.available -= cost;
    return wait;
  }

  /** Gives back a reservation that was not used (its caller gave up while waiting). */
  cancel(cost: number): void {
    this.available = Math.min(this.burst, this.available + cost);
  }
}

/** Counting semaphore with a FIFO queue; a waiter that gives up leaves the queue. */
export class ConcurrencyLimiter {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly max: number) {}

  tryAcquire(): boolean {
    if (this.active >= this.max) return false;
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
    const next = this.waiters.shift();
    if (next) next(); // the slot passes straight to the next waiter
    else this.active--;
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

/** Wraps `provider` so every send first waits for capacity within its deadline. Without limits, returns it as is. */
export function withThrottle(provider: SmsProvider, limits: ThrottleLimits, clock: Clock): SmsProvider {
  const { ratePerSecond, maxConcurrency } = limits;
  if (!ratePerSecond && !maxConcurrency) return provider;
  const rate = ratePerSecond ? new SegmentRateLimiter(ratePerSecond, () => clock.now()) : undefined;
  const slots = maxConcurrency ? new ConcurrencyLimiter(maxConcurrency) : undefined;
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
    const deadline = request.waitForCapacity === false ? clock.now() : request.deadline ?? Number.POSITIVE_INFINITY;
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

  return {
    name: provider.name,
    type: provider.type,
    send,
    parseReceipt: (receipt) => provider.parseReceipt(receipt),
    ...(provider.parseInbound ? { parseInbound: (request: IncomingReceipt) => provider.parseInbound!(request) } : {}),
    ...(provider.inboundAnswer ? { inboundAnswer: provider.inboundAnswer } : {}),
    // A lookup is not a send: it takes none of the send capacity.
    ...(provider.lookup ? { lookup: (request: LookupRequest, signal: AbortSignal) => provider.lookup!(request, signal) } : {}),
    ...(provider.close ? { close: () => provider.close!() } : {}),
  };
}
