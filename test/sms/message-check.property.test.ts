/**
 * The hot path's compiled check (src/sms/message-check.ts) against the zod schema it copies (message-schema.ts):
 * over generated message objects, built from the values each rule sits on the edge of, both accept the same inputs
 * and refuse the same inputs, and an accepted input yields the same values (trims included).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkSmsMessage } from '../../src/sms/message-check.js';
import { smsMessageSchema } from '../../src/sms/message-schema.js';

/** PROPERTY_RUNS=200000 searches harder (a minute). */
const RUNS = Number(process.env.PROPERTY_RUNS ?? 20_000);

const edgeText = fc.constantFrom(
  '',
  ' ',
  '  \t',
  'a',
  ' x ',
  '\u0000',
  'a\u0000',
  '\ud800',
  'x\udc00y',
  '😀',
  'A'.repeat(255),
  ` ${'A'.repeat(255)} `,
  'A'.repeat(256),
  '\u00a0',
  '\ufeff',
);
const anyText = fc.oneof(edgeText, fc.string(), fc.string({ unit: 'binary' }));
const edgeNumber = fc.constantFrom(0, -0, 1, -1, 1.5, 2 ** 53, 2 ** 53 + 2, 1e300, -1e300, Number.MAX_VALUE, 0.1);
const scalar = fc.oneof(anyText, edgeNumber, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const json = fc.oneof({ weight: 4, arbitrary: scalar }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });
/** A field: often a plausible value, sometimes any JSON, sometimes absent (undefined is dropped below). */
const field = (plausible: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 12, arbitrary: plausible }, { weight: 1, arbitrary: json }, { weight: 1, arbitrary: fc.constant(undefined) });
const sender = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'Casino',
    ' Casino ',
    'Casino Royal1',
    'A&B_c-d.e f',
    '+447700900123',
    '12',
    '123',
    '1'.repeat(15),
    '1'.repeat(16),
    'Ünicode',
    'a b',
  ),
  anyText,
);
const identifier = fc.oneof(anyText, fc.integer(), edgeNumber);

const withoutUndefined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
const activity = fc
  .record({
    id: field(identifier),
    brand_id: field(identifier),
    user_id: field(identifier),
    internal_user_id: field(identifier),
    activity_id: field(identifier),
    action_group_id: field(identifier),
    trigger_hash: field(identifier),
    action_id: field(identifier),
    extra: field(json),
  })
  .map(withoutUndefined);
const message = fc
  .record({
    activity: fc.oneof({ weight: 6, arbitrary: activity }, { weight: 1, arbitrary: json }),
    content: field(anyText),
    recipient: field(fc.oneof(fc.constantFrom('+447700900123', ''), anyText)),
    sender_name: field(sender),
    provider_name: field(fc.oneof(fc.constantFrom('sandbox', ''), anyText)),
    encoding: field(fc.constantFrom('auto', 'gsm7', 'ucs2', 'x')),
    enconding: field(fc.oneof(fc.constantFrom('usc2', 'gsm7', 'x', null), json)),
    unknown: field(json),
  })
  .map(withoutUndefined);

describe('checkSmsMessage agrees with smsMessageSchema', () => {
  it('on generated SMS message objects (same verdict, same values)', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof({ weight: 20, arbitrary: message }, { weight: 1, arbitrary: json }), (input) => {
        const checked = checkSmsMessage(input);
        const parsed = smsMessageSchema.safeParse(input);
        expect(checked !== undefined).toBe(parsed.success);
        if (!checked || !parsed.success) return;
        accepted++;
        const m = parsed.data;
        expect(checked).toEqual({
          activity: { id: m.activity.id, user_id: m.activity.user_id, brand_id: m.activity.brand_id },
          content: m.content,
          recipient: m.recipient,
          sender_name: m.sender_name,
          provider_name: m.provider_name,
          encoding: m.encoding ?? m.enconding,
        });
      }),
      { numRuns: RUNS },
    );
    // Both verdicts must be exercised, or the property says nothing.
    expect(accepted).toBeGreaterThan(RUNS / 50);
    expect(accepted).toBeLessThan(RUNS);
  });

  it.each([
    [{ activity: { id: ' a1 ' }, content: 'hi', recipient: '+447700900123', sender_name: ' Casino ' }, true],
    [{ activity: { id: 7, user_id: 12 }, content: 'hi', recipient: '+447700900123', sender_name: null }, true],
    [{ activity: { id: 1.5 }, content: 'hi', recipient: '+447700900123' }, false],
    [{ activity: { id: 'a', user_id: null }, content: 'hi', recipient: '+447700900123' }, false],
    [{ activity: { id: 'a' }, content: '   ', recipient: '+447700900123' }, false],
    [{ activity: { id: 'a' }, content: 'x\ud800', recipient: '+447700900123' }, false],
    // Any sender string passes the check: whether an SMS can carry it is prepare.ts's decision.
    [{ activity: { id: 'a' }, content: 'hi', recipient: '+447700900123', sender_name: 'TwelveLetter' }, true],
    [{ activity: [], content: 'hi', recipient: '+447700900123' }, false],
  ])('%j → %s', (input, ok) => {
    expect(checkSmsMessage(input) !== undefined).toBe(ok);
    expect(smsMessageSchema.safeParse(input).success).toBe(ok);
  });
});
