import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parseRequestedEncoding, planEncoding, type EncodingResult, type RequestedEncoding } from '../../src/sms/encoding.js';

// ---------------------------------------------------------------------------------------------
// Reference tables, written from 3GPP TS 23.038 §6.2.1 (not from the library under test).
// Default alphabet: 8 rows of 16 positions, 0x00–0x7F. Position 0x1B is ESC (escape to the
// extension table), which is not a character and is removed below.
// ---------------------------------------------------------------------------------------------
const DEFAULT_ROWS = [
  '@£$¥èéùìòÇ\nØø\rÅå', // 0x00–0x0F (0x09 is U+00C7 capital C cedilla, per the Unicode mapping)
  'Δ_ΦΓΛΩΠΨΣΘΞ\u001BÆæßÉ', // 0x10–0x1F
  ' !"#¤%&\'()*+,-./', // 0x20–0x2F (0x24 is ¤, not $)
  '0123456789:;<=>?', // 0x30–0x3F
  '¡ABCDEFGHIJKLMNO', // 0x40–0x4F
  'PQRSTUVWXYZÄÖÑÜ§', // 0x50–0x5F
  '¿abcdefghijklmno', // 0x60–0x6F
  'pqrstuvwxyzäöñüà', // 0x70–0x7F
] as const;
const DEFAULT_TABLE: readonly string[] = DEFAULT_ROWS.join('')
  .split('')
  .filter((c) => c !== '\u001B');
/** Extension table (each costs ESC + code = 2 septets): 0x0A FF, 0x14 ^, 0x28 {, 0x29 }, 0x2F \, 0x3C [, 0x3D ~, 0x3E ], 0x40 |, 0x65 €. */
const EXTENSION_TABLE: readonly string[] = ['\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€'];
const DEFAULT_SET = new Set(DEFAULT_TABLE);
const EXTENSION_SET = new Set(EXTENSION_TABLE);
const isTableChar = (c: string) => DEFAULT_SET.has(c) || EXTENSION_SET.has(c);

/** Independent GSM-7 reference: septets (ext = 2); ≤160 → 1; else greedy 153-septet parts, escape pairs never split. */
function referenceGsmSegments(text: string): number {
  const sizes = [...text].map((c) => (EXTENSION_SET.has(c) ? 2 : 1));
  if (sizes.reduce((a, b) => a + b, 0) <= 160) return 1;
  let parts = 1;
  let room = 153;
  for (const size of sizes) {
    if (room < size) {
      parts++;
      room = 153;
    }
    room -= size;
  }
  return parts;
}

/** Independent UCS-2 reference: UTF-16 units; ≤70 → 1; else greedy 67-unit parts, surrogate pairs never split. */
function referenceUcs2Segments(text: string): number {
  if (text.length <= 70) return 1;
  let parts = 1;
  let room = 67;
  for (const cp of text) {
    // for…of yields a well-formed surrogate pair as one 2-unit string, a lone surrogate as 1 unit
    if (room < cp.length) {
      parts++;
      room = 67;
    }
    room -= cp.length;
  }
  return parts;
}

const codePoint = (c: string) => `U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
const opts = { smartEncoding: false, maxSegments: 1000 };

function plan(result: EncodingResult) {
  if (!result.ok) throw new Error(`expected ok, got error: ${result.error}`);
  return result.plan;
}
function error(result: EncodingResult): string {
  if (result.ok) throw new Error(`expected an error, got ${JSON.stringify(result.plan)}`);
  return result.error;
}

describe('reference tables', () => {
  it('have 128 default positions (127 characters without ESC) and 10 extension characters', () => {
    for (const row of DEFAULT_ROWS) expect(row.length).toBe(16);
    expect(DEFAULT_SET.size).toBe(127);
    expect(EXTENSION_SET.size).toBe(10);
  });

  it('agree with the module for every BMP code unit (GSM iff in the tables, ext costs 2)', () => {
    const disagreements: string[] = [];
    for (let u = 0; u <= 0xffff; u++) {
      if (u >= 0xd800 && u <= 0xdfff) continue;
      const c = String.fromCharCode(u);
      const r = plan(planEncoding(c, 'auto', opts));
      if ((r.encoding === 'gsm7') !== isTableChar(c)) disagreements.push(codePoint(c));
    }
    expect(disagreements).toEqual([]);
    for (const c of DEFAULT_TABLE) {
      expect(plan(planEncoding(c.repeat(160), 'auto', opts)).segments).toBe(1);
      expect(plan(planEncoding(c.repeat(161), 'auto', opts)).segments).toBe(2);
    }
    for (const c of EXTENSION_TABLE) {
      expect(plan(planEncoding(c.repeat(80), 'auto', opts)).segments).toBe(1);
      expect(plan(planEncoding(c.repeat(81), 'auto', opts)).segments).toBe(2);
    }
  });
});

describe('parseRequestedEncoding', () => {
  it.each([
    ['missing', undefined, 'auto'],
    ['empty string, none of the four', '', null],
    ['auto', 'auto', 'auto'],
    ['upper case AUTO', 'AUTO', 'auto'],
    ['gsm7', 'gsm7', 'gsm7'],
    ['mixed case Gsm7', 'Gsm7', 'gsm7'],
    ['ucs2', 'ucs2', 'ucs2'],
    ['usc2 as spelled in the spec', 'usc2', 'ucs2'],
    ['upper case UCS2', 'UCS2', 'ucs2'],
    ['upper case USC2', 'USC2', 'ucs2'],
    ['unknown word', 'utf8', null],
    ['padded with spaces', ' gsm7 ', null],
    ['a number', 7, null],
    ['null', null, null],
  ] as const)('%s', (_label, input, expected) => {
    expect(parseRequestedEncoding(input)).toBe(expected);
  });
});

describe('planEncoding examples', () => {
  it.each([
    ['plain ASCII', 'Hello, world! Your code is 1234.', 'gsm7'],
    ['the GSM accented and Greek letters', '@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ¡ÄÖÑÜ§¿äöñüà', 'gsm7'],
    ['lowercase c cedilla', 'ç', 'ucs2'],
    ['tab', 'a\tb', 'ucs2'],
    ['backtick', 'a`b', 'ucs2'],
    ['cyrillic', 'жук', 'ucs2'],
    ['emoji', 'hi 😀', 'ucs2'],
  ] as const)('auto picks the right encoding for %s', (_label, text, encoding) => {
    expect(plan(planEncoding(text, 'auto', opts)).encoding).toBe(encoding);
  });

  it.each([
    ['euro', '€'],
    ['left bracket', '['],
    ['right bracket', ']'],
    ['left brace', '{'],
    ['right brace', '}'],
    ['tilde', '~'],
    ['caret', '^'],
    ['pipe', '|'],
    ['backslash', '\\'],
    ['form feed', '\f'],
  ])('%s is a GSM extension character worth 2 septets', (_label, c) => {
    expect(plan(planEncoding(c.repeat(80), 'auto', opts))).toMatchObject({ encoding: 'gsm7', segments: 1 });
    expect(plan(planEncoding(c.repeat(81), 'auto', opts))).toMatchObject({ encoding: 'gsm7', segments: 2 });
  });

  it.each([
    ['160 letters', 'a'.repeat(160), 'gsm7', 1],
    ['161 letters', 'a'.repeat(161), 'gsm7', 2],
    ['306 letters', 'a'.repeat(306), 'gsm7', 2],
    ['307 letters', 'a'.repeat(307), 'gsm7', 3],
    ['80 euro signs', '€'.repeat(80), 'gsm7', 1],
    ['81 euro signs', '€'.repeat(81), 'gsm7', 2],
    ['153 brackets, escape pairs never split', ']'.repeat(153), 'gsm7', 3],
    ['70 cyrillic letters', 'ж'.repeat(70), 'ucs2', 1],
    ['71 cyrillic letters', 'ж'.repeat(71), 'ucs2', 2],
    ['134 cyrillic letters', 'ж'.repeat(134), 'ucs2', 2],
    ['135 cyrillic letters', 'ж'.repeat(135), 'ucs2', 3],
    ['35 emoji', '😀'.repeat(35), 'ucs2', 1],
    ['36 emoji', '😀'.repeat(36), 'ucs2', 2],
    ['empty content', '', 'gsm7', 1],
  ] as const)('%s', (_label, text, encoding, segments) => {
    expect(plan(planEncoding(text, 'auto', opts))).toMatchObject({ encoding, segments, text });
  });

  it.each([
    ['usc2', 'usc2'],
    ['ucs2', 'ucs2'],
    ['UCS2', 'UCS2'],
  ])('%s forces the same UCS-2 plan', (_label, field) => {
    const requested = parseRequestedEncoding(field);
    expect(requested).toBe('ucs2');
    expect(plan(planEncoding('a'.repeat(71), requested as RequestedEncoding, opts))).toEqual({
      encoding: 'ucs2',
      segments: 2,
      text: 'a'.repeat(71),
      substitutions: [],
    });
  });

  it('gsm7 with a cyrillic letter errors naming U+0436', () => {
    expect(error(planEncoding('привет жук', 'gsm7', opts))).toContain('"ж" (U+0436)');
  });

  it('gsm7 error lists each character once and shows astral code points whole', () => {
    expect(error(planEncoding('ж😀ж😀', 'gsm7', opts))).toBe('content: characters not in GSM-7: "ж" (U+0436), "😀" (U+1F600)');
  });

  it('smart encoding turns “quotes” into GSM-7', () => {
    const smart = { smartEncoding: true, maxSegments: 10 };
    expect(plan(planEncoding('He said “hi” – it’s here…\u00A0ok', 'auto', smart))).toEqual({
      encoding: 'gsm7',
      segments: 1,
      text: 'He said "hi" - it\'s here... ok',
      substitutions: [
        { from: '“', to: '"' },
        { from: '”', to: '"' },
        { from: '–', to: '-' },
        { from: '’', to: "'" },
        { from: '…', to: '...' },
        { from: '\u00A0', to: ' ' },
      ],
    });
    expect(plan(planEncoding('“a” “b”', 'gsm7', smart)).substitutions).toHaveLength(2);
  });

  it('smart encoding under auto sends the original as UCS-2 when something non-GSM remains', () => {
    const smart = { smartEncoding: true, maxSegments: 10 };
    expect(plan(planEncoding('“ж”', 'auto', smart))).toEqual({ encoding: 'ucs2', segments: 1, text: '“ж”', substitutions: [] });
    expect(error(planEncoding('“ç”', 'gsm7', smart))).toBe('content: characters not in GSM-7: "ç" (U+00E7)');
  });

  it('without smart encoding curly quotes are not replaced', () => {
    expect(plan(planEncoding('“hi”', 'auto', opts)).encoding).toBe('ucs2');
    expect(error(planEncoding('“hi”', 'gsm7', opts))).toContain('(U+201C)');
  });

  it.each([
    ['GSM-7', 'a'.repeat(307), 'auto', 'content: needs 3 segments as GSM-7, more than the limit of 2 (sms.max_segments)'],
    ['UCS-2', 'ж'.repeat(135), 'auto', 'content: needs 3 segments as UCS-2, more than the limit of 2 (sms.max_segments)'],
    ['forced UCS-2', 'a'.repeat(141), 'ucs2', 'content: needs 3 segments as UCS-2, more than the limit of 2 (sms.max_segments)'],
  ] as const)('exceeding maxSegments as %s errors naming the count and limit', (_label, text, requested, message) => {
    expect(error(planEncoding(text, requested, { smartEncoding: false, maxSegments: 2 }))).toBe(message);
    expect(planEncoding(text, requested, { smartEncoding: false, maxSegments: 3 }).ok).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties against the reference tables and reference segment counts.
// ---------------------------------------------------------------------------------------------
// Lookalikes (“ … NBSP) are included so smart encoding (property e) has something to replace;
// U+0301 is a combining accent, i.e. what a decomposed 'é' leaves behind.
const NON_GSM_SAMPLES = ['ç', '\t', '`', 'ж', 'Ж', '中', '“', '…', '\u00A0', '\u0301', '😀', '👍', '🏽', '𝄞'];
const tableChar = fc.constantFrom(...DEFAULT_TABLE, ...EXTENSION_TABLE);
// Both a uniform mix and an extension-heavy mix, so escape pairs land on the 153-septet boundary.
const gsmChar = fc.oneof(tableChar, fc.constantFrom(...EXTENSION_TABLE));
const outsideChar = fc.oneof(
  fc.constantFrom(...NON_GSM_SAMPLES),
  fc.constantFrom('😀', '🎰', '💰', '🃏'), // astral: surrogate pairs
  fc
    .integer({ min: 0x80, max: 0x10ffff })
    .filter((u) => u < 0xd800 || u > 0xdfff)
    .map((u) => String.fromCodePoint(u))
    .filter((c) => !isTableChar(c)),
);
// Random mixes rarely put a 2-unit character exactly on a part boundary, so each text arbitrary also
// has a "boundary" variant: a run of 1-unit characters ending near a boundary, then 2-unit ones.
const oneUnitRun = (min: number, max: number, c: string) => fc.integer({ min, max }).map((n) => c.repeat(n));
const gsmText = fc.oneof(
  fc.array(gsmChar, { maxLength: 700, size: 'max' }).map((a) => a.join('')),
  fc
    .tuple(
      oneUnitRun(140, 160, 'a'),
      fc.array(fc.constantFrom(...EXTENSION_TABLE), { minLength: 1, maxLength: 240, size: 'max' }),
      fc.array(gsmChar, { maxLength: 40 }),
    )
    .map(([run, ext, tail]) => run + ext.join('') + tail.join('')),
);
const astral = fc.constantFrom('😀', '🎰', '💰', '🃏', '𝄞');
const nonGsmText = fc.oneof(
  fc.tuple(fc.array(fc.oneof(gsmChar, outsideChar), { maxLength: 700, size: 'max' }), outsideChar, fc.nat()).map(([chars, extra, at]) => {
    chars.splice(at % (chars.length + 1), 0, extra);
    return chars.join('');
  }),
  fc
    .tuple(oneUnitRun(55, 70, 'ж'), fc.array(astral, { minLength: 1, maxLength: 150, size: 'max' }), fc.array(outsideChar, { maxLength: 20 }))
    .map(([run, pairs, tail]) => run + pairs.join('') + tail.join('')),
);
const anyText = fc.oneof(gsmText, nonGsmText);
// Predicates return booleans rather than calling expect(): a failing expect() on 700-character strings
// renders a diff on every shrink step, which makes shrinking take minutes. The time limit keeps a
// failing property from hanging the suite (vitest's timeout cannot interrupt synchronous code).
const runs = { numRuns: 300, interruptAfterTimeLimit: 20_000, markInterruptAsFailure: true };
const isPlan = (r: EncodingResult, encoding: 'gsm7' | 'ucs2', segments: number, text: string) =>
  r.ok && r.plan.encoding === encoding && r.plan.segments === segments && r.plan.text === text && r.plan.substitutions.length === 0;

describe('planEncoding properties', () => {
  it('(a) GSM-only text: auto picks gsm7 with the reference septet segment count', () => {
    fc.assert(
      fc.property(gsmText, (text) => isPlan(planEncoding(text, 'auto', opts), 'gsm7', referenceGsmSegments(text), text)),
      runs,
    );
  });

  it('(b) text with a character outside the tables: auto picks ucs2 with the reference UTF-16 count', () => {
    fc.assert(
      fc.property(nonGsmText, (text) => isPlan(planEncoding(text, 'auto', opts), 'ucs2', referenceUcs2Segments(text), text)),
      runs,
    );
  });

  it('(c) forced ucs2 always matches the UTF-16 reference', () => {
    fc.assert(
      fc.property(anyText, fc.boolean(), (text, smartEncoding) =>
        isPlan(planEncoding(text, 'ucs2', { smartEncoding, maxSegments: 1000 }), 'ucs2', referenceUcs2Segments(text), text),
      ),
      runs,
    );
  });

  it('(d) forced gsm7 on non-GSM text without smart encoding errors naming every offending code point', () => {
    fc.assert(
      fc.property(nonGsmText, (text) => {
        const r = planEncoding(text, 'gsm7', opts);
        if (r.ok) return false;
        const offending = new Set([...text].filter((c) => !isTableChar(c)));
        const named = r.error.match(/\(U\+[0-9A-F]{4,6}\)/g) ?? [];
        return offending.size > 0 && [...offending].every((c) => r.error.includes(`"${c}" (${codePoint(c)})`)) && named.length === offending.size;
      }),
      runs,
    );
  });

  it('(e) smart encoding never invents characters: auto yields the original as UCS-2 or all-table GSM-7', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const r = planEncoding(text, 'auto', { smartEncoding: true, maxSegments: 1000 });
        if (!r.ok) return false;
        if (r.plan.encoding === 'ucs2') return isPlan(r, 'ucs2', referenceUcs2Segments(text), text);
        return (
          [...r.plan.text].every(isTableChar) &&
          r.plan.segments === referenceGsmSegments(r.plan.text) &&
          r.plan.text.split('?').length === text.split('?').length
        );
      }),
      runs,
    );
  });
});
