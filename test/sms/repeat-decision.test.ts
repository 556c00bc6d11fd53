/** decideRepeat (src/sms/idempotency.ts): what a repeated activity.id gets, by the state of its message. */
import { describe, expect, it } from 'vitest';
import { decideRepeat, type RepeatDecision } from '../../src/sms/idempotency.js';

const timings = { dispatchLeaseMs: 300_000, ambiguousRetryAfterMs: 60_000 };
const now = 1_000_000_000;
type Lookup = 'pending' | 'found' | 'absent' | 'unknown' | null;
const row = (state: 'dispatching' | 'submitted' | 'rejected' | 'retryable' | 'uncertain', ageMs = 0, error: string | null = null, lookup: Lookup = null) => ({
  sms_id: 'S',
  state,
  error,
  dispatched_at: now - ageMs,
  updated_at: now - ageMs,
  lookup_result: lookup,
});

describe('decideRepeat', () => {
  it.each<[string, ReturnType<typeof row>, RepeatDecision]>([
    ['sent: answers its sms_id', row('submitted'), { action: 'answer-sent', smsId: 'S' }],
    ['refused for good: the same failure', row('rejected', 0, 'bad number'), { action: 'answer-failed', smsId: 'S', error: 'bad number' }],
    ['refused without a recorded error', row('rejected'), { action: 'answer-failed', smsId: 'S', error: 'rejected by the provider' }],
    ['failed without sending: send again', row('retryable'), { action: 'resend', smsId: 'S' }],
    ['may have been sent, a second ago: wait for a receipt', row('uncertain', 1_000), { action: 'busy', smsId: 'S', reason: 'awaiting-receipt' }],
    ['may have been sent, no receipt in the whole wait: send again', row('uncertain', 60_000), { action: 'resend', smsId: 'S' }],
    [
      'its sender was lost and its provider is still to be asked: ask it now, however long ago',
      row('uncertain', 3_600_000, null, 'pending'),
      { action: 'resolve-lost-send', smsId: 'S' },
    ],
    [
      'its sender was lost and its provider is still to be asked, a second ago: ask it now',
      row('uncertain', 1_000, null, 'pending'),
      { action: 'resolve-lost-send', smsId: 'S' },
    ],
    [
      'its provider could not tell: sent again after the wait, as any uncertain send',
      row('uncertain', 60_000, null, 'unknown'),
      { action: 'resend', smsId: 'S' },
    ],
    ['its provider could not tell, a second ago: wait', row('uncertain', 1_000, null, 'unknown'), { action: 'busy', smsId: 'S', reason: 'awaiting-receipt' }],
    ['being sent right now', row('dispatching', 1_000), { action: 'busy', smsId: 'S', reason: 'in-flight' }],
    ["being sent, exactly at the lease: still its sender's", row('dispatching', 300_000), { action: 'busy', smsId: 'S', reason: 'in-flight' }],
    [
      'its sender died (past the lease): its provider is asked first, never sent at once',
      row('dispatching', 300_001),
      { action: 'resolve-lost-send', smsId: 'S' },
    ],
  ])('%s', (_label, message, expected) => {
    expect(decideRepeat(message, now, timings)).toEqual(expected);
  });
});
