/**
 * The `costs` block of config.yaml (docs/costs.md): each provider's rate table (what a message is estimated to
 * cost before, or instead of, the price its provider reports), the budgets, and the Twilio price fetch. Amounts are
 * decimal text ("0.0400"), read exactly into micro-units (src/kit/money.ts), never through a double.
 */
import { z } from 'zod';
import { CURRENCY_PATTERN, parseMicros } from '../kit/money.js';
import { durationSchema } from '../kit/duration.js';

const currency = z.string().regex(CURRENCY_PATTERN, 'must be an ISO 4217 code in capitals, e.g. EUR');

/** A non-negative amount as decimal text (a YAML number is refused: it would pass through a double). */
const amount = z.string({ error: 'must be a decimal amount in quotes, e.g. "0.0400"' }).refine((s) => {
  const m = parseMicros(s);
  return m !== null && m >= 0n;
}, 'must be a decimal amount of at most 12 whole digits, not negative, e.g. "0.0400"');

/** An ISO 3166 alpha-2 country as the recipient's reading names it, or `*` for every other country. */
const countryKey = z.string().regex(/^([A-Z]{2}|\*)$/, 'must be an ISO 3166 alpha-2 country in capitals, or *');

const rateTable = z.strictObject({
  currency: currency.describe("The currency of this provider's rates (and of its account, for a provider that reports prices without one)."),
  per_segment: z
    .record(countryKey, amount)
    .default({})
    .describe(
      'The price of one segment by recipient country (`GB: "0.0400"`); `*` for any country not listed. A country with no rate and no `*` is not estimated.',
    ),
});

const budget = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9_.-]{1,64}$/i, 'letters, digits, _ . - (at most 64)')
      .describe('Names the cap in refusals, metrics and alerts.'),
    brand_id: z
      .union([z.string().min(1).max(255), z.number().int()])
      .transform(String)
      .optional()
      .describe("Only messages of this brand (the activity's brand_id); unset: every brand."),
    country: z
      .string()
      .regex(/^[A-Z]{2}$/, 'must be an ISO 3166 alpha-2 country in capitals')
      .optional()
      .describe("Only messages to this country (the recipient's reading); unset: every country."),
    period: z.enum(['day', 'month']).describe('The calendar day or month, in UTC, of the message.'),
    limit: amount.describe('The most that may be spent in the period, in `currency`.'),
    currency: currency.describe('Costs in this currency count; costs in another do not (docs/costs.md "Budgets").'),
  })
  .describe('A cap on spend.');
export type BudgetConfig = z.output<typeof budget>;

export const costsConfigSchema = z
  .strictObject({
    rates: z
      .record(z.string().regex(/^[a-z0-9_-]+$/i), rateTable)
      .default({})
      .describe(
        'Rate tables by provider name (a key of `providers`; a route without one of its own is estimated at the dearest of its members). A message gets its estimate from these until its provider reports a price.',
      ),
    budgets: z.array(budget).default([]).describe('Caps per brand and/or country, per day or month (docs/costs.md "Budgets").'),
    warn_share: z
      .number()
      .gt(0)
      .max(1)
      .default(0.8)
      .describe('The share of a budget spent at which sms_gateway_budget_used_ratio is flagged in sms_gateway_budget_warning_ratio and the alert fires.'),
    twilio_price_fetch: z
      .strictObject({
        enabled: z.boolean().default(true).describe("Ask Twilio for each message's price after its final status (Twilio reports none in callbacks)."),
        after: durationSchema('2m').describe('How long after the final status to ask first: Twilio fills the price in a little later.'),
        rate_per_second: z.number().positive().max(100).default(5).describe("Price requests per second per instance, well within Twilio's API limits."),
        max_attempts: z
          .number()
          .int()
          .min(1)
          .max(20)
          .default(6)
          .describe('Asks per message before its estimate is left standing; each waits twice as long as the one before.'),
        poll_interval: durationSchema('5s', { positive: true }).describe('How often an instance looks for prices due to be asked.'),
      })
      .prefault({})
      .describe("Twilio's prices, fetched by GET of the message after its final status."),
  })
  .superRefine((c, ctx) => {
    const names = new Set<string>();
    for (const [i, b] of c.budgets.entries()) {
      if (names.has(b.name)) ctx.addIssue({ code: 'custom', path: ['budgets', i, 'name'], message: `"${b.name}" names another budget` });
      names.add(b.name);
    }
  })
  .describe('What messages cost, and caps on spend (docs/costs.md).');
export type CostsConfig = z.output<typeof costsConfigSchema>;
