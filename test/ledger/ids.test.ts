/** sms_ids (src/ledger/ids.ts): UUIDv7 drawn from a pooled random source. */
import { describe, expect, it } from 'vitest';
import { newSmsId } from '../../src/ledger/ids.js';

describe('newSmsId', () => {
  it('makes distinct version-7 UUIDs across many pool refills, in time order by millisecond', () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, newSmsId);
    const after = Date.now();
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const millis = ids.map((id) => parseInt(id.replace(/-/g, '').slice(0, 12), 16));
    expect(millis.every((ms, i) => ms >= before && ms <= after && (i === 0 || ms >= millis[i - 1]!))).toBe(true);
  });
});
