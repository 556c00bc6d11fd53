/**
 * docs/connecting-the-crm.md "Messages refused for good" is what the gateway answers: each row the test can bring
 * about is sent to a running gateway, and the answer column of that row, read from the doc (`…`, `N` and `M` stand
 * for any text), must be the 400's error. Rows left out here say why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleUser } from '../helpers/crm-schemas.js';
import { smsMessage, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { readRepoFile, withoutCode } from '../helpers/markdown.js';

/** The table's rows: the rule (first column) and the second column's first backticked text that is not a setting. */
function documentedRefusals(): Map<string, string> {
  const prose = withoutCode(readRepoFile('docs/connecting-the-crm.md'));
  const section = prose.split(/^## Messages refused for good$/m)[1]?.split(/^#{1,2} /m)[0] ?? '';
  const rows = new Map<string, string>();
  for (const m of section.matchAll(/^\| (.+?) \| (.+?) \| (.+?) \|$/gm)) {
    const answer = [...m[2]!.matchAll(/`([^`]+)`/g)].map((a) => a[1]!).find((a) => !/^[a-z_]+\.[a-z_.]+: /.test(a));
    if (answer && m[1] !== 'rule') rows.set(m[1]!, answer);
  }
  return rows;
}

/** The documented answer as a pattern: `…` any text, `N` and `M` any number. */
const asPattern = (answer: string) =>
  new RegExp(
    `^${answer
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace(/…/g, '.*')
      .replace(/\b[NM]\b/g, '\\d+')}$`,
  );

const documented = documentedRefusals();

/** What brings each rule about, by the start of its first column; the gateway's settings make it refuse. */
const CASES: Array<[rule: string, message: Record<string, unknown>]> = [
  ['the message names no `provider_name`', { provider_name: undefined }],
  ['its `provider_name` is no provider', { provider_name: 'nosuch' }],
  ['a recipient that is no phone number', { recipient: '07700900123' }],
  ['a `sender_name` no SMS can carry', { sender_name: 'Far too long a sender' }],
  ['an `encoding` (or `enconding`) other than', { encoding: 'utf8' }],
  ['`encoding: gsm7` with characters GSM-7 does not have', { encoding: 'gsm7', content: 'Prize 😀' }],
  ['more segments than allowed', { content: 'x'.repeat(400) }],
  ['the player (`activity.user_id`) is blocked', { activity: { id: 'blocked-1', user_id: 'blocked-player' } }],
  ['the message would pass a budget', { activity: { id: 'budget-1', brand_id: 'capped-brand' } }],
];
// Not brought about here: the provider's own refusal (test/providers/provider-outcomes.test.ts) and malformed
// messages (test/sms/single-validation.test.ts), whose answers depend on the provider and the field.

describe('docs/connecting-the-crm.md "Messages refused for good"', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      sms: { refuse_unusable_sender: true, refuse_unknown_encoding: true, max_segments: 2 },
      // A budget smaller than one message of its brand.
      costs: {
        rates: { sandbox: { currency: 'EUR', per_segment: { '*': '1.00' } } },
        budgets: [{ name: 'capped', brand_id: 'capped-brand', period: 'day', limit: '0.50', currency: 'EUR' }],
      },
    });
    await gw.adminPut('/admin/users/blocked-player', sampleUser('blocked-player', { mobile_prefix: '+44', mobile: '7700900123', is_blocked: true }));
  });
  afterAll(async () => gw?.close());

  it('lists the rules', () => {
    expect(documented.size).toBeGreaterThanOrEqual(CASES.length);
    for (const [rule] of CASES)
      expect(
        [...documented.keys()].some((r) => r.startsWith(rule)),
        rule,
      ).toBe(true);
  });

  it.each(CASES)('%s: answers 400 with the documented error', async (rule, overrides) => {
    const answer = [...documented].find(([r]) => r.startsWith(rule))![1];
    const base = smsMessage(`refusal-${rule.length}`, { sender_name: undefined });
    const message = { ...base, ...overrides, activity: { ...base.activity, ...((overrides.activity as object) ?? {}) } };
    const res = await gw.post('/channels/sms/single', JSON.parse(JSON.stringify(message)));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(asPattern(answer));
  });
});
