/**
 * What a relayed event must hold, per event of the catalogue (docs/crm-interface.md §7; the bonus event record and the
 * device token message of docs/crm-interface.md). Only documented fields are checked; every other key is kept and
 * sent on (the CRM adds fields over time), which is why these objects are loose. The schemas only judge: the body
 * that goes out is the one received (src/events/accept.ts), not a parsed copy.
 */
import { z } from 'zod';
import type { EventKind } from '../crm/event-catalogue.js';

const text = (what = 'a string') => z.string({ error: `must be ${what}` });
const id = text().trim().min(1, { error: 'must not be empty' });
const number = z.number({ error: 'must be a number' }).finite();
const timestamp = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp such as 2026-11-24T10:00:00+01:00' });

/** ISO 4217 codes as the runtime's ICU knows them (Node 20: the active codes). */
const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));
const currency = text().refine((c) => CURRENCIES.has(c), { error: 'must be an ISO 4217 currency code such as EUR' });

export const BONUS_STATUSES = ['Pending', 'Created', 'Ongoing', 'Completed', 'AutoCompleted', 'Forfeited', 'Expired', 'Lost', 'Reversed'] as const;
export const BONUS_TYPES = ['NoDeposit', 'WelcomeBonus', 'CashbackBonus', 'ReloadBonus', 'WagerFree', 'FreeSpins', 'RiskFreeBet', 'Undefined'] as const;
export const BONUS_PRODUCTS = ['Casino', 'Sportsbook', 'Lotto', 'Poker'] as const;

const oneOf = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: `must be one of ${values.join(', ')}` });

/** user_id, timestamp and origin: the thin events carry only these (docs/crm-interface.md §7, "deliberately thin"). */
const thin = { user_id: id, timestamp, origin: text() };
const client = { user_agent: text().optional(), ip_address: text().optional() };

const bonus = z.looseObject({
  ...thin,
  amount: number,
  bonus_code: text().optional(),
  bonus_id: id,
  bonus_turned_real: number.optional(),
  currency,
  exchange_rate: number,
  locked_amount: number.optional(),
  meta: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]), { error: 'must be an object of string, number or boolean values' }).optional(),
  product: oneOf(BONUS_PRODUCTS),
  required_wagering_amount: number.optional(),
  status: oneOf(BONUS_STATUSES),
  type: oneOf(BONUS_TYPES),
  user_bonus_id: id,
  crm_references: z.looseObject({}, { error: 'must be an object' }).optional(),
  /** Ours, not the CRM's: the credit whose references to attach (the id POST /bonus/credit answered). Removed before sending. */
  credit_id: z.union([id, z.number().int().safe().transform(String)], { error: 'must be a non-empty string' }).optional(),
});

const device = z.looseObject({
  ...thin,
  tokens: z
    .array(
      z.looseObject({ token: id, channel: oneOf(['android', 'ios', 'web'] as const), provider: text() }, { error: 'must be an object' }),
      { error: 'must be an array of {token, channel, provider}' },
    )
    .min(1, { error: 'must not be empty' }),
});

export const relaySchemas: ReadonlyMap<EventKind, z.ZodType> = new Map<EventKind, z.ZodType>([
  ['bonus', bonus],
  ['registration', z.looseObject({ ...thin, ...client, note: text().optional() })],
  ['login', z.looseObject({ ...thin, ...client, is_impersonated: z.boolean({ error: 'must be true or false' }).optional() })],
  ['user_update', z.looseObject(thin)],
  ['user_consents', z.looseObject(thin)],
  ['user_blocks', z.looseObject(thin)],
  ['custom', z.looseObject({ ...thin, ...client, notification_type: id, data: z.record(z.string(), z.string(), { error: 'must be an object of string values' }) })],
  [
    'balance',
    z.looseObject({
      ...thin,
      balances: z.array(
        z.looseObject({ amount: number, currency, key: oneOf(['real_money', 'bonus_money'] as const), exchange_rate: number }, { error: 'must be an object' }),
        { error: 'must be an array of {amount, currency, key, exchange_rate}' },
      ),
    }),
  ],
  ['device_link', device],
  ['device_unlink', device],
]);

export type BonusEventInput = z.output<typeof bonus>;
