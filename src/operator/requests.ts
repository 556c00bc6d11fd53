/**
 * Request bodies. The CRM's requests are plain objects: fields it adds later are accepted and ignored (the spec
 * says it may add some, e.g. validity_amount). The admin bodies are strict instead, so a misspelt key in an
 * operator's load script is refused by name rather than silently lost.
 */
import type { Context } from 'hono';
import { z } from 'zod';
import { readJsonBody, type ReadJsonOptions } from '../http/json-body.js';
import { RawJson } from '../http/exact-json.js';
import { refuseNumber } from '../crm/checker-numbers.js';
import { describeFirstIssue } from '../http/zod-issue.js';
import { bonusEntrySchema, consentEntrySchema, consentTypeSchema, productsSchema, userRecordFields, type ConsentEntry } from '../crm/shapes.js';

/**
 * The credit requests take everything the CRM maker's schemas of them take (docs/operator-api.md "Requests as the CRM sends them"): a
 * user_id of at least one character and any bonus_code string (one not in the bonus list is then refused as such);
 * funds an amount of 0 or more and any currency string (`USDT`, `mBTC`). A number is still taken in its decimal
 * form; a three-letter code is read in capitals, any other currency as sent (`mBTC` is not `MBTC`).
 *
 * The body is read with parseExact (src/http/exact-json.ts), so a number a double would change is a RawJson of its
 * text: an integer id of any size is taken as its digits, and the amount is checked by its exact value.
 */
/** An integer written in digits (a RawJson of `1e3` or `1.5` is not an id), taken as that text. */
const digitsId = z
  .instanceof(RawJson)
  .refine((v) => /^-?\d+$/.test(v.text))
  .transform(String)
  .meta({ type: 'integer' });
const crmUserId = z.union(
  [
    z
      .string()
      .min(1, { error: 'must not be empty' })
      .transform((s) => s.trim() || s),
    z.number().int().safe().transform(String),
    digitsId,
  ],
  { error: 'must be a non-empty string' },
);
const crmBonusCode = z.union([z.string().transform((s) => s.trim()), z.number().int().safe().transform(String), digitsId], { error: 'must be a string' });

/**
 * Why an amount is refused: compared with 0 by its exact value (`-1e-400` is below 0, as the CRM's checker reads it:
 * src/crm/checker-numbers.ts), and refused when no double holds it (`1e400`), as the ledger keeps the amount as one.
 */
function refuseAmount(value: unknown): string | undefined {
  const refused = refuseNumber(value, 0);
  if (refused !== undefined) return refused;
  return Number.isFinite(Number(String(value))) ? undefined : 'must be a number below 1.8e308';
}
const crmAmount = z
  .custom<number | RawJson>((v) => refuseAmount(v) === undefined, { error: (issue) => refuseAmount(issue.input) })
  .meta({ type: 'number', minimum: 0 });

/** POST /bonus/credit; shaped like the funds request (no amount, no currency) so both share one path. */
export const bonusCreditSchema = z.object({ user_id: crmUserId, bonus_code: crmBonusCode }).transform((v) => ({ ...v, amount: null, currency: null }));

export const fundsCreditSchema = z.object({
  user_id: crmUserId,
  bonus_code: crmBonusCode,
  amount: crmAmount,
  currency: z.string({ error: 'must be a string' }).transform((s) => (/^[A-Za-z]{3}$/.test(s) ? s.toUpperCase() : s)),
});

/** The UK variant's body: one channel, not a list (docs/operator-api.md "Product-level consents"). */
const ukConsentSchema = z
  .object({ channel: consentTypeSchema, opted_in: z.boolean({ error: 'must be true or false' }), products: productsSchema.optional() })
  .transform(({ channel, ...rest }) => [{ type: channel, ...rest }]);

const consentListSchema = z.object({
  consents: z
    .array(consentEntrySchema, { error: 'must be an array of {opted_in, type} or one {channel, opted_in, products}' })
    .min(1, { error: 'must not be empty' }),
});
const ukConsentsSchema = z.object({ consents: ukConsentSchema });

/** POST /userconsents: the list of {opted_in, type[, products]}, or the UK one-object shape {channel, opted_in, products}. */
export const consentsUpdateSchema = z.union([consentListSchema, ukConsentsSchema]);

/** Parses either shape, chosen by what `consents` is, so an error names the field of that shape. */
export function parseConsentsUpdate(input: unknown): Parsed<{ consents: ConsentEntry[] }> {
  const consents = input !== null && typeof input === 'object' ? (input as { consents?: unknown }).consents : undefined;
  const isOne = consents !== null && typeof consents === 'object' && !Array.isArray(consents);
  return isOne ? parseBody(ukConsentsSchema, input) : parseBody(consentListSchema, input);
}

export const reconciliationRequestSchema = z.object({ field: z.string({ error: 'must be a string' }) });

/** POST /authenticate: the site session id, or a session token where operator.session_tokens is set. */
export const authenticateRequestSchema = z.object({
  sid: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).max(8_192, { error: 'must be at most 8192 characters' }),
});

/** POST /reconciliation/products (our choice of body, docs/operator-api.md "Reconciliation by product"). */
export const productReconciliationRequestSchema = z.object({
  field: z.string({ error: 'must be a string' }),
  product: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).max(100, { error: 'must be at most 100 characters' }),
});

const adminConsents = z.array(consentEntrySchema.strict(), { error: 'must be an array of {opted_in, type}' });

/**
 * When the operator's consents in this record were last changed. An sms opt-in does not replace an opt-out the
 * player made later by SMS (STOP, or a provider's STOP list); without it the player's own opt-out is kept.
 */
const consentsUpdatedAt = z.iso
  .datetime({ offset: true, error: 'must be an RFC 3339 timestamp such as 2026-11-24T08:27:58Z' })
  .transform((s) => Date.parse(s))
  .optional();

/** A user record as GET /userdetails answers it, plus what the blocks and consents answers need. */
export const adminUserSchema = z.strictObject({
  ...userRecordFields,
  /** Optional in the body of PUT /admin/users/:userid (the path names the user); required on an import line. */
  user_id: userRecordFields.user_id.optional(),
  block_note: z.string({ error: 'must be a string' }).optional(),
  exclusion_note: z.string({ error: 'must be a string' }).optional(),
  /** Replaces the user's consents when present; types not listed are opted out. */
  consents: adminConsents.optional(),
  consents_updated_at: consentsUpdatedAt,
});
export type AdminUser = z.output<typeof adminUserSchema>;

export const adminConsentsSchema = z.strictObject({ consents: adminConsents, consents_updated_at: consentsUpdatedAt });

export const adminBonusesSchema = z.array(bonusEntrySchema.strict(), { error: 'must be an array of {text, value}' }).superRefine((list, ctx) => {
  const seen = new Set<string>();
  list.forEach((b, i) => {
    if (seen.has(b.value)) ctx.addIssue({ code: 'custom', path: [i, 'value'], message: `"${b.value}" is listed twice` });
    seen.add(b.value);
  });
});

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** Validates and answers either the value or one sentence naming the first bad field. */
export function parseBody<S extends z.ZodType>(schema: S, input: unknown): Parsed<z.output<S>> {
  if (input === null || typeof input !== 'object') return { ok: false, error: 'body: must be a JSON object' };
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.map(String).join('.');
    return { ok: false, error: `${issue.keys.map((k) => (where ? `${where}.${k}` : k)).join(', ')}: unknown key` };
  }
  return { ok: false, error: describeFirstIssue(result.error, input) };
}

/**
 * A request's JSON body (src/http/json-body.ts: type, size, depth, repeated keys) checked by `schema` (`body`: the JSON
 * as sent, for a backend that passes it on; with `exactNumbers`, its numbers a double would change kept as RawJson,
 * to be written by stringifyExact); a refusal carries its status.
 */
export async function readBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  options: Pick<ReadJsonOptions, 'exactNumbers' | 'refusePrototypeKeys'> = {},
): Promise<{ ok: true; value: z.output<S>; body: unknown } | { ok: false; status: 400 | 415; error: string }> {
  const body = await readJsonBody(c, options);
  if (!body.ok) return body;
  const parsed = parseBody(schema, body.value);
  return parsed.ok ? { ok: true, value: parsed.value, body: body.value } : { ok: false, status: 400, error: parsed.error };
}
