/**
 * A circuit breaker per route member (docs/configuration.md "Providers"): after `failures` consecutive failed sends, or when the member's
 * delivery rate collapses over a window of receipts, the member is taken out of its route for `open_for`; then one
 * probe at a time is let through (half-open) and its answer closes or reopens the circuit.
 *
 * Everything here is a pure function of (state, event, time, settings) so the transitions are tested by table
 * (test/provider-wrappers/circuit-breaker.test.ts); src/provider-wrappers/failover-route.ts keeps the states and feeds them events.
 */

export interface BreakerSettings {
  /** Consecutive failed sends that open the circuit. */
  failures: number;
  /** How long an open circuit keeps traffic off before a half-open probe. */
  openForMs: number;
  /** Receipts older than this no longer count towards the delivery rate. */
  windowMs: number;
  /** Final receipts needed in the window before the delivery rate is judged at all. */
  minReceipts: number;
  /** Delivered share of final receipts below which the circuit opens (0 turns the check off). */
  minDeliveryRate: number;
}

export type BreakerState = { kind: 'closed'; failures: number } | { kind: 'open'; since: number; reason: string } | { kind: 'half_open'; probing: boolean };

/**
 * What became of a send through the member. `failed`: it answered nothing useful (refused the connection, 429,
 * 5xx, timed out); `answered`: it took the message or refused it for a reason of the message's own (a bad
 * number), so it is alive; `released`: the send never reached the member for a reason of ours (our own rate
 * limit, shutting down) and says nothing about its health.
 */
export type BreakerEvent = { kind: 'answered' } | { kind: 'failed'; reason: string } | { kind: 'released' } | { kind: 'delivery_collapse'; rate: number };

export const CLOSED: BreakerState = { kind: 'closed', failures: 0 };

/** Whether a send may go to the member now, and the state after asking (an open circuit past open_for half-opens). */
export function admitThrough(state: BreakerState, now: number, settings: BreakerSettings): { admit: boolean; state: BreakerState } {
  switch (state.kind) {
    case 'closed':
      return { admit: true, state };
    case 'open':
      if (now - state.since < settings.openForMs) return { admit: false, state };
      return { admit: true, state: { kind: 'half_open', probing: true } };
    case 'half_open':
      // One probe at a time: the others go to the next member instead of piling onto a member that may be down.
      return state.probing ? { admit: false, state } : { admit: true, state: { kind: 'half_open', probing: true } };
  }
}

/** The state after `event`. */
export function breakerAfter(state: BreakerState, event: BreakerEvent, now: number, settings: BreakerSettings): BreakerState {
  if (state.kind === 'open') return state; // sends admitted before it opened may still finish; they change nothing
  if (state.kind === 'half_open') {
    if (event.kind === 'answered') return CLOSED;
    if (event.kind === 'failed') return { kind: 'open', since: now, reason: `probe failed: ${event.reason}` };
    if (event.kind === 'released') return { kind: 'half_open', probing: false };
    return state; // the probe's own answer decides, not receipts of messages sent before the circuit opened
  }
  switch (event.kind) {
    case 'answered':
      return state.failures === 0 ? state : CLOSED;
    case 'released':
      return state;
    case 'failed': {
      const failures = state.failures + 1;
      if (failures >= settings.failures) return { kind: 'open', since: now, reason: `${failures} consecutive failed sends, the last: ${event.reason}` };
      return { kind: 'closed', failures };
    }
    case 'delivery_collapse':
      return { kind: 'open', since: now, reason: `delivery rate ${(event.rate * 100).toFixed(0)}% over the window` };
  }
}

/** Final receipts per time bucket, oldest first; a bucket is a tenth of the window. */
export interface DeliveryTally {
  buckets: Array<{ start: number; delivered: number; notDelivered: number }>;
}

export const EMPTY_TALLY: DeliveryTally = { buckets: [] };

function bucketWidth(settings: BreakerSettings): number {
  return Math.max(1, Math.floor(settings.windowMs / 10));
}

/** Adds one final receipt (delivered or not) at `now`, dropping buckets that have left the window. */
export function tallyReceipt(tally: DeliveryTally, delivered: boolean, now: number, settings: BreakerSettings): DeliveryTally {
  const width = bucketWidth(settings);
  const start = now - (now % width);
  const kept = tally.buckets.filter((b) => b.start + width > now - settings.windowMs);
  const last = kept.at(-1);
  const bucket = last && last.start === start ? { ...last } : { start, delivered: 0, notDelivered: 0 };
  if (delivered) bucket.delivered++;
  else bucket.notDelivered++;
  return { buckets: last && last.start === start ? [...kept.slice(0, -1), bucket] : [...kept, bucket] };
}

/** The delivered share of final receipts in the window, or null when there are fewer than min_receipts. */
export function deliveryRate(tally: DeliveryTally, now: number, settings: BreakerSettings): number | null {
  const width = bucketWidth(settings);
  let delivered = 0;
  let total = 0;
  for (const b of tally.buckets) {
    if (b.start + width <= now - settings.windowMs) continue;
    delivered += b.delivered;
    total += b.delivered + b.notDelivered;
  }
  if (total === 0 || total < settings.minReceipts) return null;
  return delivered / total;
}

/** True when the window holds enough receipts and too few of them were delivered. */
export function deliveryCollapsed(tally: DeliveryTally, now: number, settings: BreakerSettings): { collapsed: boolean; rate: number | null } {
  const rate = deliveryRate(tally, now, settings);
  return { collapsed: settings.minDeliveryRate > 0 && rate !== null && rate < settings.minDeliveryRate, rate };
}

/** For /metrics: 0 closed, 1 half-open, 2 open. */
export function breakerGaugeValue(kind: BreakerState['kind']): number {
  return kind === 'closed' ? 0 : kind === 'half_open' ? 1 : 2;
}
