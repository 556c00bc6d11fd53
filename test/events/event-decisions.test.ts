/** The relay's decisions as pure functions, each a table: what counts as sent, retry timing, bonus keys, body guard. */
import { describe, expect, it } from 'vitest';
import { bonusBodyForCrm, bonusOnceKey, decideBonusRepeat } from '../../src/events/bonus-event.js';
import { parseExact } from '../../src/http/exact-json.js';
import { guardPayload } from '../../src/events/payload-guard.js';
import { planRetry } from '../../src/outbox/decisions.js';
import { decideFailure, isDelivered, parseRetryAfter } from '../../src/events/transport.js';
import { resolveCatalogue, routeClashes } from '../../src/crm/event-catalogue.js';
import { createDestinations, destinationOf } from '../../src/events/destination.js';
import type { ClaimedEvent } from '../../src/ledger/events.js';
import { decideUserChange } from '../../src/events/user-changes.js';
import type { CreditRow } from '../../src/ledger/credits.js';

describe('isDelivered', () => {
  it.each([
    [200, true, 'the CRM took it'],
    [201, true, 'any 2xx: the CRM took the request'],
    [202, true, 'a proxy that queues the request took it'],
    [204, true, 'no body, still taken'],
    [299, true, 'the end of the 2xx range'],
    [301, false, 'a redirect is not taken'],
    [400, false, 'refused'],
    [503, false, 'CRM busy'],
  ])('%i → %s (%s)', (status, expected) => {
    expect(isDelivered(status)).toBe(expected);
  });
});

describe('decideFailure', () => {
  it.each([
    ['no answer (connection refused, timeout)', null, false, undefined, 'retry'],
    ['408 request timeout', 408, false, undefined, 'retry'],
    ['425 too early', 425, false, undefined, 'retry'],
    ['429 too many requests', 429, false, undefined, 'retry'],
    ['500', 500, false, undefined, 'retry'],
    ['503', 503, false, undefined, 'retry'],
    ['a 3xx (misconfigured url): retried, bounded by max_attempts', 302, false, undefined, 'retry'],
    ['400: the CRM will never take this payload', 400, false, undefined, 'dead'],
    ['404: no such path', 404, false, undefined, 'dead'],
    ['422', 422, false, undefined, 'dead'],
    ['400 with retry_client_errors: retried like the docs ask', 400, true, undefined, 'retry'],
    ['a destination not configured is dead even with retry_client_errors', null, true, true, 'dead'],
  ] as const)('%s → %s', (_label, status, retryClientErrors, permanent, expected) => {
    expect(decideFailure({ status, permanent }, retryClientErrors)).toBe(expected);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  it.each([
    ['absent', undefined, undefined],
    ['seconds', '120', 120_000],
    ['zero', '0', 0],
    ['an HTTP date 30 s ahead', 'Wed, 25 Nov 2026 12:00:30 GMT', 30_000],
    ['an HTTP date in the past', 'Wed, 25 Nov 2026 11:00:00 GMT', 0],
    ['negative seconds (not valid)', '-5', undefined],
    ['garbage', 'soon', undefined],
  ])('%s → %s', (_label, header, expected) => {
    expect(parseRetryAfter(header, now)).toBe(expected);
  });
});

describe('the catalogue with overrides', () => {
  it('keeps defaults, applies an override of path, method and type, and knows which queue type names are guesses', () => {
    const routes = resolveCatalogue({ payment: { path: '/v3/payments', method: 'PUT', type: 'PAYMENT_V3' }, device_link: { type: 'DEVICE_LINKED' } });
    const by = new Map(routes.map((r) => [r.kind, r]));
    expect(by.get('casino')).toMatchObject({ method: 'POST', path: '/v1/integration/casino', queueType: 'CASINO', queueTypeKnown: true });
    expect(by.get('payment')).toMatchObject({ storedKind: 'PAYMENT', method: 'PUT', path: '/v3/payments', queueType: 'PAYMENT_V3' });
    expect(by.get('device_link')).toMatchObject({ storedKind: 'USER_DEVICE_LINK', queueType: 'DEVICE_LINKED', queueTypeKnown: true });
    expect(by.get('device_unlink')).toMatchObject({ queueTypeKnown: false });
    expect(routeClashes(routes)).toEqual([]);
  });

  it('names two kinds put on one method and path', () => {
    expect(routeClashes(resolveCatalogue({ casino: { path: '/v1/integration/payment' } }))).toEqual([
      'casino and payment both use POST /v1/integration/payment',
    ]);
  });

  const stored = (type: string): ClaimedEvent => ({
    id: 1,
    event_id: 'e',
    type,
    method: 'POST',
    path: '/old',
    user_id: 'u',
    payload_json: '{}',
    attempts: 0,
    created_at: 0,
    traceparent: null,
  });
  it.each([
    ['http: a device link goes to its path', 'http', {}, 'USER_DEVICE_LINK', { ok: true, path: '/v1/integration/user/device/link' }],
    ['rabbitmq: a device link without a configured type name is refused', 'rabbitmq', {}, 'USER_DEVICE_LINK', { ok: false }],
    ['kafka: a configured type name is used', 'kafka', { device_link: { type: 'LINK' } }, 'USER_DEVICE_LINK', { ok: true, type: 'LINK' }],
    ['rabbitmq: a push conversion is a webhook, no type name needed', 'rabbitmq', {}, 'PUSH_CONVERSION', { ok: true, channel: 'push_webhook' }],
    ['a stored path is replaced by the configured one (replay after a fix)', 'http', { payment: { path: '/fixed' } }, 'PAYMENT', { ok: true, path: '/fixed' }],
    ['a type the catalogue does not know keeps its stored destination', 'http', {}, 'OLD_TYPE', { ok: true, path: '/old' }],
  ] as const)('%s', (_label, transport, events, type, expected) => {
    const destined = destinationOf(stored(type), createDestinations({ transport, events }));
    expect(destined.ok).toBe(expected.ok);
    if (destined.ok) expect(destined.event).toMatchObject(Object.fromEntries(Object.entries(expected).filter(([k]) => k !== 'ok')));
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

  it.each([
    ['a Retry-After longer than the backoff wins', 0, 120_000, 120_000],
    ['a Retry-After shorter than the backoff loses', 3, 1_000, 8_000],
    ['a Retry-After of days is read as one hour', 0, 5 * 86_400_000, 3_600_000],
  ])('%s', (_label, attemptsBefore, retryAfterMs, expected) => {
    expect(planRetry(attemptsBefore, 0, policy, () => 1, retryAfterMs).nextAttemptAt).toBe(expected);
  });
});

describe('bonusOnceKey', () => {
  it.each([
    ['Created', false],
    ['Completed', false],
    ['Lost', false],
    ['Ongoing', true],
  ])('%s: sent every time = %s', (status, repeatable) => {
    expect(bonusOnceKey('u-1', 'ub-1', status) === null).toBe(repeatable);
  });
  it.each([
    ['another player with the same user_bonus_id and status', ['u-2', 'ub-1', 'Created']],
    ['the same player, another user_bonus_id', ['u-1', 'ub-2', 'Created']],
    ['the same player and user_bonus_id, another status', ['u-1', 'ub-1', 'Completed']],
    ['values that would run together if joined without a separator', ['u-1u', 'b-1', 'Created']],
    ['a separator character inside a value', ['u-1","ub-1', '', 'Created']],
  ] as const)('differs for %s', (_label, [user, userBonusId, status]) => {
    expect(bonusOnceKey(user, userBonusId, status)).not.toBe(bonusOnceKey('u-1', 'ub-1', 'Created'));
  });
});

describe('decideBonusRepeat', () => {
  const key = { userId: 'u-1', userBonusId: 'ub-1', status: 'Created' };
  it.each([
    ['the same body again is a retry: the first event_id, nothing sent', 'f-1', 'f-1', { action: 'replay', eventId: 'e-1' }],
    [
      'another body is refused naming the first event, the player, the bonus and the status',
      'f-1',
      'f-2',
      {
        action: 'conflict',
        eventId: 'e-1',
        error:
          'body: differs from event e-1, accepted first for user_id "u-1", user_bonus_id "ub-1" and status "Created"; this one is not sent (one event per bonus status)',
      },
    ],
    [
      'a first event accepted before bodies were kept cannot be matched: refused, saying why',
      null,
      'f-1',
      {
        action: 'conflict',
        eventId: 'e-1',
        error:
          'body: event e-1 was accepted first for user_id "u-1", user_bonus_id "ub-1" and status "Created" before the relay kept bodies to compare, so this one cannot be told a repeat of it; it is not sent (one event per bonus status)',
      },
    ],
  ] as const)('%s', (_label, firstFingerprint, fingerprint, expected) => {
    expect(decideBonusRepeat({ eventId: 'e-1', fingerprint: firstFingerprint }, fingerprint, key)).toEqual(expected);
  });
});

describe('bonusBodyForCrm', () => {
  const credit = {
    crm_id: 'g-1',
    crm_action_id: '5',
    crm_action_group_id: null,
    crm_action_communication_profile_id: null,
    crm_activity_id: '7',
    crm_trigger_hash: 'abc',
    crm_player_origin_id: 'x9',
  } as CreditRow;
  const bare = { ...credit, crm_id: null, crm_action_id: null, crm_activity_id: null, crm_trigger_hash: null, crm_player_origin_id: null } as CreditRow;
  it.each([
    [
      'adds the credit’s references, integers as numbers, and drops credit_id',
      '{"a":1,"credit_id":"3"}',
      credit,
      '{"a":1,"crm_references": {"id":"g-1","action_id":5,"activity_id":7,"trigger_hash":"abc","player_origin_id":"x9"}}',
    ],
    [
      'drops a credit_id given first, with its comma and the spaces up to the next key, and keeps every other byte: 64-bit ids, 1.0, exponents',
      '{ "credit_id" : 3 ,\n "payment_id": 9007199254740993, "meta": {"psp_ref": 98765432109876543210, "r": 1.0, "e": 1E+2} }',
      bare,
      '{ "payment_id": 9007199254740993, "meta": {"psp_ref": 98765432109876543210, "r": 1.0, "e": 1E+2} }',
    ],
    [
      'adds references after the last member, leaving the rest as written',
      '{"id": 9007199254740993 , "x":[1e400,-1e-400]}',
      credit,
      '{"id": 9007199254740993 , "x":[1e400,-1e-400],"crm_references": {"id":"g-1","action_id":5,"activity_id":7,"trigger_hash":"abc","player_origin_id":"x9"}}',
    ],
    [
      'writes an X-Crm-* id beyond 2^53 as the integer it is, leading zeros dropped',
      '{"a":1}',
      { ...bare, crm_activity_id: '009007199254740993', crm_action_id: '-18446744073709551617' } as CreditRow,
      '{"a":1,"crm_references": {"action_id":-18446744073709551617,"activity_id":9007199254740993}}',
    ],
    ['keeps references the platform sent itself', '{"a":1,"crm_references":{"id":"mine"}}', credit, '{"a":1,"crm_references":{"id":"mine"}}'],
    ['adds nothing without a credit', '{"a":1}', undefined, '{"a":1}'],
    ['adds nothing for a credit the CRM did not trigger (no X-Crm-* headers)', '{"a":1}', bare, '{"a":1}'],
  ])('%s', (_label, received, c, expected) => {
    expect(bonusBodyForCrm(received, c)).toBe(expected);
  });
});

describe('guardPayload', () => {
  const nested = (depth: number) => JSON.parse(`${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`);
  it.each([
    ['a flat object', { user_id: 'u' }, 16, true],
    ['an object exactly max_depth deep', nested(16), 16, true],
    ['an object one level deeper', nested(17), 16, false],
    [
      'a number kept as its text (RawJson) at the deepest level is a value, not a level',
      parseExact(`${'{"a":'.repeat(15)}{"id":9007199254740993}${'}'.repeat(15)}`),
      16,
      true,
    ],
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
    [
      'blocked alone is User Blocks, not User Update',
      row({}),
      row({ is_blocked: true }),
      [],
      undefined,
      { writeUser: true, writeConsents: false, events: ['user_blocks'] },
    ],
    [
      'a new block note is User Blocks',
      row({}),
      row({}, { block_note: 'fraud' }),
      [],
      undefined,
      { writeUser: true, writeConsents: false, events: ['user_blocks'] },
    ],
    ['other consents are User Consents', row({}), row({}), sms(1), sms(0), { writeUser: false, writeConsents: true, events: ['user_consents'] }],
    ['the same consents are nothing', row({}), row({}), sms(1), sms(1), { writeUser: false, writeConsents: false, events: [] }],
    ['consents not given leave the stored ones alone', row({}), row({}), sms(1), undefined, { writeUser: false, writeConsents: false, events: [] }],
  ] as const)('%s', (_label, before, after, consentsBefore, consentsAfter, expected) => {
    expect(decideUserChange(before, after, [...consentsBefore], consentsAfter && [...consentsAfter])).toEqual(expected);
  });
});
