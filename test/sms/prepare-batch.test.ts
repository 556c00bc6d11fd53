/**
 * prepareBatch: a batch body's entries prepared one by one, each refusal in its own place, every activity.id echoed
 * as it arrived. Real sandbox plugin behind the real router, config parsed by the gateway's own schema.
 */
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { RawJson } from '../../src/http/exact-json.js';
import { createProviderRouter } from '../../src/provider-wrappers/registry.js';
import { prepareBatch } from '../../src/sms/prepare.js';
import { testConfigDocument } from '../helpers/gateway.js';
import { createPlugin } from '../helpers/providers.js';

const sms = parseConfig(testConfigDocument(tmpdir()), {}).sms;
const router = createProviderRouter([{ provider: createPlugin('sandbox', {}), aliases: [] }], 'sandbox');
const entry = (id: unknown, overrides: Record<string, unknown> = {}) => ({
  activity: { id, user_id: 'u1' },
  content: 'Your bonus is waiting',
  recipient: '+447700900123',
  ...overrides,
});

describe('prepareBatch', () => {
  it('prepares the valid entries and answers the others in their own places', () => {
    const entries = [entry('a'), 'not an object', entry(7, { recipient: 'nobody' }), entry('d'), entry('e')];
    const batch = prepareBatch(entries, JSON.stringify(entries), new Map([[4, 'activity: nested deeper than 64 levels']]), router, sms);
    expect(batch.valid.map((m) => m.activityKey)).toEqual(['a', 'd']);
    expect(batch.validIndex).toEqual([0, 3]);
    expect(batch.ids).toEqual(['a', null, 7, 'd', 'e']);
    expect(batch.results[0]).toBeUndefined();
    expect(batch.results[1]).toEqual({ outcome: 'invalid', error: 'body: must be an SMS message object' });
    expect(batch.results[2]).toMatchObject({ outcome: 'invalid', error: expect.stringMatching(/^recipient/) });
    expect(batch.results[3]).toBeUndefined();
    // A refusal found while reading the body (too deep, a key twice) stands, whatever the entry holds.
    expect(batch.results[4]).toEqual({ outcome: 'invalid', error: 'activity: nested deeper than 64 levels' });
    expect(batch.exact).toBe(false);
  });

  it('keeps an id a double cannot hold as the text it arrived as, and says the answer needs the exact writer', () => {
    const text = '[{"activity":{"id":12345678901234567890},"content":"hi","recipient":"+447700900123"}]';
    const batch = prepareBatch(JSON.parse(text) as unknown[], text, undefined, router, sms);
    expect(batch.exact).toBe(true);
    expect(batch.ids).toEqual([new RawJson('12345678901234567890')]);
    expect(batch.valid[0]).toMatchObject({ activityKey: '12345678901234567890', activityJson: '{"id":12345678901234567890}' });
  });

  it('answers an empty body with nothing', () => {
    expect(prepareBatch([], '[]', undefined, router, sms)).toEqual({ results: [], valid: [], validIndex: [], ids: [], exact: false });
  });
});
