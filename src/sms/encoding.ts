// Chooses the SMS data coding (GSM-7 or UCS-2) for a message and counts its segments.
// Pure functions, no I/O. Segment counting is delegated to @trt2/gsm-charset-utils, whose
// tables were checked against 3GPP TS 23.038 (test/sms/encoding.test.ts re-derives them).
//
// The package is CommonJS; Node's CJS named-export detection sees its `exports.x = x`
// assignments, so named imports work both under plain Node (dist/) and under vitest.
// We deliberately do NOT use the package's removeNonGsmChars for outgoing text: it turns every
// unknown character into '?', which would silently corrupt a message.
import { getSmsCharCountInfo, isGsmChar } from '@trt2/gsm-charset-utils/lib/SmsUtil.js';

export type RequestedEncoding = 'auto' | 'gsm7' | 'ucs2';
export type Encoding = 'gsm7' | 'ucs2';

/** Parses the CRM's encoding field: undefined → 'auto'; case-insensitive 'auto'|'gsm7'|'ucs2'|'usc2' (the spec's spelling, same as ucs2); anything else, '' included → null */
export function parseRequestedEncoding(value: unknown): RequestedEncoding | null {
  if (value === undefined) return 'auto';
  if (typeof value !== 'string') return null;
  switch (value.toLowerCase()) {
    case 'auto':
      return 'auto';
    case 'gsm7':
      return 'gsm7';
    case 'ucs2':
    case 'usc2': // the CRM spec's spelling
      return 'ucs2';
    default:
      return null;
  }
}

export interface EncodingPlan {
  encoding: Encoding;
  segments: number;
  text: string;
  /** characters replaced by smart encoding, e.g. [{from:'“', to:'"'}] (deduplicated) */
  substitutions: Array<{ from: string; to: string }>;
}

export type EncodingResult = { ok: true; plan: EncodingPlan } | { ok: false; error: string };

/**
 * Smart-encoding table: only true look-alikes whose replacement a reader would not notice.
 * Letters are never transliterated (e.g. 'ç' stays non-GSM rather than becoming 'Ç' or 'c'),
 * because that changes spelling; anything not listed here forces UCS-2 (auto) or an error (gsm7).
 */
const LOOK_ALIKES: Readonly<Record<string, string>> = Object.freeze({
  // single quotes / apostrophes
  '\u2018': "'", // ‘
  '\u2019': "'", // ’
  '\u201A': "'", // ‚
  '\u201B': "'", // ‛
  // double quotes and guillemets
  '\u201C': '"', // “
  '\u201D': '"', // ”
  '\u201E': '"', // „
  '\u00AB': '"', // «
  '\u00BB': '"', // »
  // dashes
  '\u2012': '-', // ‒ figure dash
  '\u2013': '-', // – en dash
  '\u2014': '-', // — em dash
  '\u2015': '-', // ― horizontal bar
  // ellipsis
  '\u2026': '...', // …
  // Unicode spaces (category Zs except U+0020), each → one ASCII space
  '\u00A0': ' ', // no-break space
  '\u1680': ' ', // ogham space mark
  '\u2000': ' ',
  '\u2001': ' ',
  '\u2002': ' ',
  '\u2003': ' ',
  '\u2004': ' ',
  '\u2005': ' ',
  '\u2006': ' ',
  '\u2007': ' ',
  '\u2008': ' ',
  '\u2009': ' ',
  '\u200A': ' ', // en quad … hair space
  '\u202F': ' ', // narrow no-break space
  '\u205F': ' ', // medium mathematical space
  '\u3000': ' ', // ideographic space
});

/** Distinct characters (whole code points, so emoji are not split into surrogates) not in GSM-7. */
export function nonGsmChars(text: string): string[] {
  const found = new Set<string>();
  for (const ch of text) if (!isGsmChar(ch)) found.add(ch);
  return [...found];
}

/** The GSM-7 look-alike smart encoding would put for a character (sms.smart_encoding), if it has one. */
export function lookAlikeOf(ch: string): string | undefined {
  return Object.hasOwn(LOOK_ALIKES, ch) ? LOOK_ALIKES[ch] : undefined;
}

/**
 * How `text` fills its segments in `encoding`: units used (GSM-7 septets with extension characters counting two, or
 * UCS-2 code units), segments, units per segment and the units left in the last one, counted by the same library
 * call as planEncoding's.
 */
export function segmentFill(text: string, encoding: Encoding): { units: number; segments: number; perSegment: number; left: number } {
  const info = getSmsCharCountInfo(text);
  const count = encoding === 'gsm7' ? info.gsmCharCount : info.ucs2CharCount;
  return {
    units: count.charCount,
    segments: count.msgCount,
    perSegment: count.charsPerSegment,
    left: count.msgCount * count.charsPerSegment - count.charCount,
  };
}

function describeChar(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  return `"${ch}" (U+${cp.toString(16).toUpperCase().padStart(4, '0')})`;
}

function transliterate(text: string): { text: string; substitutions: Array<{ from: string; to: string }> } {
  const used = new Map<string, string>();
  let out = '';
  for (const ch of text) {
    const to = lookAlikeOf(ch);
    if (to === undefined) {
      out += ch;
    } else {
      out += to;
      used.set(ch, to);
    }
  }
  return { text: out, substitutions: [...used].map(([from, to]) => ({ from, to })) };
}

function finish(encoding: Encoding, text: string, substitutions: Array<{ from: string; to: string }>, maxSegments: number): EncodingResult {
  const info = getSmsCharCountInfo(text);
  // The library counts both ways in one pass: GSM-7 160/153 septets with escape pairs kept whole,
  // UCS-2 70/67 code units with surrogate pairs kept whole.
  const segments = encoding === 'gsm7' ? info.gsmCharCount.msgCount : info.ucs2CharCount.msgCount;
  if (segments > maxSegments) {
    const name = encoding === 'gsm7' ? 'GSM-7' : 'UCS-2';
    return {
      ok: false,
      error: `content: needs ${segments} segments as ${name}, more than the limit of ${maxSegments} (sms.max_segments)`,
    };
  }
  return { ok: true, plan: { encoding, segments, text, substitutions } };
}

export function planEncoding(content: string, requested: RequestedEncoding, options: { smartEncoding: boolean; maxSegments: number }): EncodingResult {
  if (requested === 'ucs2') return finish('ucs2', content, [], options.maxSegments);

  if (nonGsmChars(content).length === 0) return finish('gsm7', content, [], options.maxSegments);

  // Smart encoding exists to avoid UCS-2 (which more than halves the characters per segment), so it
  // only counts if the whole message becomes GSM-7; a half-transliterated UCS-2 message gains nothing.
  const smart = options.smartEncoding ? transliterate(content) : { text: content, substitutions: [] };
  const remaining = nonGsmChars(smart.text);
  if (remaining.length === 0) return finish('gsm7', smart.text, smart.substitutions, options.maxSegments);

  if (requested === 'auto') return finish('ucs2', content, [], options.maxSegments);
  return { ok: false, error: `content: characters not in GSM-7: ${remaining.map(describeChar).join(', ')}` };
}
