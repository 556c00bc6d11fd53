/**
 * What the CRM itself validates in the operator API's answers (docs/operator-api.md "The CRM's schemas"), as
 * plain zod schemas with no transforms: the OpenAPI document shows them, and the contract suite converts them to
 * JSON Schema draft-07 and checks every live answer with ajv (test/contract/). The parsing schemas in
 * crm-shapes.ts turn what the admin API, `import users` or the operator's platform give into values that pass
 * these; these only describe the result.
 */
import { z } from 'zod';

export const CRM_SEX_VALUES = ['male', 'female', 'other', 'Male', 'Female', 'Other', ''] as const;
export const CRM_CONSENT_TYPES = ['email', 'sms', 'telephone', 'postMail', 'siteNotification', 'pushNotification'] as const;

const dateTime = z.iso.datetime({ offset: true });
const orEmpty = <T extends z.ZodType>(schema: T) => z.union([schema, z.literal('')]);
const free = z.string();

/** GET /userdetails/:userid: every key required but segmentation and deleted_at, and no key beyond these. */
export const crmUserDetailsSchema = z.strictObject({
  user_id: z.string().min(1),
  username: z.string().min(3).max(255),
  first_name: free,
  last_name: free,
  title: free,
  sex: z.enum(CRM_SEX_VALUES),
  birth_date: orEmpty(z.iso.date()),
  email: orEmpty(z.email()),
  mobile: free,
  mobile_prefix: free,
  address: free,
  city: free,
  postal_code: free,
  country: free,
  currency: free,
  language: free,
  market: free,
  origin: free,
  registration_code: free,
  registration_date: dateTime,
  affiliate_reference: free,
  roles: z.array(z.string()),
  is_blocked: z.boolean(),
  is_excluded: z.boolean(),
  verified_at: orEmpty(dateTime).describe('"" when the player is not verified or the time is unknown; never absent, never null'),
  deleted_at: dateTime.optional().describe('Present only for a deleted player, and only with operator.send_deleted_at on'),
  segmentation: z.looseObject({ custom_segment: z.string().optional() }).optional(),
});

export const crmUserBlocksSchema = z.strictObject({
  blocks: z.array(z.strictObject({ active: z.boolean(), type: z.enum(['Blocked', 'Excluded']), note: z.string() })),
});

/** Entries may carry more than opted_in and type (the UK variant's products); the top level may not. */
export const crmUserConsentsSchema = z.strictObject({
  consents: z.array(
    z.looseObject({
      opted_in: z.boolean(),
      type: z.enum(CRM_CONSENT_TYPES),
      products: z.array(z.string()).optional().describe('UK product-level consents: opted in for these products only'),
    }),
  ),
});

export const crmBonusListSchema = z.strictObject({
  Data: z.array(z.strictObject({ text: z.string(), value: z.string() })),
  Success: z.boolean(),
  Errors: z.array(z.string()),
});

/** Every error answer of the operator API. `code` is the HTTP status, or a code of docs/operator-api.md "Error codes". */
export const crmErrorSchema = z.strictObject({
  error: z.string().describe('What is wrong, naming the field or value'),
  code: z.number().int().describe('The HTTP status, or a stable code listed in docs/operator-api.md'),
});
