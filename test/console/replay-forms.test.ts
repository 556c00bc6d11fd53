/**
 * The console's replay forms and the dead-credit list's query: which events or credits a posted form names, and
 * hostile forms refused naming the field. Pure functions of src/console/dead-events-page.ts and dead-credits-page.ts.
 */
import { describe, expect, it } from 'vitest';
import { creditReplayFormMatch, parseDeadCreditQuery } from '../../src/operator/credits/dead-credits-page.js';
import { eventReplayFormMatch } from '../../src/events/dead-events-page.js';

const EVENT_ID = '01939a7e-1234-7abc-8def-0123456789ab';

function form(entries: Array<[string, string]>): FormData {
  const data = new FormData();
  for (const [k, v] of entries) data.append(k, v);
  return data;
}

describe('eventReplayFormMatch', () => {
  it.each([
    [[['only', EVENT_ID]], { eventIds: [EVENT_ID] }],
    [
      [
        ['action', 'selected'],
        ['ids', EVENT_ID],
        ['ids', EVENT_ID.replace('ab', 'cd')],
      ],
      { eventIds: [EVENT_ID, EVENT_ID.replace('ab', 'cd')] },
    ],
    [
      [
        ['action', 'matching'],
        ['type', 'BONUS'],
        ['user_id', 'u-1'],
      ],
      { type: 'BONUS', userId: 'u-1' },
    ],
    [
      [
        ['action', 'matching'],
        ['type', ''],
        ['user_id', ''],
      ],
      {},
    ],
  ] as Array<[Array<[string, string]>, object]>)('reads %j', (entries, match) => {
    expect(eventReplayFormMatch(form(entries))).toEqual({ ok: true, match });
  });

  it.each([
    [[['only', '1']], 'only: must be one event id'],
    [
      [
        ['only', EVENT_ID],
        ['only', EVENT_ID],
      ],
      'only: must be one event id',
    ],
    [[['action', 'selected']], 'ids: tick at least one'],
    [
      [
        ['action', 'selected'],
        ['ids', "1' or 1=1"],
      ],
      'ids: must be event ids',
    ],
    [[['action', 'everything']], 'action: must be selected or matching'],
    [[], 'action: must be selected or matching'],
    [
      [
        ['action', 'matching'],
        ['type', '__proto__'],
      ],
      'type: must be one of',
    ],
    [
      [
        ['action', 'matching'],
        ['user_id', 'x'.repeat(257)],
      ],
      'user_id:',
    ],
    [
      [
        ['action', 'matching'],
        ['user_id', 'a'],
        ['user_id', 'b'],
      ],
      'user_id:',
    ],
  ] as Array<[Array<[string, string]>, string]>)('refuses hostile form %# naming the field', (entries, error) => {
    const result = eventReplayFormMatch(form(entries));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toContain(error);
  });
});

describe('creditReplayFormMatch and parseDeadCreditQuery', () => {
  it.each([
    [[['only', '12']], { ids: [12] }],
    [
      [
        ['action', 'selected'],
        ['ids', '12'],
        ['ids', '13'],
      ],
      { ids: [12, 13] },
    ],
    [
      [
        ['action', 'matching'],
        ['user_id', 'u 1'],
      ],
      { userId: 'u 1' },
    ],
    [
      [
        ['action', 'matching'],
        ['user_id', ''],
      ],
      {},
    ],
  ] as Array<[Array<[string, string]>, object]>)('reads %j', (entries, match) => {
    expect(creditReplayFormMatch(form(entries))).toEqual({ ok: true, match });
  });

  it.each([
    [[['only', '0']], 'only: must be one credit id'],
    [[['only', '1 or 1=1']], 'only: must be one credit id'],
    [[['action', 'selected']], 'ids: tick at least one dead credit'],
    [
      [
        ['action', 'selected'],
        ['ids', '-3'],
      ],
      'ids: must be credit ids',
    ],
    [[['action', 'everything']], 'action: must be selected or matching'],
    [
      [
        ['action', 'matching'],
        ['user_id', 'x'.repeat(257)],
      ],
      'user_id:',
    ],
  ] as Array<[Array<[string, string]>, string]>)('refuses hostile form %# naming the field', (entries, error) => {
    const result = creditReplayFormMatch(form(entries));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toContain(error);
  });

  it('reads the list query and refuses a bad one naming the parameter', () => {
    expect(parseDeadCreditQuery(new URLSearchParams('user_id=&cursor=7&replayed=1'))).toEqual({ ok: true, filter: { before: 7 } });
    expect(parseDeadCreditQuery(new URLSearchParams('cursor=-1'))).toMatchObject({ ok: false, error: expect.stringContaining('cursor:') });
    expect(parseDeadCreditQuery(new URLSearchParams('type=BONUS'))).toMatchObject({
      ok: false,
      error: expect.stringContaining('"type": unknown query parameter'),
    });
  });
});
