/**
 * A text previewed before it is sent (POST /admin/sms/preview and the console's preview page; docs/costs.md
 * "Preview"): the encoding the send path would choose, its segments and the characters left, which characters force
 * UCS-2 (with the GSM-7 look-alike sms.smart_encoding would put for each, where there is one), and what it would cost
 * through each configured provider to the country. The same encoding code as the send path (encoding.ts). Pure.
 */
import { z } from 'zod';
import type { Config } from '../config/schema.js';
import { estimateCost, type RateBook } from '../costs/rates.js';
import { formatMicros } from '../kit/money.js';
import { lookAlikeOf, nonGsmChars, parseRequestedEncoding, planEncoding, segmentFill } from './encoding.js';
import { decideRecipient } from './recipient-reading.js';

export const previewRequestSchema = z.strictObject({
  text: z.string().min(1).max(10_000).describe('The message text, as the CRM would send it in `content`'),
  recipient: z.string().min(1).max(64).optional().describe('A phone number: its country prices the message'),
  country: z
    .string()
    .regex(/^[A-Z]{2}$/)
    .optional()
    .describe('ISO 3166 alpha-2 country, when no recipient is given'),
  encoding: z.string().optional().describe('auto (default), gsm7, ucs2 or usc2, as in the send request'),
});

const priceSchema = z.strictObject({
  provider: z.string(),
  currency: z.string().nullable(),
  per_segment: z.string().nullable().describe('From costs.rates; null when no rate covers the provider and country'),
  total: z.string().nullable().describe('per_segment × segments'),
});

export const previewAnswerSchema = z.strictObject({
  encoding: z.enum(['gsm7', 'ucs2']),
  segments: z.number().int(),
  characters: z.number().int().describe('Units used: GSM-7 septets (an extension character counts two) or UCS-2 code units'),
  characters_per_segment: z.number().int(),
  characters_left: z.number().int().describe('Units left in the last segment before another segment is needed'),
  over_max_segments: z.boolean().describe('More segments than sms.max_segments: the send would be refused'),
  smart_encoding: z.boolean().describe('sms.smart_encoding is on: the look-alikes below are put in before sending'),
  ucs2_characters: z
    .array(z.strictObject({ character: z.string(), code_point: z.string(), gsm7_look_alike: z.string().nullable() }))
    .describe('Characters outside GSM-7, each once, in order of appearance'),
  country: z.string().nullable(),
  prices: z.array(priceSchema),
});
export type PreviewAnswer = z.infer<typeof previewAnswerSchema>;

export interface PreviewDeps {
  sms: Config['sms'];
  rates: RateBook;
  providerNames: readonly string[];
}

/** The preview, or the first problem naming its field. */
export function previewText(
  input: z.infer<typeof previewRequestSchema>,
  deps: PreviewDeps,
): { ok: true; answer: PreviewAnswer } | { ok: false; error: string } {
  const requested = parseRequestedEncoding(input.encoding);
  if (!requested) return { ok: false, error: `encoding: ${JSON.stringify(input.encoding)} is not one of auto, gsm7, usc2, ucs2` };
  let country: string | null = input.country ?? null;
  if (input.recipient !== undefined) {
    const reading = decideRecipient(input.recipient, { defaultRegion: deps.sms.default_region });
    if (reading.outcome === 'invalid') return { ok: false, error: reading.error };
    country = 'country' in reading && typeof reading.country === 'string' ? reading.country : country;
  }
  // No limit here: the preview says how many segments the text needs, and whether the send would refuse it.
  const plan = planEncoding(input.text, requested, { smartEncoding: deps.sms.smart_encoding, maxSegments: Number.MAX_SAFE_INTEGER });
  if (!plan.ok) return { ok: false, error: plan.error.replace(/^content:/, 'text:') };
  const fill = segmentFill(plan.plan.text, plan.plan.encoding);
  const prices = deps.providerNames.map((provider) => {
    const rate = deps.rates.perSegment(provider, country);
    const total = estimateCost(deps.rates, provider, country, fill.segments);
    return {
      provider,
      currency: rate?.currency ?? null,
      per_segment: rate ? formatMicros(rate.micros, rate.currency) : null,
      total: total ? formatMicros(total.micros, total.currency) : null,
    };
  });
  return {
    ok: true,
    answer: {
      encoding: plan.plan.encoding,
      segments: fill.segments,
      characters: fill.units,
      characters_per_segment: fill.perSegment,
      characters_left: fill.left,
      over_max_segments: fill.segments > deps.sms.max_segments,
      smart_encoding: deps.sms.smart_encoding,
      ucs2_characters: nonGsmChars(input.text).map((ch) => ({
        character: ch,
        code_point: `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`,
        gsm7_look_alike: lookAlikeOf(ch) ?? null,
      })),
      country,
      prices,
    },
  };
}
