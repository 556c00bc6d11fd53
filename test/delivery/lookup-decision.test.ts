/** decideLostSend (src/delivery/lookups.ts): what the sweep concludes from a provider's answer about a lost send. */
import { describe, expect, it } from 'vitest';
import type { LookupResult } from '../../providers/types.js';
import { decideLostSend, type LostSendVerdict } from '../../src/delivery/lookups.js';

const HOUR = 3_600_000;
const found: LookupResult = { answer: 'found', providerMessageIds: ['SM1'], providerStatus: 'sent', status: 'intermediate' };

describe('decideLostSend', () => {
  it.each<[string, LookupResult | 'cannot-tell', number, LostSendVerdict]>([
    ['the provider has it: found', found, 10 * 60_000, 'found'],
    ['the provider never got it: absent', { answer: 'absent' }, 10 * 60_000, 'absent'],
    ['no lookup in its API: unknown at once', 'cannot-tell', 10 * 60_000, 'unknown'],
    ['its API failed, early: ask again at the next sweep', { answer: 'unknown', reason: 'HTTP 503' }, 10 * 60_000, 'ask-later'],
    ['its API still fails after status_query_after: unknown for good', { answer: 'unknown', reason: 'HTTP 503' }, HOUR, 'unknown'],
  ])('%s', (_label, answer, age, verdict) => {
    expect(decideLostSend(answer, age, HOUR)).toBe(verdict);
  });
});
