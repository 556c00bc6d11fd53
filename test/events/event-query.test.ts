/** The dead-event list's query (GET /admin/events, /console/dead-events): what it reads, and hostile parameters refused by name. */
import { describe, expect, it } from 'vitest';
import { parseEventQuery } from '../../src/events/event-query.js';

describe('parseEventQuery', () => {
  it.each([
    ['', {}],
    ['status=dead&type=LOGIN_V2&user_id=u 1&cursor=42', { status: 'dead', type: 'LOGIN_V2', userId: 'u 1', before: 42 }],
  ])('reads %j', (query, filter) => {
    expect(parseEventQuery(new URLSearchParams(query))).toEqual({ ok: true, filter });
  });

  it.each([
    ['type=__proto__', 'type: must be one of'],
    ['type=constructor', 'type: must be one of'],
    ['status=lost', 'status: must be one of pending, sent, dead'],
    ['cursor=-1', 'cursor:'],
    ['cursor=1e3', 'cursor:'],
    ['user_id=', 'user_id: must not be empty'],
    ['user_id=x…(257)'.replace('x…(257)', 'x'.repeat(257)), 'user_id: longer than 256'],
    ['type=BONUS&type=BONUS', 'type: given more than once'],
    ['__proto__=1', '"__proto__": unknown query parameter'],
    [`${'k'.repeat(5_000)}=1`, 'unknown query parameter'],
  ])('refuses a hostile query (%#) naming the parameter', (query, error) => {
    const result = parseEventQuery(new URLSearchParams(query));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toContain(error);
  });

  it('treats empty fields of a form as absent', () => {
    expect(parseEventQuery(new URLSearchParams('type=&user_id='), { form: true })).toEqual({ ok: true, filter: {} });
  });
});
