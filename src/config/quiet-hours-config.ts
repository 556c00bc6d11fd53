/**
 * `quiet_hours`: when a message may reach its recipient, by country and brand, in the recipient's local time. Outside
 * a window's days and hours (and all day on its holidays) a message is accepted and held until the window opens
 * (src/sms/quiet-hours.ts decides; docs/routing.md "Quiet hours"). Windows are named, so that a route's rule can name
 * one too.
 */
import { z } from 'zod';
import { durationSchema } from '../kit/duration.js';
import { hasKnownZones, isKnownTimeZone } from '../kit/time-zones.js';

export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** `HH:MM` as minutes after midnight; `24:00` ends a day. */
function minutesOf(text: string): number | null {
  const match = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(text);
  if (!match) return null;
  const minutes = Number(match[1]) * 60 + Number(match[2]);
  return minutes <= 24 * 60 ? minutes : null;
}

const hoursSchema = z
  .string()
  .transform((text, ctx) => {
    const [from, until] = text.split('-').map((t) => minutesOf(t.trim()));
    if (from == null || until == null || from >= until) {
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)} is not HH:MM-HH:MM with the start before the end (e.g. 08:00-20:30)` });
      return z.NEVER;
    }
    return { from, until };
  })
  .meta({ 'x-type': 'HH:MM-HH:MM' });

const dateSchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'a date is written YYYY-MM-DD')
  .refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d), 'not a date of the calendar');

const windowSchema = z
  .strictObject({
    countries: z
      .array(z.string().regex(/^[A-Z]{2}$/, 'a country is its ISO 3166-1 alpha-2 code in capitals (FR, US)'))
      .min(1, 'name at least one country')
      .describe("The recipients' countries (as the number reads) this window governs."),
    brands: z
      .array(z.union([z.string().min(1), z.number().int()]))
      .min(1)
      .optional()
      .transform((v) => v?.map(String))
      .describe('Only messages whose activity.brand_id is one of these; a window with brands wins over one without for the same country.'),
    days: z
      .array(z.enum(WEEKDAYS))
      .min(1, 'name at least one day')
      .default([...WEEKDAYS])
      .describe('The days (in the local time) on which a message may go out: `mon` … `sun`.'),
    hours: hoursSchema.describe('The local hours in which a message may go out, `HH:MM-HH:MM` (the end excluded); outside them it is held.'),
    holidays: z.array(dateSchema).default([]).describe('Public holidays, `YYYY-MM-DD` in the local calendar: quiet all day.'),
    zone: z
      .string()
      .refine(isKnownTimeZone, 'not an IANA time zone Intl knows (e.g. Europe/Paris)')
      .optional()
      .describe(
        "The local time's zone, whatever the number; unset: the recipient's zone from its country and prefix (src/kit/time-zones.ts; `routing.zones` first).",
      ),
  })
  .superRefine((w, ctx) => {
    if (w.zone) return;
    for (const [i, country] of w.countries.entries())
      if (!hasKnownZones(country)) ctx.addIssue({ code: 'custom', path: ['countries', i], message: `${country}: no zone is known for this country; set zone` });
  });

export type QuietWindow = z.output<typeof windowSchema>;

export const quietHoursConfigSchema = z
  .strictObject({
    windows: z
      .record(z.string().regex(/^[a-z0-9_-]+$/i, 'window names are letters, digits, - and _'), windowSchema)
      .default({})
      .describe('Named windows; none: every message goes out when it arrives.'),
    spread: durationSchema('10m').describe(
      'Held messages go out over this long after their window opens, each at a time drawn from its sms_id (so the same on every instance and after a restart), not all in the first second.',
    ),
    max_wait: durationSchema('72h', { positive: true }).describe(
      'A message held longer than this (from its arrival) is never sent: it ends `failed`, posted to the CRM as its conversion.',
    ),
    poll_interval: durationSchema('1s', { positive: true }).describe('How often the held sends outbox looks for messages whose time has come.'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(4)
      .describe("Held messages handed to providers at once by one instance (the providers' throttles apply as well)."),
    retry_initial_ms: z.number().int().positive().default(5_000).describe('First back-off after a provider answered a held message with a transient failure.'),
    retry_max_ms: z.number().int().positive().default(300_000).describe('Longest back-off (a held message is retried until quiet_hours.max_wait).'),
  })
  .superRefine((q, ctx) => {
    // One window per country and brand (or per country for all brands): two would leave the choice to their order.
    const owner = new Map<string, string>();
    for (const [name, w] of Object.entries(q.windows))
      for (const country of w.countries)
        for (const brand of w.brands ?? ['*']) {
          const key = `${country}/${brand}`;
          const first = owner.get(key);
          if (first) {
            const who = brand === '*' ? country : `${country} and brand ${brand}`;
            ctx.addIssue({ code: 'custom', path: ['windows', name, 'countries'], message: `${who} already has window ${first}` });
          } else owner.set(key, name);
        }
  })
  .describe('Quiet hours: messages that arrive outside their window are accepted, held and sent when it opens (docs/routing.md "Quiet hours").');

export type QuietHoursConfig = z.output<typeof quietHoursConfigSchema>;
