/** categoriseBatch: the pure decision of which array each batch entry lands in (docs/design.md §4, batch). */
import { describe, expect, it } from 'vitest';
import { categoriseBatch, type BatchAnswer } from '../../src/sms/routes.js';

type Result = Parameters<typeof categoriseBatch>[1][number];
type Id = string | number | null;

describe('categoriseBatch puts one entry in exactly one array', () => {
  it.each<[string, Id, Result, BatchAnswer]>([
    [
      'a sent message is successful with its sms_id',
      'a1',
      { outcome: 'submitted', smsId: 's1' },
      { successful: [{ id: 'a1', sms_id: 's1' }], failed: [], fatal: [] },
    ],
    ['a numeric id stays a number', 42, { outcome: 'submitted', smsId: 's1' }, { successful: [{ id: 42, sms_id: 's1' }], failed: [], fatal: [] }],
    [
      'a numeric-looking string stays a string',
      '42',
      { outcome: 'submitted', smsId: 's1' },
      { successful: [{ id: '42', sms_id: 's1' }], failed: [], fatal: [] },
    ],
    [
      'a permanent provider failure is failed with its sms_id',
      'a2',
      { outcome: 'rejected', smsId: 's2', error: 'rejected' },
      { successful: [], failed: [{ id: 'a2', sms_id: 's2', error: 'rejected' }], fatal: [] },
    ],
    [
      'a permanent failure without an sms_id has no sms_id key',
      'a3',
      { outcome: 'rejected', error: 'rejected' },
      { successful: [], failed: [{ id: 'a3', error: 'rejected' }], fatal: [] },
    ],
    [
      'an invalid message is failed without an sms_id',
      'a4',
      { outcome: 'invalid', error: 'content: is required' },
      { successful: [], failed: [{ id: 'a4', error: 'content: is required' }], fatal: [] },
    ],
    [
      'an entry without an id is failed with id null',
      null,
      { outcome: 'invalid', error: 'activity: is required' },
      { successful: [], failed: [{ id: null, error: 'activity: is required' }], fatal: [] },
    ],
    [
      'a transient failure is fatal with its sms_id',
      7,
      { outcome: 'uncertain', smsId: 's7', error: 'outage' },
      { successful: [], failed: [], fatal: [{ id: 7, sms_id: 's7', error: 'outage' }] },
    ],
    [
      'a transient failure before any row was written is fatal without an sms_id',
      8,
      { outcome: 'retryable', error: 'ledger unavailable' },
      { successful: [], failed: [], fatal: [{ id: 8, error: 'ledger unavailable' }] },
    ],
  ])('%s', (_label, id, result, expected) => {
    expect(categoriseBatch([id], [result])).toEqual(expected);
  });

  it('answers three empty arrays for an empty batch', () => {
    expect(categoriseBatch([], [])).toEqual({ successful: [], failed: [], fatal: [] });
  });

  it('keeps request order inside each array and accounts for every entry once', () => {
    const ids: Id[] = ['x', 1, 'y', 2, null, 'z'];
    const results: Result[] = [
      { outcome: 'submitted', smsId: 'sx' },
      { outcome: 'retryable', smsId: 's1', error: 'later' },
      { outcome: 'rejected', smsId: 'sy', error: 'no' },
      { outcome: 'submitted', smsId: 's2' },
      { outcome: 'invalid', error: 'body: must be an SMS message object' },
      { outcome: 'retryable', smsId: 'sz', error: 'later' },
    ];
    const answer = categoriseBatch(ids, results);
    expect(answer.successful.map((e) => e.id)).toEqual(['x', 2]);
    expect(answer.failed.map((e) => e.id)).toEqual(['y', null]);
    expect(answer.fatal.map((e) => e.id)).toEqual([1, 'z']);
    expect(answer.successful.length + answer.failed.length + answer.fatal.length).toBe(ids.length);
  });
});
