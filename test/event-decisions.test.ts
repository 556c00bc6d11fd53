/** The relay's decisions as pure functions, each a table: what counts as sent, retry timing, bonus keys, body guard. */
import { describe, expect, it } from 'vitest';
import { bonusBodyForCrm, bonusOnceKey } from '../src/events/bonus-event.js';
import { guardPayload } from '../src/events/payload-guard.js';
import { planRetry } from '../src/events/retry.js';
import { isDelivered } from '../src/events/transport.js';
import { decideUserChange } from '../src/events/user-changes.js';
import type { CreditRow } from '../src/ledger/credits.js';

describe('isDelivered', () => {
  it.each([
    [200, true, 'the CRM took it'],
    [201, false, 'the docs ask for 200; anything else is retried'],
    [204, false, 'no 200, retried'],
    [400, false, 'retried too: the rule is "until 200"'],
    [503, false, 'CRM busy'],
  ])('%i → %s (%s)', (status, expected) => {
    expect(isDelivered(status)).toBe(expected);
  });
});

describe('planRetry', () => {
  const policy = { initialMs: 1_000, maxMs: 300_000, maxAttempts: undefined };
  it.each([
    ['the first failure waits between half and all of retry_initial_ms', 0, 0, policy, { dead: false, nextAttemptAt: 500 }],
    ['the first failure with the most jitter', 0, 1, policy, { dead: false, nextAttemptAt: 1_000 }],
    ['the fourth failure waits 8x', 3, 1, policy, { dead: false, nextAttemptAt: 8_000 }],
    ['the 30th failure is capped at retry_max_ms and, without max_attempts, never dead', 29, 1, policy, { dead: false, nextAttemptAt: 300_000 }],
    ['with max_attempts 3 the third failure dead-letters', 2, 0, { ...policy, maxAttempts: 3 }, { dead: true, nextAttemptAt: 2_000 }],
    ['with max_attempts 3 the second failure retries', 1, 0, { ...policy, maxAttempts: 3 }, { dead: false, nextAttemptAt: 1_000 }],
  ])('%s', (_label, attemptsBefore, random, p, expected) => {
    expect(planRetry(attemptsBefore, 0, p, () => random)).toEqual(expected);
  });
});

describe('bonusOnceKey', () => {
  it.each([
    ['Created', false],
    ['Completed', false],
    ['Lost', false],
    ['Ongoing', true],
  ])('%s: sent every time = %s', (status, repeatable) => {
    expect(bonusOnceKey('ub-1', status) === null).toBe(repeatable);
  });
  it('differs per user_bonus_id and status', () => {
    expect(bonusOnceKey('ub-1', 'Created')).not.toBe(bonusOnceKey('ub-2', 'Created'));
    expect(bonusOnceKey('ub-1', 'Created')).not.toBe(bonusOnceKey('ub-1', 'Completed'));
  });
});

describe('bonusBodyForCrm', () => {
  const credit = { crm_id: 'g-1', crm_action_id: '5', crm_action_group_id: null, crm_action_communication_profile_id: null, crm_activity_id: '7', crm_trigger_hash: 'abc', crm_player_origin_id: 'x9' } as CreditRow;
  const bare = { ...credit, crm_id: null, crm_action_id: null, crm_activity_id: null, crm_trigger_hash: null, crm_player_origin_id: null } as CreditRow;
  it.each([
    ['adds the credit’s references, integers as numbers, and drops credit_id', { a: 1, credit_id: '3' }, credit, { a: 1, crm_references: { id: 'g-1', action_id: 5, activity_id: 7, trigger_hash: 'abc', player_origin_id: 'x9' } }],
    ['keeps references the platform sent itself', { a: 1, crm_references: { id: 'mine' } }, credit, { a: 1, crm_references: { id: 'mine' } }],
    ['adds nothing without a credit', { a: 1 }, undefined, { a: 1 }],
    ['adds nothing for a credit the CRM did not trigger (no X-Crm-* headers)', { a: 1 }, bare, { a: 1 }],
  ])('%s', (_label, received, c, expected) => {
    expect(bonusBodyForCrm(received, c)).toEqual(expected);
  });
});

describe('guardPayload', () => {
  const nested = (depth: number) => JSON.parse(`${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`);
  it.each([
    ['a flat object', { user_id: 'u' }, 16, true],
    ['an object exactly max_depth deep', nested(16), 16, true],
    ['an object one level deeper', nested(17), 16, false],
    ['arrays count as levels', { a: [[[[]]]] }, 4, false],
    ['__proto__ as an own key (as JSON.parse makes it)', JSON.parse('{"__proto__":{"x":1}}'), 16, false],
    ['constructor deep inside', { a: [{ b: { constructor: 1 } }] }, 16, false],
    ['a string value named __proto__ is fine', { a: '__proto__' }, 16, true],
    ['an array body', [], 16, false],
    ['null', null, 16, false],
  ])('%s → ok = %s', (_label, value, maxDepth, ok) => {
    expect(guardPayload(value, maxDepth).ok).toBe(ok);
  });
  it('walks 100,000 levels without recursion', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(guardPayload({ deep }, 16)).toEqual({ ok: false, error: expect.stringContaining('relay.max_depth') });
  });
});

describe('decideUserChange', () => {
  const row = (record: Record<string, unknown>, notes: Partial<{ block_note: string; exclusion_note: string }> = {}) => ({
    record_json: JSON.stringify({ user_id: 'u', city: 'Valletta', is_blocked: false, is_excluded: false, ...record }),
    is_blocked: record.is_blocked ? 1 : 0,
    is_excluded: record.is_excluded ? 1 : 0,
    block_note: notes.block_note ?? '',
    exclusion_note: notes.exclusion_note ?? '',
  });
  const sms = (opted_in: number) => [{ user_id: 'u', type: 'sms', opted_in }];
  it.each([
    ['a new user is one Registration', undefined, row({}), [], undefined, { writeUser: true, writeConsents: false, events: ['registration'] }],
    ['the same row again is nothing', row({}), row({}), [], undefined, { writeUser: false, writeConsents: false, events: [] }],
    ['another city is a User Update', row({}), row({ city: 'Gozo' }), [], undefined, { writeUser: true, writeConsents: false, events: ['user_update'] }],
    ['blocked alone is User Blocks, not User Update', row({}), row({ is_blocked: true }), [], undefined, { writeUser: true, writeConsents: false, events: ['user_blocks'] }],
    ['a new block note is User Blocks', row({}), row({}, { block_note: 'fraud' }), [], undefined, { writeUser: true, writeConsents: false, events: ['user_blocks'] }],
    ['other consents are User Consents', row({}), row({}), sms(1), sms(0), { writeUser: false, writeConsents: true, events: ['user_consents'] }],
    ['the same consents are nothing', row({}), row({}), sms(1), sms(1), { writeUser: false, writeConsents: false, events: [] }],
    ['consents not given leave the stored ones alone', row({}), row({}), sms(1), undefined, { writeUser: false, writeConsents: false, events: [] }],
  ] as const)('%s', (_label, before, after, consentsBefore, consentsAfter, expected) => {
    expect(decideUserChange(before, after, [...consentsBefore], consentsAfter && [...consentsAfter])).toEqual(expected);
  });
});
