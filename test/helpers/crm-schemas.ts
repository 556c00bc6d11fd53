/**
 * The CRM's required answer shapes, written again from docs/crm-interface.md for the
 * tests alone: deliberately separate from src/crm/shapes.ts, so a mistake there cannot hide here.
 * Strict objects: an answer with a key the docs do not list fails.
 */
import { z } from 'zod';

const rfc3339 = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);

export const crmUserDetails = z.strictObject({
  user_id: z.string().min(1),
  username: z.string().min(3).max(255),
  first_name: z.string(),
  last_name: z.string(),
  title: z.string(),
  sex: z.enum(['male', 'female', 'other', 'Male', 'Female', 'Other', '']),
  birth_date: z.string().regex(/^(\d{4}-\d{2}-\d{2})?$/),
  email: z.string().regex(/^([^@\s]+@[^@\s]+\.[^@\s]+)?$/),
  mobile: z.string(),
  mobile_prefix: z.string().regex(/^(\+\d+)?$/),
  address: z.string(),
  city: z.string(),
  postal_code: z.string(),
  country: z.string().regex(/^([A-Z]{2})?$/),
  currency: z.string(),
  language: z.string(),
  market: z.string(),
  origin: z.string(),
  registration_code: z.string(),
  registration_date: rfc3339,
  affiliate_reference: z.string(),
  roles: z.array(z.string()),
  is_blocked: z.boolean(),
  is_excluded: z.boolean(),
  verified_at: z.union([rfc3339, z.literal('')]),
  /** Not in the CRM's list: present only for a deleted player. */
  deleted_at: rfc3339.optional(),
  segmentation: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
});

const SIX = ['email', 'sms', 'telephone', 'postMail', 'siteNotification', 'pushNotification'];
export const crmConsents = z
  .strictObject({ consents: z.array(z.strictObject({ opted_in: z.boolean(), type: z.enum(SIX), products: z.array(z.string()).optional() })) })
  .refine((r) => r.consents.length === 6 && SIX.every((t) => r.consents.some((c) => c.type === t)), 'all six consent types, once each');

export const crmBlocks = z.strictObject({
  blocks: z.array(z.strictObject({ active: z.boolean(), type: z.enum(['Blocked', 'Excluded']), note: z.string() })),
});

export const crmBonusList = z.strictObject({
  Data: z.array(z.strictObject({ text: z.string(), value: z.string() })),
  Success: z.boolean(),
  Errors: z.array(z.string()),
});

export const crmReconciliation = z.strictObject({ users: z.array(z.string()), timestamp: rfc3339 });

export const crmToken = z.strictObject({ access_token: z.string().min(1), expires_in: z.number().int().positive(), token_type: z.literal('Bearer') });

/** The gateway's own error answers outside the operator API (/admin): one sentence. */
export const adminErrorBody = z.strictObject({ error: z.string().min(1) });

/** The CRM's error schema: these two keys and no other. */
export const errorBody = z.strictObject({ error: z.string().min(1), code: z.number().int() });

/** A complete user record as the docs' examples show one. */
export function sampleUser(userId: string, overrides: Record<string, unknown> = {}) {
  return {
    user_id: userId,
    username: 'PirateTony34',
    first_name: 'Tony',
    last_name: 'Pirate',
    title: 'Mr',
    sex: 'Male',
    birth_date: '1992-03-02',
    email: 'tony@example.com',
    mobile: '21435678',
    mobile_prefix: '+356',
    address: '1 Harbour Street',
    city: 'Valletta',
    postal_code: 'VLT 1000',
    country: 'MT',
    currency: 'EUR',
    language: 'en',
    market: 'gb',
    origin: 'sub.example.com',
    registration_code: 'ABC123',
    registration_date: '2015-03-02T08:27:58.721607Z',
    affiliate_reference: 'AFF_1234A_UK',
    roles: ['VIP', 'TEST_USER'],
    is_blocked: false,
    is_excluded: false,
    verified_at: '',
    ...overrides,
  };
}
