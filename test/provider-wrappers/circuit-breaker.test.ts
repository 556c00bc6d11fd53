/** The breaker's transitions and the delivery-rate window as tables (src/provider-wrappers/circuit-breaker.ts). */
import { describe, expect, it } from 'vitest';
import {
  admitThrough,
  breakerAfter,
  CLOSED,
  deliveryCollapsed,
  EMPTY_TALLY,
  tallyReceipt,
  type BreakerEvent,
  type BreakerSettings,
  type BreakerState,
} from '../../src/provider-wrappers/circuit-breaker.js';

const settings: BreakerSettings = { failures: 3, openForMs: 30_000, windowMs: 600_000, minReceipts: 10, minDeliveryRate: 0.2 };
const T = 1_000_000;
const open = (since: number): BreakerState => ({ kind: 'open', since, reason: 'x' });
const failed: BreakerEvent = { kind: 'failed', reason: 'ECONNREFUSED' };

describe('admitThrough', () => {
  it.each<[string, BreakerState, number, boolean, BreakerState['kind']]>([
    ['a closed circuit admits every send', CLOSED, T, true, 'closed'],
    ['an open circuit refuses within open_for', open(T), T + 29_999, false, 'open'],
    ['an open circuit past open_for admits one probe and half-opens', open(T), T + 30_000, true, 'half_open'],
    ['a half-open circuit with a probe out refuses the rest', { kind: 'half_open', probing: true }, T, false, 'half_open'],
    ['a half-open circuit whose probe was released admits the next', { kind: 'half_open', probing: false }, T, true, 'half_open'],
  ])('%s', (_label, state, now, admit, next) => {
    const result = admitThrough(state, now, settings);
    expect(result.admit).toBe(admit);
    expect(result.state.kind).toBe(next);
  });
});

describe('breakerAfter', () => {
  it.each<[string, BreakerState, BreakerEvent, BreakerState]>([
    ['a failure while closed counts', { kind: 'closed', failures: 1 }, failed, { kind: 'closed', failures: 2 }],
    [
      'the Nth consecutive failure opens it',
      { kind: 'closed', failures: 2 },
      failed,
      { kind: 'open', since: T, reason: '3 consecutive failed sends, the last: ECONNREFUSED' },
    ],
    ['an answer resets the count', { kind: 'closed', failures: 2 }, { kind: 'answered' }, CLOSED],
    ['a send released by our own limits changes nothing', { kind: 'closed', failures: 2 }, { kind: 'released' }, { kind: 'closed', failures: 2 }],
    [
      'a delivery-rate collapse opens it at once',
      CLOSED,
      { kind: 'delivery_collapse', rate: 0.05 },
      { kind: 'open', since: T, reason: 'delivery rate 5% over the window' },
    ],
    ['a probe answered closes it', { kind: 'half_open', probing: true }, { kind: 'answered' }, CLOSED],
    ['a probe failed reopens it from now', { kind: 'half_open', probing: true }, failed, { kind: 'open', since: T, reason: 'probe failed: ECONNREFUSED' }],
    ['a probe released frees the probe slot', { kind: 'half_open', probing: true }, { kind: 'released' }, { kind: 'half_open', probing: false }],
    ['late answers of sends admitted before it opened leave it open', open(T - 5), { kind: 'answered' }, open(T - 5)],
    ['late failures leave the open time alone', open(T - 5), failed, open(T - 5)],
  ])('%s', (_label, state, event, expected) => {
    expect(breakerAfter(state, event, T, settings)).toEqual(expected);
  });
});

describe('delivery-rate window', () => {
  const feed = (delivered: number, notDelivered: number, at = T) => {
    let tally = EMPTY_TALLY;
    for (let i = 0; i < delivered; i++) tally = tallyReceipt(tally, true, at, settings);
    for (let i = 0; i < notDelivered; i++) tally = tallyReceipt(tally, false, at, settings);
    return tally;
  };
  it.each<[string, number, number, number, boolean]>([
    ['too few receipts are not judged', 0, 9, T, false],
    ['enough receipts, mostly failed: collapsed', 1, 9, T, true],
    ['exactly at the threshold is not a collapse', 2, 8, T, false],
    ['healthy delivery', 9, 1, T, false],
    ['receipts older than the window no longer count', 1, 9, T + 700_000, false],
  ])('%s', (_label, delivered, notDelivered, at, collapsed) => {
    expect(deliveryCollapsed(feed(delivered, notDelivered), at, settings).collapsed).toBe(collapsed);
  });

  it('min_delivery_rate 0 turns the check off', () => {
    expect(deliveryCollapsed(feed(0, 50), T, { ...settings, minDeliveryRate: 0 }).collapsed).toBe(false);
  });
});
