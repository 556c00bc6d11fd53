/**
 * The CRM's real-time event catalogue as one table of data (docs/events.md lists it): per event kind, the queue type
 * name (RabbitMQ property `type`, Kafka header `type`), the Integration API method and path, whether those defaults
 * are documented, and the rules of the CRM maker's schema of the kind (src/crm/event-rules.ts), applied at the
 * relay's door the way the CRM's checker applies them: what it would refuse is refused there, what it takes is
 * taken. Every other key is passed through untouched: no event schema of the CRM forbids extra keys.
 *
 * The defaults are only defaults: the CRM hands each operator its own Swagger, so `crm.integration.events.<kind>`
 * overrides method, path and queue type name (resolveCatalogue below).
 */
import { z } from 'zod';
import { RawJson } from '../kit/raw-json.js';
import * as r from './event-rules.js';
import type { Rule, Shape } from './event-rules.js';

// ---- today's checks of the kinds the maker has no schema for (logout, device link and unlink, push conversions) ----
const text = (what = 'a string') => z.string({ error: `must be ${what}` });
const id = text().trim().min(1, { error: 'must not be empty' });
const bool = z.boolean({ error: 'must be true or false' });
const dateTime = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time such as 2026-11-24T10:00:00+01:00' });
const object = r.looseObject({}, 'must be an object');
const meta = z.union([z.record(z.string(), z.unknown()), z.null()], { error: 'must be an object or null' });
const ip = z.union([z.ipv4(), z.ipv6()], { error: 'must be an IPv4 or IPv6 address' });
const oneOf = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: `must be one of ${values.join(', ')}` });
const listOf = (entry: z.ZodType, what: string) => z.array(entry, { error: `must be an array of ${what}` });

export const BONUS_STATUSES = [
  'Pending',
  'Created',
  'Ongoing',
  'Completed',
  'AutoCompleted',
  'Forfeited',
  'Expired',
  'Lost',
  'Reversed',
  'Claimed',
  'NotApplicable',
] as const;
export const BONUS_PRODUCTS = ['Casino', 'Sportsbook', 'Lotto', 'Poker'] as const;
export const PUSH_ACTIONS = ['delivered', 'read', 'clicked'] as const;
const APPROVED_ROLLBACK = ['Approved', 'Rollback'] as const;

type Fields = Record<string, z.ZodType>;

/** A present key of any type: a required key whose type the CRM's schema does not fix. */
const present = z.custom<unknown>((v) => v !== undefined, { error: 'is required' });

function buildSchema(required: readonly string[], fields: Fields): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, check] of Object.entries(fields)) shape[key] = required.includes(key) ? check : check.optional();
  for (const key of required) shape[key] ??= present;
  return r.looseObject(shape, 'must be an object');
}

/** An entry of a nested list, built from the same row shape as an event (required keys plus checks). */
const entry = (required: readonly string[], fields: Fields) => buildSchema(required, fields);

const legacyCommon: Fields = { meta, skip_publishing: bool, is_free_money: bool };
const thin = ['user_id', 'timestamp', 'origin'] as const;
const thinFields: Fields = { user_id: id, timestamp: dateTime, origin: text() };

export type EventKind =
  | 'bonus'
  | 'registration'
  | 'login'
  | 'logout'
  | 'user_update'
  | 'user_consents'
  | 'user_blocks'
  | 'user_migration'
  | 'user_migration_approve'
  | 'user_tag'
  | 'custom'
  | 'balance'
  | 'payment'
  | 'casino'
  | 'sportsbook'
  | 'lottery'
  | 'lottery_tickets'
  | 'cart'
  | 'game'
  | 'poker_cash_game_buy_in'
  | 'poker_cash_game_cash_out'
  | 'poker_tournament_buy_in'
  | 'poker_tournament_cash_out'
  | 'device_link'
  | 'device_unlink'
  | 'push_conversion';

/**
 * How a relayed event reaches the CRM: `integration` goes over the configured transport (REST, RabbitMQ or
 * Kafka); `push_webhook` is the push conversion webhook of the interface, always HTTP with Basic auth.
 */
export type EventChannel = 'integration' | 'push_webhook';

export interface CatalogueRow {
  kind: EventKind;
  /** The queue type name; also the name the outbox stores the event under (the row's `type`). */
  type: string;
  method: 'POST' | 'PUT';
  path: string;
  /** Which defaults the CRM documents; the others are our guesses, listed in docs/events.md. */
  confirmed: { path: boolean; type: boolean };
  /** The queue type name when it differs from `type` (the older lottery format shares LOTTERY_V2's). */
  queueType?: string;
  /** The rules of the maker's schema of this kind; absent for the kinds it has none for. */
  rules?: Shape;
  /** Without `rules`: the required keys of today's checks. */
  required: readonly string[];
  /** Without `rules`: today's checks of documented keys; with them, checks of keys that are ours (bonus credit_id). */
  fields: Fields;
  /** The key whose value orders events (one at a time per value); user_id unless said. */
  orderKey?: (body: Record<string, unknown>) => string;
  channel?: EventChannel;
}

const device: Pick<CatalogueRow, 'required' | 'fields'> = {
  required: [...thin, 'tokens'],
  fields: {
    ...thinFields,
    tokens: listOf(
      entry(['token', 'channel', 'provider'], { token: id, channel: oneOf(['android', 'ios', 'web'] as const), provider: text() }),
      '{token, channel, provider}',
    ).min(1, {
      error: 'must not be empty',
    }),
  },
};

/** A kind the maker has a schema for: its rules are its checks. */
const schemaRow = (kind: EventKind, type: string, method: 'POST' | 'PUT', path: string, confirmedPath: boolean, rules: Shape): CatalogueRow => ({
  kind,
  type,
  method,
  path,
  confirmed: { path: confirmedPath, type: true },
  rules,
  required: [],
  fields: {},
});

const legacyThinRow = (kind: EventKind, type: string, method: 'POST' | 'PUT', path: string, confirmedPath: boolean, extra: Fields): CatalogueRow => ({
  kind,
  type,
  method,
  path,
  confirmed: { path: confirmedPath, type: true },
  required: [...thin],
  fields: { ...legacyCommon, ...thinFields, ...extra },
});

const legacyLogin: Fields = { is_impersonated: bool, is_verified: bool, ip_address: ip, user_agent: text(), user_details: object };

const APPROVED_ROLLBACK_RULE = r.oneOf(APPROVED_ROLLBACK);
/** user_id, timestamp and origin: the three keys every player event of the CRM requires. */
const thinRules = { user_id: r.nonEmpty, timestamp: r.dateTime, origin: r.str };
const thinShape = (fields: Record<string, Rule> = {}, required: string[] = []): Shape => ({
  required: ['user_id', 'timestamp', 'origin', ...required],
  fields: { ...thinRules, ...fields },
});
/** The cash game schemas list currency and exchange_rate as required without a type: any value passes there. */
const pokerCashGame: Shape = {
  required: ['currency', 'exchange_rate', 'status', 'timestamp', 'user_id'],
  fields: { user_id: r.nonEmpty, timestamp: r.dateTime, status: APPROVED_ROLLBACK_RULE },
};
const pokerTournament: Shape = {
  required: pokerCashGame.required,
  fields: { ...pokerCashGame.fields, currency: r.str, exchange_rate: r.atLeastZero },
};

/**
 * The table. One row per kind; nothing about an event is written anywhere else. `rules` are the facts of the
 * maker's schema of the kind (src/crm/event-rules.ts says how the CRM's checker reads them); `fields` are checks
 * of keys that are ours (bonus `credit_id`), or, for the kinds the maker has no schema for (logout, device link
 * and unlink, push conversions), the checks the relay has always made.
 */
export const eventCatalogue: readonly CatalogueRow[] = [
  {
    kind: 'bonus',
    type: 'BONUS',
    method: 'POST',
    path: '/v1/integration/bonus',
    confirmed: { path: true, type: true },
    rules: {
      required: ['amount', 'bonus_id', 'currency', 'exchange_rate', 'origin', 'product', 'status', 'timestamp', 'type', 'user_bonus_id', 'user_id'],
      fields: {
        amount: r.atLeastZero,
        bonus_code: r.str,
        bonus_id: r.nonEmpty,
        bonus_turned_real: r.atLeastZero,
        currency: r.str,
        exchange_rate: r.atLeastZero,
        locked_amount: r.atLeastZero,
        meta: r.objectOrNull,
        origin: r.str,
        product: r.oneOf(BONUS_PRODUCTS),
        required_wagering_amount: r.atLeastZero,
        status: r.oneOf(BONUS_STATUSES),
        timestamp: r.dateTime,
        // Any non-empty string: the interface's list of bonus types is examples.
        type: r.nonEmpty,
        user_bonus_id: r.nonEmpty,
        user_id: r.nonEmpty,
        skip_publishing: r.bool,
        is_free_money: r.bool,
      },
    },
    required: [],
    fields: {
      crm_references: object,
      // Ours, not the CRM's: the credit whose references to attach (the id POST /bonus/credit answered); removed before sending.
      // A number a double would change (RawJson) is read as its text: it then names no credit, and the 400 says so.
      credit_id: z.union([id, z.number().int().safe().transform(String), z.instanceof(RawJson).meta({ type: 'integer' }).transform(String)], {
        error: 'must be a non-empty string',
      }),
    },
  },
  schemaRow('registration', 'USER_CREATE_V2', 'POST', '/v2/integration/user', true, thinShape({ note: r.str, user_agent: r.str, ip_address: r.str })),
  schemaRow(
    'login',
    'LOGIN_V2',
    'POST',
    '/v2/integration/login',
    true,
    thinShape({
      // "ipv4,ipv6" is no format the checker knows: any string passes, the empty one included.
      ip_address: r.unknownFormat,
      is_impersonated: r.bool,
      is_verified: r.bool,
      // An object only here (null is refused), unlike the other events' meta.
      meta: r.object,
      skip_publishing: r.bool,
      user_agent: r.str,
      user_details: r.object,
    }),
  ),
  // Not in the CRM's docs nor its schemas: both defaults are guesses built like LOGIN_V2, and so are its checks (docs/events.md).
  { ...legacyThinRow('logout', 'LOGOUT_V2', 'POST', '/v2/integration/logout', false, legacyLogin), confirmed: { path: false, type: false } },
  schemaRow('user_update', 'USER_UPDATE_V2', 'PUT', '/v2/integration/user', true, thinShape()),
  schemaRow('user_consents', 'USER_CONSENTS_V2', 'PUT', '/v2/integration/user/consents', true, thinShape()),
  schemaRow('user_blocks', 'USER_BLOCK_V2', 'PUT', '/v2/integration/user/blocks', true, thinShape()),
  schemaRow(
    'user_migration',
    'USER_MIGRATION',
    'POST',
    '/v2/integration/user/migration',
    false,
    thinShape({ migration_reference: r.str, skip_publishing: r.bool }, ['migration_reference']),
  ),
  schemaRow(
    'user_migration_approve',
    'USER_MIGRATION_APPROVE',
    'POST',
    '/v2/integration/user/migration/approve',
    false,
    thinShape({ skip_publishing: r.bool }),
  ),
  schemaRow('user_tag', 'USER_TAG', 'POST', '/v2/integration/user/tags', false, thinShape({ tags: r.str, skip_publishing: r.bool }, ['tags'])),
  schemaRow(
    'custom',
    'CUSTOM',
    'POST',
    '/v1/integration/custom',
    true,
    thinShape({ data: r.object, ip_address: r.unknownFormat, notification_type: r.nonEmpty, origin: r.nonEmpty, user_agent: r.str }, [
      'data',
      'notification_type',
    ]),
  ),
  schemaRow(
    'balance',
    'USER_BALANCES_UPDATE',
    'POST',
    '/v1/integration/user/balances',
    true,
    thinShape(
      {
        balances: r.listOf(
          r.entryOf(['amount', 'currency', 'key', 'exchange_rate'], {
            amount: r.atLeastZero,
            currency: r.str,
            exchange_rate: r.atLeastZero,
            key: r.oneOf(['real_money', 'bonus_money']),
          }),
        ),
      },
      ['balances'],
    ),
  ),
  schemaRow('payment', 'PAYMENT', 'POST', '/v1/integration/payment', true, {
    required: ['amount', 'currency', 'origin', 'payment_id', 'status', 'timestamp', 'type', 'user_id', 'vendor_id'],
    fields: {
      amount: r.atLeastZero,
      bonus_code: r.str,
      currency: r.str,
      deposit_count: r.atLeastZero,
      exchange_rate: r.atLeastZero,
      fee_amount: r.atLeastZero,
      // An object only here (null is refused), unlike the other events' meta.
      meta: r.object,
      note: r.str,
      origin: r.nonEmpty,
      payment_id: r.stringOrNumber,
      skip_publishing: r.bool,
      status: r.oneOf(['Approved', 'Cancelled', 'Rejected', 'Requested', 'Rollback']),
      timestamp: r.dateTime,
      type: r.oneOf(['Authorization', 'Capture', 'Credit', 'Debit', 'Void']),
      user_id: r.nonEmpty,
      // A number must be 0 or more; a string is never compared.
      vendor_id: { type: 'string-or-number', minimum: 0 },
      vendor_name: r.str,
      withdraw_count: r.atLeastZero,
    },
  }),
  schemaRow('casino', 'CASINO', 'POST', '/v1/integration/casino', true, {
    required: [
      'activity_id',
      'amount',
      'currency',
      'exchange_rate',
      'game_id',
      'game_name',
      'is_round_end',
      'origin',
      'round_id',
      'status',
      'timestamp',
      'type',
      'user_id',
      'vendor_id',
    ],
    fields: {
      activity_id: r.str,
      amount: r.atLeastZero,
      balance_after: r.num,
      balance_before: r.num,
      bonus_wager_amount: r.atLeastZero,
      currency: r.str,
      exchange_rate: r.atLeastZero,
      game_id: r.stringOrNumber,
      game_name: r.nonEmpty,
      game_type: r.str,
      is_round_end: r.bool,
      locked_wager_amount: r.atLeastZero,
      meta: r.objectOrNull,
      origin: r.nonEmpty,
      round_id: r.nonEmpty,
      skip_publishing: r.bool,
      status: APPROVED_ROLLBACK_RULE,
      timestamp: r.dateTime,
      type: r.oneOf(['Bet', 'Win']),
      user_id: r.nonEmpty,
      vendor_id: r.stringOrNumber,
      vendor_name: r.str,
      wager_amount: r.num,
      is_free_money: r.bool,
    },
  }),
  schemaRow('sportsbook', 'SPORTSBOOK', 'POST', '/v1/integration/sports', true, {
    required: ['amount', 'bet_type', 'bets', 'currency', 'exchange_rate', 'odds', 'origin', 'status', 'timestamp', 'user_id'],
    fields: {
      activity_id: r.str,
      activity_id_reference: r.str,
      amount: r.atLeastZero,
      balance_after: r.num,
      balance_before: r.num,
      bet_type: r.oneOf(['Single', 'Multi', 'System', 'Teaser']),
      bets: r.listOf(
        r.entryOf(['event_name', 'match_start', 'odds'], {
          event_name: r.str,
          is_free_bet: r.bool,
          is_live: r.bool,
          is_risk_free_bet: r.bool,
          market: r.str,
          match_start: r.dateTime,
          meta: r.objectOrNull,
          odds: r.num,
          outcomes: r.listOf(r.entryOf(['criterion_name', 'outcome_label'], { criterion_name: r.str, meta: r.objectOrNull, outcome_label: r.str })),
          sports_name: r.str,
          tournament_name: r.str,
        }),
      ),
      bonus_wager_amount: r.num,
      currency: r.str,
      device_type: r.str,
      exchange_rate: r.atLeastZero,
      is_cashout: r.bool,
      locked_wager_amount: r.num,
      meta: r.objectOrNull,
      odds: r.num,
      origin: r.str,
      reference_bet_amount: r.num,
      reference_bet_real_amount: r.num,
      reference_bet_bonus_amount: r.num,
      reference_bet_locked_amount: r.num,
      reference_bet_exchange_rate: r.num,
      settlement_type: r.str,
      skip_publishing: r.bool,
      sportsbook_vendor_name: r.str,
      status: APPROVED_ROLLBACK_RULE,
      timestamp: r.dateTime,
      type: r.oneOf(['Bet', 'Settlement']),
      user_id: r.nonEmpty,
      wager_amount: r.num,
    },
  }),
  schemaRow('lottery', 'LOTTERY_V2', 'POST', '/v2/integration/lottery', true, {
    required: ['amount', 'currency', 'exchange_rate', 'lines', 'origin', 'timestamp', 'type', 'user_id'],
    fields: {
      amount: r.atLeastZero,
      bonus_code: r.str,
      currency: r.str,
      device_type: r.str,
      discount_amount: r.atLeastZero,
      draw_date: r.dateTime,
      draw_id: r.digits,
      draw_numbers: r.listOf(r.num),
      draw_special_numbers: r.listOf(r.num),
      exchange_rate: r.atLeastZero,
      lines: r.listOf(
        r.entryOf(['line_id'], {
          is_free_bet: r.bool,
          is_quick_pick: r.bool,
          is_winning_line: r.bool,
          line_id: r.num,
          matched_numbers: r.listOf(r.num),
          matched_special_numbers: r.listOf(r.num),
          meta: r.objectOrNull,
          numbers: r.listOf(r.num),
          special_numbers: r.listOf(r.num),
        }),
      ),
      lottery_id: r.digits,
      lottery_name: r.str,
      lottery_type: r.str,
      meta: r.objectOrNull,
      origin: r.str,
      skip_publishing: r.bool,
      ticket_id: r.digits,
      timestamp: r.dateTime,
      type: r.oneOf(['Bet', 'Settlement']),
      user_id: r.nonEmpty,
    },
  }),
  // The older whole-purchase format, with tickets (docs/events.md: it carries the LOTTERY_V2
  // queue type name too). Stored under a name of its own, so a stored event always finds its own route.
  {
    ...schemaRow('lottery_tickets', 'LOTTERY', 'POST', '/v1/integration/lottery', true, {
      required: [
        'account_amount',
        'amount',
        'bonus_amount',
        'bonus_code',
        'currency',
        'deposit_amount',
        'exchange_rate',
        'origin',
        'status',
        'tickets',
        'timestamp',
        'transaction_id',
        'user_id',
      ],
      fields: {
        timestamp: r.dateTime,
        transaction_id: r.str,
        user_id: r.nonEmpty,
        amount: r.atLeastZero,
        account_amount: r.num,
        bonus_amount: r.num,
        bonus_code: r.str,
        currency: r.str,
        deposit_amount: r.num,
        exchange_rate: r.atLeastZero,
        origin: r.str,
        status: r.oneOf(['Approved', 'Rejected']),
        tickets: r.listOf(
          r.entryOf(['ticket_id', 'product', 'product_name', 'amount', 'lines_count', 'draws'], {
            ticket_id: r.str,
            product: r.str,
            product_name: r.str,
            amount: r.atLeastZero,
            lines_count: r.num,
            draws: r.listOf(r.entryOf(['timestamp'], { timestamp: r.dateTime })),
          }),
        ),
      },
    }),
    queueType: 'LOTTERY_V2',
  },
  schemaRow('cart', 'CART', 'POST', '/v1/integration/cart', true, {
    required: [
      'amount',
      'cart_id',
      'currency',
      'discount_amount',
      'status',
      'timestamp',
      'type',
      'user_id',
      'device_type',
      'exchange_rate',
      'origin',
      'payments',
      'items',
    ],
    fields: {
      amount: r.atLeastZero,
      bonus_code: r.str,
      cart_id: r.atLeastZero,
      currency: r.str,
      // `unkown` (sic) is how the CRM's schema spells it.
      device_type: r.oneOf(['desktop', 'mobile', 'tablet', 'unkown']),
      discount_amount: r.atLeastZero,
      exchange_rate: r.atLeastZero,
      items: r.listOf(
        r.entryOf(['id', 'type', 'name', 'description', 'amount', 'discount_amount', 'bonus_code'], {
          amount: r.atLeastZero,
          bonus_code: r.str,
          description: r.str,
          discount_amount: r.atLeastZero,
          id: r.atLeastZero,
          meta: r.objectOrNull,
          name: r.nonEmpty,
          type: r.nonEmpty,
        }),
      ),
      meta: r.objectOrNull,
      origin: r.nonEmpty,
      payments: r.listOf(r.entryOf(['type', 'amount'], { amount: r.atLeastZero, meta: r.objectOrNull, type: r.nonEmpty })),
      status: r.oneOf(['Successful']),
      timestamp: r.dateTime,
      type: r.oneOf(['Checkout']),
      user_id: r.nonEmpty,
    },
  }),
  {
    ...schemaRow('game', 'GAME', 'POST', '/v1/integration/game', true, {
      required: ['game_id', 'is_live', 'name'],
      fields: {
        category: r.str,
        game_id: r.nonEmpty,
        is_live: r.bool,
        name: r.str,
        origin: r.str,
        provider: r.str,
        rtp: r.num,
        slug: r.str,
        subcategory: r.str,
        supported_devices: r.listOf(r.oneOf(['mobile', 'desktop', 'app', 'unknown'])),
      },
    }),
    // Catalogue data with no player: updates of one game stay in order.
    orderKey: (body) => `game:${String(body.game_id)}`,
  },
  schemaRow('poker_cash_game_buy_in', 'POKER_CASH_GAME_BUY_IN_V2', 'POST', '/v2/integration/poker/cash-game-buy-in', true, pokerCashGame),
  schemaRow('poker_cash_game_cash_out', 'POKER_CASH_GAME_CASH_OUT_V2', 'POST', '/v2/integration/poker/cash-game-cash-out', true, pokerCashGame),
  schemaRow('poker_tournament_buy_in', 'POKER_TOURNAMENT_BUY_IN_V2', 'POST', '/v2/integration/poker/tournament-buy-in', true, pokerTournament),
  schemaRow('poker_tournament_cash_out', 'POKER_TOURNAMENT_CASH_OUT_V2', 'POST', '/v2/integration/poker/tournament-cash-out', true, pokerTournament),
  // No queue type name is documented for device link/unlink: ours, and a queue transport refuses to use them
  // until crm.integration.events.<kind>.type names the operator's (src/events/destination.ts).
  {
    kind: 'device_link',
    type: 'USER_DEVICE_LINK',
    method: 'POST',
    path: '/v1/integration/user/device/link',
    confirmed: { path: true, type: false },
    ...device,
  },
  {
    kind: 'device_unlink',
    type: 'USER_DEVICE_UNLINK',
    method: 'POST',
    path: '/v1/integration/user/device/unlink',
    confirmed: { path: true, type: false },
    ...device,
  },
  {
    kind: 'push_conversion',
    // Our name: the push conversion is a webhook, never a queue message.
    type: 'PUSH_CONVERSION',
    method: 'POST',
    path: '/webhook/callback/push/',
    confirmed: { path: true, type: false },
    required: ['action', 'metadata'],
    fields: {
      action: z.string({ error: 'must be a string' }),
      metadata: entry([], {
        conversion_crm_triggerhash: text(),
        conversion_crm_id: text(),
        conversion_crm_activityid: r.integer,
        conversion_crm_actionid: r.integer,
        conversion_crm_actiongroupid: r.integer,
        conversion_crm_actioncommunicationprofileid: r.integer,
        conversion_crm_userid: r.integer,
        conversion_crm_playeroriginid: r.integer,
        conversion_crm_push_notification_type: text(),
        conversion_crm_push_provider: text(),
      }),
    },
    // Conversions of one player stay in order; without a user id, of one trigger.
    orderKey: (body) => {
      const m = body.metadata as Record<string, unknown>;
      return `push:${String(m.conversion_crm_userid ?? m.conversion_crm_id ?? '')}`;
    },
    channel: 'push_webhook',
  },
];

/** The push webhook's own rule (interface, Endpoints B): an unknown action is refused naming the allowed ones. */
function checkPushAction(body: Record<string, unknown>): string | undefined {
  const action = body.action;
  if ((PUSH_ACTIONS as readonly unknown[]).includes(action)) return undefined;
  return `action: ${JSON.stringify(action)} is not allowed; allowed: ${PUSH_ACTIONS.join(', ')}`;
}

export const EVENT_KINDS = eventCatalogue.map((row) => row.kind) as readonly EventKind[];

const schemas = new Map<EventKind, z.ZodType>(
  eventCatalogue.map((row) => [row.kind, row.rules ? r.shapeToZod(row.rules, row.fields) : buildSchema(row.required, row.fields)]),
);
const byKind = new Map(eventCatalogue.map((row) => [row.kind, row]));

export function catalogueRow(kind: EventKind): CatalogueRow {
  return byKind.get(kind)!;
}

export function eventSchema(kind: EventKind): z.ZodType {
  return schemas.get(kind)!;
}

/** Rules a zod check cannot name well; answers the error or undefined. */
export function extraCheck(kind: EventKind, body: Record<string, unknown>): string | undefined {
  return kind === 'push_conversion' ? checkPushAction(body) : undefined;
}

export function orderKeyOf(row: CatalogueRow, body: Record<string, unknown>): string {
  return row.orderKey ? row.orderKey(body) : String(body.user_id).trim();
}

// ---- defaults overridden by configuration ----

export interface EventOverride {
  method?: 'POST' | 'PUT' | undefined;
  path?: string | undefined;
  type?: string | undefined;
  topic?: string | undefined;
}

export interface EventRoute {
  kind: EventKind;
  /**
   * The kind as the outbox stores it, in crm_events.type (the catalogue row's `type`, `PAYMENT`): one per kind, stable
   * whatever the configuration says, so a stored event finds its kind's route when it is sent.
   */
  storedKind: string;
  /** The queue type name sent (the catalogue's, or crm.integration.events.<kind>.type): configured, so not the kind. */
  queueType: string;
  method: 'POST' | 'PUT';
  path: string;
  /** False when the queue type name is neither documented nor configured: a queue transport must not invent one. */
  queueTypeKnown: boolean;
  /** Kafka topic of this kind when configured per kind. */
  topic?: string | undefined;
  channel: EventChannel;
}

/** The catalogue with `crm.integration.events` applied. Pure. */
export function resolveCatalogue(overrides: Partial<Record<EventKind, EventOverride | undefined>> = {}): EventRoute[] {
  return eventCatalogue.map((row) => {
    const o = overrides[row.kind] ?? {};
    return {
      kind: row.kind,
      storedKind: row.type,
      queueType: o.type ?? row.queueType ?? row.type,
      method: o.method ?? row.method,
      path: o.path ?? row.path,
      queueTypeKnown: row.confirmed.type || o.type !== undefined,
      topic: o.topic,
      channel: row.channel ?? 'integration',
    };
  });
}

/** Two kinds on one method and path would make the relay's routes ambiguous: the clashes, for the config check. */
export function routeClashes(routes: readonly EventRoute[]): string[] {
  const seen = new Map<string, EventKind>();
  const clashes: string[] = [];
  for (const r of routes) {
    const key = `${r.method} ${r.path}`;
    const other = seen.get(key);
    if (other) clashes.push(`${r.kind} and ${other} both use ${key}`);
    else seen.set(key, r.kind);
  }
  return clashes;
}

/** The default route of a kind (the gateway's own thin events are stored under it). */
export function eventRoute(kind: EventKind): EventRoute {
  return defaults.get(kind)!;
}

const defaults = new Map(resolveCatalogue().map((route) => [route.kind, route]));
