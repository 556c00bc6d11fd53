import { describe, expect, it } from 'vitest';
import type { SendRequest, SendResult, SmsProvider } from '../../providers/types.js';
import { ConcurrencyLimiter, SegmentRateLimiter, withThrottle } from '../../src/provider-wrappers/throttle.js';
import { manualClock } from '../helpers/manual-clock.js';

function request(overrides: Partial<SendRequest> = {}): SendRequest {
  return { smsId: 's', to: '+447700900123', from: undefined, text: 'hi', encoding: 'gsm7', segments: 1, callbackUrl: 'http://x/dlr/p', ...overrides };
}

/** A provider whose sends stay open until the test finishes them. */
function heldProvider() {
  const open: Array<(r: SendResult) => void> = [];
  const started: SendRequest[] = [];
  const provider: SmsProvider = {
    name: 'held',
    type: 'test',
    send: (req) => new Promise((resolve) => (started.push(req), open.push(resolve))),
    parseReceipt: () => ({ ok: true, events: [] }),
  };
  return { provider, started, finishAll: () => open.splice(0).forEach((f) => f({ ok: true, providerMessageIds: ['id'] })) };
}

const never = new AbortController().signal;

describe('SegmentRateLimiter', () => {
  it('lets a burst of one second through, then spaces reservations at the rate', () => {
    const clock = manualClock();
    const limiter = new SegmentRateLimiter(2, clock.now);
    expect([limiter.reserve(1, Infinity), limiter.reserve(1, Infinity), limiter.reserve(1, Infinity), limiter.reserve(1, Infinity)]).toEqual([0, 0, 500, 1000]);
  });

  it('counts segments, and a message costing more than the burst waits for its share', () => {
    const clock = manualClock();
    const limiter = new SegmentRateLimiter(4, clock.now);
    expect(limiter.reserve(10, Infinity)).toBe(1500); // 4 available, 6 short at 4/s
  });

  it('refuses (and takes nothing) when the wait would pass the deadline', () => {
    const clock = manualClock();
    const limiter = new SegmentRateLimiter(1, clock.now);
    expect(limiter.reserve(1, clock.now())).toBe(0);
    expect(limiter.reserve(1, clock.now() + 999)).toBeNull();
    expect(limiter.reserve(1, clock.now() + 1000)).toBe(1000);
  });

  it('refills with time and never above the burst', async () => {
    const clock = manualClock();
    const limiter = new SegmentRateLimiter(2, clock.now);
    limiter.reserve(2, Infinity);
    await clock.advance(60_000);
    expect([limiter.reserve(1, Infinity), limiter.reserve(1, Infinity), limiter.reserve(1, Infinity)]).toEqual([0, 0, 500]);
  });
});

describe('ConcurrencyLimiter', () => {
  it('hands a released slot to the oldest waiter, and a waiter that gives up leaves the queue', async () => {
    const limiter = new ConcurrencyLimiter(1);
    expect(limiter.tryAcquire()).toBe(true);
    const quitter = new AbortController();
    const first = limiter.acquire(quitter.signal);
    const second = limiter.acquire(never);
    quitter.abort();
    expect(await first).toBe(false);
    limiter.release();
    expect(await second).toBe(true);
    expect(limiter.tryAcquire()).toBe(false);
  });
});

describe('withThrottle', () => {
  it('returns the provider itself when no limit is configured', () => {
    const { provider } = heldProvider();
    expect(withThrottle(provider, {}, manualClock())).toBe(provider);
  });

  it('over rate_per_second, a send waits on the clock, then goes out', async () => {
    const clock = manualClock();
    const { provider, started, finishAll } = heldProvider();
    const throttled = withThrottle(provider, { ratePerSecond: 1 }, clock);
    const first = throttled.send(request({ deadline: clock.now() + 5_000 }), never);
    const second = throttled.send(request({ deadline: clock.now() + 5_000 }), never);
    await clock.advance(0);
    expect(started).toHaveLength(1);
    await clock.advance(999);
    expect(started).toHaveLength(1);
    await clock.advance(1);
    expect(started).toHaveLength(2);
    finishAll();
    expect((await first).ok && (await second).ok).toBe(true);
  });

  it('answers transient "rate limit" at once when the wait would pass the deadline', async () => {
    const clock = manualClock();
    const { provider, started } = heldProvider();
    const throttled = withThrottle(provider, { ratePerSecond: 2 }, clock);
    void throttled.send(request({ segments: 2, deadline: clock.now() + 2_000 }), never);
    const over = await throttled.send(request({ segments: 3, deadline: clock.now() + 1_000 }), never);
    expect(over).toMatchObject({ ok: false, kind: 'transient', code: 'rate_limited', error: expect.stringMatching(/^rate limit: .*rate_per_second/) });
    expect(started).toHaveLength(1);
  });

  it('shares one budget between callers (single and batch traffic alike)', async () => {
    const clock = manualClock();
    const { provider, started } = heldProvider();
    const throttled = withThrottle(provider, { ratePerSecond: 3 }, clock);
    const deadline = clock.now() + 10_000;
    for (let i = 0; i < 6; i++) void throttled.send(request({ deadline }), never);
    await clock.advance(0);
    expect(started).toHaveLength(3);
    await clock.advance(1_000);
    expect(started).toHaveLength(6);
  });

  it('over max_concurrency, a send waits for a slot until its deadline, then answers transient', async () => {
    const clock = manualClock();
    const { provider, started, finishAll } = heldProvider();
    const throttled = withThrottle(provider, { maxConcurrency: 2 }, clock);
    for (let i = 0; i < 2; i++) void throttled.send(request({ deadline: clock.now() + 10_000 }), never);
    const waiting = throttled.send(request({ deadline: clock.now() + 10_000 }), never);
    const doomed = throttled.send(request({ deadline: clock.now() + 1_000 }), never);
    await clock.advance(1_000);
    expect(await doomed).toMatchObject({ ok: false, kind: 'transient', error: expect.stringMatching(/max_concurrency/) });
    expect(started).toHaveLength(2);
    finishAll();
    await clock.advance(0);
    expect(started).toHaveLength(3);
    finishAll();
    expect((await waiting).ok).toBe(true);
    expect(clock.pending()).toBe(0); // the slot wait's deadline timer was cleared
  });

  it('a send whose signal aborts during the rate wait gives its tokens back', async () => {
    const clock = manualClock();
    const { provider, started } = heldProvider();
    const throttled = withThrottle(provider, { ratePerSecond: 1 }, clock);
    void throttled.send(request(), never);
    const abort = new AbortController();
    const cut = throttled.send(request(), abort.signal);
    await clock.advance(0);
    abort.abort();
    expect(await cut).toMatchObject({ ok: false, kind: 'transient' });
    await clock.advance(1_000);
    void throttled.send(request({ deadline: clock.now() }), never); // the returned token lets this one go at once
    await clock.advance(0);
    expect(started).toHaveLength(2);
  });

  it('a stop (waitSignal) ends rate and slot waits with shutting_down, never a send under way, and frees what they held', async () => {
    const clock = manualClock();
    const { provider, started, finishAll } = heldProvider();
    const throttled = withThrottle(provider, { ratePerSecond: 1, maxConcurrency: 2 }, clock);
    const stop = new AbortController();
    const deadline = clock.now() + 10_000;
    const underWay = throttled.send(request({ deadline, waitSignal: stop.signal }), never);
    const waitingForRate = throttled.send(request({ deadline, waitSignal: stop.signal }), never);
    const waitingForSlot = throttled.send(request({ deadline, waitSignal: stop.signal }), never);
    await clock.advance(0);
    expect(started).toHaveLength(1);
    stop.abort();
    const shuttingDown = { ok: false, kind: 'transient', code: 'shutting_down', error: 'not sent: the gateway is shutting down; retry' };
    expect(await waitingForRate).toEqual(shuttingDown);
    expect(await waitingForSlot).toEqual(shuttingDown);
    finishAll();
    expect((await underWay).ok).toBe(true);
    expect(started).toHaveLength(1);
    // The cancelled reservation gave its token back: the next send waits one second, not two.
    const next = throttled.send(request({ deadline: clock.now() + 1_000 }), never);
    await clock.advance(1_000);
    expect(started).toHaveLength(2);
    finishAll();
    expect((await next).ok).toBe(true);
    expect(clock.pending()).toBe(0);
  });
});
