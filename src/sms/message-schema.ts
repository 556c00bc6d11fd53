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
const identifier = z.union([z.string(), integer], { error: 'must be a string or an integer' });

/**
 * A lone UTF-16 surrogate has no UTF-8 form: the database would store it as U+FFFD, another text than was
 * given (so the id could never be found again), and PostgreSQL refuses NUL in text.
 */
const storableText = (s: string) => !/[\p{Cs}\u0000]/u.test(s);

export const activitySchema = z.looseObject({
  id: z.union([z.string().trim().min(1).max(255).refine(storableText), integer], {
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

/** Alphanumeric sender IDs are limited to 11 characters by GSM; numeric senders are phone numbers. */
const senderName = z
  .string({ error: 'must be a string' })
  .trim()
  .refine((s) => s === '' || /^\+?\d{3,15}$/.test(s) || /^[A-Za-z0-9 .&_-]{1,11}$/.test(s), {
    error: 'must be a phone number (up to 15 digits) or at most 11 letters, digits, spaces or . & _ -',
  });

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

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let node = input;
  for (const key of path) {
    // Own keys only: a path through `__proto__` or `constructor` names the request's field, never Object's.
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** One sentence naming the field and the value: `activity.id: must be … (got 1.5)`. */
export function describeFirstIssue(error: z.ZodError, input: unknown): string {
  const issue = error.issues[0]!;
  const field = issue.path.map(String).join('.') || 'body';
  const value = valueAt(input, issue.path);
  if (value === undefined) return `${field}: is required`;
  const shown = JSON.stringify(value) ?? String(value);
  return `${field}: ${issue.message} (got ${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown})`;
}
