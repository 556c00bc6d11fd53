/**
 * The answers the CRM validates strictly (docs/crm-interface.md §1, §2, §3; docs/crm-interface.md "Resources"). Both backends
 * produce values of these shapes: the sql backend from what the admin API stored, the http backend by parsing the
 * operator platform's answer, which turns any mismatch into a 502 naming the field.
 */
import { z } from 'zod';
import { CRM_SEX_VALUES } from './contract.js';
import { isNumberValue } from './checker-numbers.js';
import { RawJson } from '../kit/raw-json.js';

/** Case-sensitive, and every one appears in each GET answer (docs/crm-interface.md §1.1). */
export const CONSENT_TYPES = ['email', 'sms', 'telephone', 'postMail', 'siteNotification', 'pushNotification'] as const;
export type ConsentType = (typeof CONSENT_TYPES)[number];

const text = z.string({ error: 'must be a string' });
/** "Required" means the key is present; an unknown value is sent as "" (docs/crm-interface.md §2.1). */
const formatted = (pattern: RegExp, message: string) => text.refine((s) => s === '' || pattern.test(s), { error: message });
const isoDate = z.iso.date();
const emailFormat = z.email();
const timestamp = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp such as 2015-03-02T08:27:58Z' });
/** verified_at: the CRM requires the key; "", null or a missing key all mean "not verified" and are answered "". */
const verifiedAt = z
  .union([timestamp, z.literal(''), z.null()], { error: 'must be an RFC 3339 timestamp such as 2015-03-02T08:27:58Z, or ""' })
  .optional()
  .transform((v) => v ?? '');
/**
 * deleted_at is not in the CRM's list of keys (docs/operator-api.md): it is sent only for a deleted player, so
 * null or "" leave it out. The pipe states the output (an optional timestamp) for the OpenAPI document.
 */
const deletedAt = z
  .union([timestamp, z.literal(''), z.null()], { error: 'must be an RFC 3339 timestamp such as 2015-03-02T08:27:58Z' })
  .optional()
  .transform((v) => v || undefined)
  .pipe(timestamp.optional());

/**
 * A number a double would change arrives as RawJson (the http backend reads the platform's answer with parseExact,
 * src/http/exact-json.ts) and is answered as written; the CRM's schema sees a number either way.
 */
const exactNumber = z.custom<RawJson>((v) => v instanceof RawJson && isNumberValue(v)).meta({ type: 'number' });
const segmentationValue = z.union([z.string(), z.number(), exactNumber, z.boolean()]);

export const userRecordFields = {
  user_id: text.min(1, { error: 'must not be empty' }),
  username: text.min(3, { error: 'must be 3 to 255 characters' }).max(255, { error: 'must be 3 to 255 characters' }),
  first_name: text,
  last_name: text,
  title: text,
  sex: z.enum(CRM_SEX_VALUES, { error: `must be one of ${CRM_SEX_VALUES.filter(Boolean).join(', ')} or ""` }),
  birth_date: text.refine((s) => s === '' || isoDate.safeParse(s).success, { error: 'must be a date YYYY-MM-DD' }),
  email: text.refine((s) => s === '' || emailFormat.safeParse(s).success, { error: 'must be an e-mail address or ""' }),
  mobile: text,
  mobile_prefix: formatted(/^\+\d{1,4}$/, 'must be a plus sign and digits, such as +356'),
  address: text,
  city: text,
  postal_code: text,
  country: formatted(/^[A-Z]{2}$/, 'must be an ISO 3166 alpha-2 code such as MT'),
  currency: text,
  language: text,
  market: text,
  origin: text,
  registration_code: text,
  registration_date: timestamp,
  affiliate_reference: text,
  roles: z.array(text, { error: 'must be an array of strings' }),
  is_blocked: z.boolean({ error: 'must be true or false' }),
  is_excluded: z.boolean({ error: 'must be true or false' }),
  verified_at: verifiedAt,
  deleted_at: deletedAt,
  segmentation: z
    .record(z.string(), segmentationValue, { error: 'must be an object of string, number or boolean values' })
    .nullish()
    .transform((v) => v ?? undefined)
    .pipe(z.record(z.string(), segmentationValue).optional())
    .refine((s) => s?.custom_segment === undefined || typeof s.custom_segment === 'string', { error: 'custom_segment: must be a string' }),
};

/** Unknown keys are dropped: the CRM refuses a key outside its list (crm-contract.ts). */
export const userRecordSchema = z.object(userRecordFields);
export type UserRecord = z.output<typeof userRecordSchema>;

/** Other platforms spell the types `Email`, `SMS`…; they are matched without regard to case and answered exactly. */
export const consentTypeSchema = z.preprocess(
  (v) => (typeof v === 'string' ? (CONSENT_TYPES.find((t) => t.toLowerCase() === v.toLowerCase()) ?? v) : v),
  z.enum(CONSENT_TYPES, { error: `must be one of ${CONSENT_TYPES.join(', ')}` }),
);

/** UK product-level consents (docs/operator-api.md "Product-level consents"): opted in for these products only. */
export const productsSchema = z
  .array(z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).max(100, { error: 'must be at most 100 characters' }), {
    error: 'must be an array of product names',
  })
  .max(100, { error: 'must list at most 100 products' });

export const consentEntrySchema = z.object({
  opted_in: z.boolean({ error: 'must be true or false' }),
  type: consentTypeSchema,
  products: productsSchema.optional(),
});
export type ConsentEntry = z.output<typeof consentEntrySchema>;

/** The shape of a GET /userconsents answer, for the OpenAPI document; consentsRecordSchema adds the rules. */
export const consentsAnswerSchema = z.object({
  consents: z.array(consentEntrySchema, { error: 'must be an array' }).describe('All six types, each once, in the order of the docs'),
});

/** GET /userconsents answer: all six types, each once, in the order of the docs. */
export const consentsRecordSchema = consentsAnswerSchema
  .superRefine((r, ctx) => {
    for (const type of CONSENT_TYPES) {
      const count = r.consents.filter((c) => c.type === type).length;
      if (count !== 1) ctx.addIssue({ code: 'custom', path: ['consents'], message: `must list type ${type} exactly once (found ${count})` });
    }
  })
  .transform((r) => ({ consents: CONSENT_TYPES.map((type) => r.consents.find((c) => c.type === type)!) }));
export type ConsentsRecord = z.output<typeof consentsRecordSchema>;

export const BLOCK_TYPES = ['Blocked', 'Excluded'] as const;
export const blocksRecordSchema = z.object({
  blocks: z.array(
    z.object({
      active: z.boolean({ error: 'must be true or false' }),
      type: z.enum(BLOCK_TYPES, { error: 'must be Blocked or Excluded' }),
      note: text,
    }),
    { error: 'must be an array' },
  ),
});
export type BlocksRecord = z.output<typeof blocksRecordSchema>;

export const bonusEntrySchema = z.object({ text, value: text.min(1, { error: 'must not be empty' }) });

/** GET /bonus/list wrapper; the docs leave the elements of Errors open, so any values pass through. */
export const bonusListSchema = z.object({
  Data: z.array(bonusEntrySchema, { error: 'must be an array' }),
  Success: z.boolean({ error: 'must be true or false' }),
  Errors: z.array(z.unknown(), { error: 'must be an array' }),
});
export type BonusList = z.output<typeof bonusListSchema>;

/** The eight reconciliation keys (docs/crm-interface.md "POST /reconciliation") and what each one selects. */
export const RECONCILIATION_FIELDS = {
  blocked: { flag: 'is_blocked' },
  excluded: { flag: 'is_excluded' },
  consent_email: { consent: 'email' },
  consent_sms: { consent: 'sms' },
  consent_telephone: { consent: 'telephone' },
  consent_post_mail: { consent: 'postMail' },
  consent_site_notification: { consent: 'siteNotification' },
  consent_push_notification: { consent: 'pushNotification' },
} as const satisfies Record<string, { flag: 'is_blocked' | 'is_excluded' } | { consent: ConsentType }>;
export type ReconciliationField = keyof typeof RECONCILIATION_FIELDS;

export function isReconciliationField(value: string): value is ReconciliationField {
  return Object.hasOwn(RECONCILIATION_FIELDS, value);
}
