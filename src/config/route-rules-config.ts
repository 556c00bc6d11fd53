/**
 * The rules of a `type: route` and the gateway's `routing` section (docs/routing.md): which members a message goes
 * to by its recipient's country or prefix, the activity's brand_id, the CRM's provider_name, the sender and the
 * recipient's local time; which countries and number types may be sent to at all. The schema and the checks that
 * refuse a configuration whose rules cannot mean what they say live here, because the configuration composes them;
 * the matching itself is src/provider-wrappers/route-rules.ts.
 */
import { z } from 'zod';
import { callingCodeOf } from '../kit/phone-number.js';
import { durationSchema } from '../kit/duration.js';
import { isKnownTimeZone } from '../kit/time-zones.js';

const providerName = z.string().regex(/^[a-z0-9_-]+$/i, 'provider names are letters, digits, - and _');

/** ISO 3166 alpha-2, upper case, that libphonenumber-js knows (a country no number can lie in would never match). */
export const countryCode = z
  .string()
  .trim()
  .toUpperCase()
  .refine((c) => callingCodeOf(c) !== undefined, { error: (i) => `${JSON.stringify(i.input)} is not a country code the phone-number metadata knows` });

/** `+` and digits, as the start of an E.164 number. */
const prefix = z
  .string()
  .trim()
  .transform((p) => (p.startsWith('+') ? p : `+${p}`))
  .refine((p) => /^\+\d{1,14}$/.test(p), { error: 'must be + and 1 to 14 digits' });

/**
 * Number types as libphonenumber-js names them (getType). A number whose type the metadata cannot tell (a new range)
 * has none: it is let through, as the recipient's reading lets a possible number through (src/kit/phone-number.ts).
 */
export const NUMBER_TYPES = [
  'MOBILE',
  'FIXED_LINE_OR_MOBILE',
  'FIXED_LINE',
  'PREMIUM_RATE',
  'TOLL_FREE',
  'SHARED_COST',
  'VOIP',
  'PERSONAL_NUMBER',
  'PAGER',
  'UAN',
  'VOICEMAIL',
] as const;

export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

/** `HH:MM-HH:MM` in the recipient's local time, read as [from, to) minutes of the day; to before from spans midnight. */
export interface HoursWindow {
  from: number;
  to: number;
}

const hhmm = (text: string) => {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(text) ?? (text === '24:00' ? ['', '24', '00'] : null);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
};

const hours = z.string().transform((text, ctx): HoursWindow => {
  const [a, b, ...rest] = text.split('-').map((s) => s.trim());
  const from = a === undefined ? null : hhmm(a);
  const to = b === undefined ? null : hhmm(b);
  if (from === null || to === null || rest.length > 0) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)} is not HH:MM-HH:MM (e.g. 08:00-20:30, or 21:00-08:00 across midnight)` });
    return z.NEVER;
  }
  if (from === to % 1440) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)} is an empty window: a rule with it can never match` });
    return z.NEVER;
  }
  return { from, to };
});

const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD');

const identifier = z.union([z.string().min(1), z.number().int()]).transform(String);

export const ruleMatchSchema = z
  .strictObject({
    countries: z
      .array(countryCode)
      .min(1, 'list at least one country, or leave the key out')
      .optional()
      .describe("The recipient's country (as read, src/sms/recipient-reading.ts)."),
    prefixes: z
      .array(prefix)
      .min(1, 'list at least one prefix, or leave the key out')
      .optional()
      .describe('The start of the recipient in E.164, e.g. `+5511`.'),
    brands: z
      .array(identifier)
      .min(1, 'list at least one brand, or leave the key out')
      .optional()
      .describe("The activity's `brand_id` (string or number, compared as text)."),
    provider_names: z
      .array(
        z
          .string()
          .min(1)
          .transform((s) => s.toLowerCase()),
      )
      .min(1, 'list at least one provider_name, or leave the key out')
      .optional()
      .describe("The CRM's `provider_name` as sent (any case): one of this route's name and aliases."),
    senders: z
      .array(z.string().min(1))
      .min(1, 'list at least one sender, or leave the key out')
      .optional()
      .describe("The CRM's `sender_name` as sent (trimmed)."),
    number_types: z
      .array(z.enum(NUMBER_TYPES))
      .min(1, 'list at least one type, or leave the key out')
      .optional()
      .describe("The number's type (libphonenumber-js); a type outside `routing.number_types` is sent only by a rule that lists it."),
    hours: hours.optional().describe("The recipient's local time, `HH:MM-HH:MM` (to before from spans midnight)."),
    days: z.array(z.enum(DAYS)).min(1, 'list at least one day, or leave the key out').optional().describe("The recipient's local day of the week."),
    holidays: z
      .enum(['only', 'exclude'])
      .optional()
      .describe("`only`: on the recipient country's `routing.holidays` alone; `exclude`: never on them. Absent: either."),
  })
  .describe('What a message must have for the rule to match; every key given must match, an absent key matches anything.');
export type RuleMatch = z.output<typeof ruleMatchSchema>;

/** How a route (or one rule) orders its members for a message (src/provider-wrappers/failover.ts, cheapest-delivering.ts). */
export const routeStrategySchema = z.enum(['failover', 'weighted', 'cheapest_delivering']);
const strategy = routeStrategySchema;
const weights = z.record(providerName, z.number().min(0));

/** Minutes a provider keeps trying to deliver (Twilio ValidityPeriod, Infobip validityPeriod, Vonage ttl, SMPP validity_period, Sinch expire_at). */
export const validitySchema = z
  .number()
  .int()
  .min(1)
  .max(7 * 24 * 60)
  .describe(
    'Minutes the provider keeps trying to deliver, counted from when the gateway hands the message to it; each provider\'s own bounds apply (docs/routing.md "Validity").',
  );

export const routeRuleSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'rule names are 1 to 64 letters, digits, . _ -')
      .optional()
      .describe('Shown on the message and the console, and the name the admin API uses for this rule; unset: its number (1 for the first).'),
    match: ruleMatchSchema.prefault({}),
    members: z.array(providerName).min(1).describe('Providers (not routes) this rule sends through, in failover order.'),
    strategy: strategy.optional().describe("As the route's `strategy`; unset: the route's."),
    weights: weights.optional().describe("As the route's `weights`, for this rule's members; unset: the route's (for members it names)."),
    validity: validitySchema.optional(),
  })
  .describe('One rule: the first whose `match` the message meets chooses the members; an empty `match` is a catch-all.');
export type RouteRule = z.output<typeof routeRuleSchema>;

export const routingSchema = z
  .strictObject({
    countries: z
      .array(countryCode)
      .min(1, 'list at least one country, or leave the key out (every country allowed)')
      .optional()
      .describe(
        'Countries every brand may send to (ISO 3166, e.g. `[FR, BR]`); any other recipient is refused with 400 `country_not_allowed`, nothing sent. Absent: every country (logged once at start).',
      ),
    brands: z
      .record(
        z.string().min(1),
        z.strictObject({
          countries: z.array(countryCode).min(1).describe("This brand's countries, instead of `routing.countries`."),
        }),
      )
      .default({})
      .describe('Per `activity.brand_id`: the countries that brand may send to, in place of `routing.countries`.'),
    number_types: z
      .array(z.enum(NUMBER_TYPES))
      .min(1)
      .default(['MOBILE', 'FIXED_LINE_OR_MOBILE'])
      .describe(
        'With a country list: the number types sent without a rule that lists them (`match.number_types`); others (premium rate, toll free, shared cost, VoIP, fixed line, pager …) are refused with 400 `number_type_not_allowed`.',
      ),
    holidays: z
      .record(countryCode, z.array(date))
      .default({})
      .describe("Public holidays per country (`FR: [2026-12-25]`), as dates in the recipient's local time: what `match.holidays` reads."),
    zones: z
      .record(prefix, z.string().refine(isKnownTimeZone, { error: 'is not a time zone this Node knows (IANA, e.g. America/Chicago)' }))
      .default({})
      .describe(
        "The time zone of numbers starting with a prefix (`'+1907': America/Anchorage`), before the gateway's own table (src/kit/time-zones.ts), for route rules and quiet hours alike; the longest prefix wins.",
      ),
    control_poll: durationSchema('2s', { positive: true }).describe(
      'How often each instance reads the admin changes of routing (suspensions, weights, rule members) from the ledger.',
    ),
    delivery_refresh: durationSchema('30s', { positive: true }).describe(
      "How often each instance reads its routes' recent delivery figures from the ledger (`strategy: cheapest_delivering`); read at start.",
    ),
  })
  .describe(
    'Where messages may go: allowed countries and number types, holidays and time zones for rules, and how fast admin changes spread (docs/routing.md).',
  );
export type RoutingConfig = z.output<typeof routingSchema>;
