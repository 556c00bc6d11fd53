/**
 * The SMS message object of the operator interface, validated field by field. Unknown fields are accepted and
 * ignored (the CRM may add fields); `activity` is kept exactly as received because it is echoed in conversions.
 */
import { z } from 'zod';

/**
 * Integers of any size: zod's int() stops at 2^53, but 64-bit ids are echoed exactly from the body's text
 * (src/http/exact-json.ts), so they need not fit a double.
 */
const integer = z.number().refine(Number.isInteger);

/**
 * A lone UTF-16 surrogate has no UTF-8 form: the database would store it as U+FFFD, another text than was
 * given (so the id could never be found again), and PostgreSQL refuses NUL in text.
 */
const storableText = (s: string) => !/[\p{Cs}\u0000]/u.test(s);

/** Longest text an activity id (or any of its other identifiers) may be: the ledger stores and indexes them. */
export const MAX_IDENTIFIER_LENGTH = 255;

/**
 * The activity's other identifiers: at most 255 characters like `id` (user_id is stored with the message and
 * indexed; PostgreSQL cannot index a text of several kilobytes: docs/public-doors.md).
 */
const identifier = z.union(
  [
    z
      .string()
      .max(MAX_IDENTIFIER_LENGTH, { error: `must be at most ${MAX_IDENTIFIER_LENGTH} characters` })
      .refine(storableText, { error: 'must not hold a NUL or a lone surrogate' }),
    integer,
  ],
  { error: 'must be a string or an integer' },
);

export const activitySchema = z.looseObject({
  id: z.union([z.string().trim().min(1).max(MAX_IDENTIFIER_LENGTH).refine(storableText), integer], {
    error: 'must be a non-empty string (at most 255 characters, no NUL or lone surrogate) or an integer',
  }),
  brand_id: identifier.optional(),
  user_id: identifier.optional(),
  internal_user_id: identifier.optional(),
  activity_id: identifier.optional(),
  action_group_id: identifier.optional(),
  trigger_hash: identifier.optional(),
  action_id: identifier.optional(),
});

/**
 * Any string, kept as sent (prepare.ts trims it, and notes one of spaces only): one no SMS can carry is not refused
 * here but goes out under the next sender of the chain (prepare.ts, sms.refuse_unusable_sender), because the CRM
 * reads a 400 as final and would lose the message.
 */
const senderName = z.string({ error: 'must be a string' });

/** Alphanumeric sender IDs are limited to 11 characters by GSM; numeric senders are phone numbers. */
export const USABLE_SENDER_RULE = 'must be a phone number (up to 15 digits) or at most 11 letters, digits, spaces or . & _ -';
export function isUsableSender(s: string): boolean {
  return s === '' || /^\+?\d{3,15}$/.test(s) || /^[A-Za-z0-9 .&_-]{1,11}$/.test(s);
}

export const smsMessageSchema = z.looseObject({
  activity: activitySchema,
  content: z
    .string({ error: 'must be a string' })
    .min(1, { error: 'must not be empty' })
    .refine((s) => s.trim().length > 0, { error: 'must not be empty' })
    .refine(storableText, { error: 'must be Unicode text without NUL characters or lone surrogates' }),
  recipient: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }),
  sender_name: senderName.optional().nullable(),
  provider_name: z.string({ error: 'must be a string' }).optional().nullable(),
  encoding: z.string({ error: 'must be a string' }).optional().nullable(),
  /** The CRM's own schema spells the key so (sic); read where `encoding` is absent (message-check.ts). */
  enconding: z.string({ error: 'must be a string' }).optional().nullable(),
});

export type SmsMessageInput = z.infer<typeof smsMessageSchema>;
