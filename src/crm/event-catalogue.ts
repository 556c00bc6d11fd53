/**
 * The CRM's real-time event catalogue as one table of data (the schema facts of the CRM vendor are summarised in
 * docs/events.md): per event kind, the queue type name (RabbitMQ property `type`, Kafka header `type`), the
 * Integration API method and path, whether those defaults are documented, which keys are required and how the
 * documented keys are checked. Every other key is passed through untouched: no event schema of the CRM forbids
 * extra keys, and it adds fields over time. Where the CRM's schema sets no list or format (bonus `type`, currencies)
 * none is checked here either, so nothing the CRM takes is refused.
 *
 * The defaults are only defaults: the CRM hands each operator its own Swagger, so `crm.integration.events.<kind>`
 * overrides method, path and queue type name (resolveCatalogue below).
 */
import { z } from 'zod';

// ---- checks the table is written with ----
const text = (what = 'a string') => z.string({ error: `must be ${what}` });
const id = text().trim().min(1, { error: 'must not be empty' });
const number = z.number({ error: 'must be a number' }).finite();
const atLeastZero = number.min(0, { error: 'must be 0 or more' });
const bool = z.boolean({ error: 'must be true or false' });
const dateTime = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time such as 2026-11-24T10:00:00+01:00' });
const stringOrNumber = z.union([text(), number], { error: 'must be a string or a number' });
const object = z.looseObject({}, { error: 'must be an object' });
/** `meta` is an object or null wherever it appears. */
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
  return z.looseObject(shape, { error: 'must be an object' });
}

/** An entry of a nested list, built from the same row shape as an event (required keys plus checks). */
const entry = (required: readonly string[], fields: Fields) => buildSchema(required, fields);

/** Keys several events may carry (optional everywhere they are allowed). */
const common: Fields = { meta, skip_publishing: bool, is_free_money: bool };
const thin = ['user_id', 'timestamp', 'origin'] as const;
const thinFields: Fields = { user_id: id, timestamp: dateTime, origin: text() };
const money: Fields = { amount: number, currency: text(), exchange_rate: number };

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
  required: readonly string[];
  /** Checks of documented keys; a key in `required` without a check only has to be present. */
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

const poker = (kind: EventKind, type: string, path: string): CatalogueRow => ({
  kind,
  type,
  method: 'POST',
  path,
  confirmed: { path: true, type: true },
  required: ['currency', 'exchange_rate', 'status', 'timestamp', 'user_id'],
  fields: { ...common, ...thinFields, ...money, status: oneOf(APPROVED_ROLLBACK) },
});

const thinRow = (
  kind: EventKind,
  type: string,
  method: 'POST' | 'PUT',
  path: string,
  confirmedPath: boolean,
  extra: Fields = {},
  extraRequired: string[] = [],
): CatalogueRow => ({
  kind,
  type,
  method,
  path,
  confirmed: { path: confirmedPath, type: true },
  required: [...thin, ...extraRequired],
  fields: { ...common, ...thinFields, ...extra },
});

const login: Fields = { is_impersonated: bool, is_verified: bool, ip_address: ip, user_agent: text(), user_details: object };

/** The table. One row per kind; nothing about an event is written anywhere else. */
export const eventCatalogue: readonly CatalogueRow[] = [
  {
    kind: 'bonus',
    type: 'BONUS',
    method: 'POST',
    path: '/v1/integration/bonus',
    confirmed: { path: true, type: true },
    required: ['amount', 'bonus_id', 'currency', 'exchange_rate', 'origin', 'product', 'status', 'timestamp', 'type', 'user_bonus_id', 'user_id'],
    fields: {
      ...common,
      ...thinFields,
      ...money,
      bonus_id: id,
      user_bonus_id: id,
      bonus_code: text(),
      bonus_turned_real: number,
      locked_amount: number,
      required_wagering_amount: number,
      product: oneOf(BONUS_PRODUCTS),
      status: oneOf(BONUS_STATUSES),
      // Any string: the interface's list of bonus types is examples, and the CRM's schema sets none.
      type: text(),
      crm_references: object,
      // Ours, not the CRM's: the credit whose references to attach (the id POST /bonus/credit answered); removed before sending.
      credit_id: z.union([id, z.number().int().safe().transform(String)], { error: 'must be a non-empty string' }),
    },
  },
  thinRow('registration', 'USER_CREATE_V2', 'POST', '/v2/integration/user', true, { note: text(), user_agent: text(), ip_address: text() }),
  thinRow('login', 'LOGIN_V2', 'POST', '/v2/integration/login', true, login),
  // Not in the CRM's docs we hold: both defaults are guesses built like LOGIN_V2 (docs/events.md).
  { ...thinRow('logout', 'LOGOUT_V2', 'POST', '/v2/integration/logout', false, login), confirmed: { path: false, type: false } },
  thinRow('user_update', 'USER_UPDATE_V2', 'PUT', '/v2/integration/user', true),
  thinRow('user_consents', 'USER_CONSENTS_V2', 'PUT', '/v2/integration/user/consents', true),
  thinRow('user_blocks', 'USER_BLOCK_V2', 'PUT', '/v2/integration/user/blocks', true),
  thinRow('user_migration', 'USER_MIGRATION', 'POST', '/v2/integration/user/migration', false, { migration_reference: text() }, ['migration_reference']),
  thinRow('user_migration_approve', 'USER_MIGRATION_APPROVE', 'POST', '/v2/integration/user/migration/approve', false),
  thinRow('user_tag', 'USER_TAG', 'POST', '/v2/integration/user/tags', false, { tags: text() }, ['tags']),
  thinRow('custom', 'CUSTOM', 'POST', '/v1/integration/custom', true, { data: object, notification_type: id, ip_address: ip, user_agent: text() }, [
    'data',
    'notification_type',
  ]),
  thinRow(
    'balance',
    'USER_BALANCES_UPDATE',
    'POST',
    '/v1/integration/user/balances',
    true,
    {
      balances: listOf(
        entry(['amount', 'currency', 'key', 'exchange_rate'], {
          amount: atLeastZero,
          currency: text(),
          key: oneOf(['real_money', 'bonus_money'] as const),
          exchange_rate: atLeastZero,
        }),
        '{amount, currency, key, exchange_rate}',
      ),
    },
    ['balances'],
  ),
  {
    kind: 'payment',
    type: 'PAYMENT',
    method: 'POST',
    path: '/v1/integration/payment',
    confirmed: { path: true, type: true },
    required: ['amount', 'currency', 'origin', 'payment_id', 'status', 'timestamp', 'type', 'user_id', 'vendor_id'],
    fields: {
      ...common,
      ...thinFields,
      ...money,
      payment_id: stringOrNumber,
      vendor_id: stringOrNumber,
      status: oneOf(['Approved', 'Cancelled', 'Rejected', 'Requested', 'Rollback'] as const),
      type: oneOf(['Authorization', 'Capture', 'Credit', 'Debit', 'Void'] as const),
      vendor_name: text(),
      fee_amount: number,
      deposit_count: number,
      withdraw_count: number,
      bonus_code: text(),
      note: text(),
    },
  },
  {
    kind: 'casino',
    type: 'CASINO',
    method: 'POST',
    path: '/v1/integration/casino',
    confirmed: { path: true, type: true },
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
      ...common,
      ...thinFields,
      ...money,
      game_id: stringOrNumber,
      vendor_id: stringOrNumber,
      game_name: text(),
      is_round_end: bool,
      status: oneOf(APPROVED_ROLLBACK),
      type: oneOf(['Bet', 'Win'] as const),
      balance_before: number,
      balance_after: number,
      bonus_wager_amount: number,
      locked_wager_amount: number,
      wager_amount: number,
      game_type: text(),
      vendor_name: text(),
    },
  },
  {
    kind: 'sportsbook',
    type: 'SPORTSBOOK',
    method: 'POST',
    path: '/v1/integration/sports',
    confirmed: { path: true, type: true },
    required: ['amount', 'bet_type', 'bets', 'currency', 'exchange_rate', 'odds', 'origin', 'status', 'timestamp', 'user_id'],
    fields: {
      ...common,
      ...thinFields,
      ...money,
      odds: number,
      bet_type: oneOf(['Single', 'Multi', 'System', 'Teaser'] as const),
      status: oneOf(APPROVED_ROLLBACK),
      type: oneOf(['Bet', 'Settlement'] as const),
      bets: listOf(
        entry(['event_name', 'match_start', 'odds'], { event_name: text(), match_start: dateTime, odds: number }),
        '{event_name, match_start, odds}',
      ),
    },
  },
  {
    kind: 'lottery',
    type: 'LOTTERY_V2',
    method: 'POST',
    path: '/v2/integration/lottery',
    confirmed: { path: true, type: true },
    required: ['amount', 'currency', 'exchange_rate', 'lines', 'origin', 'timestamp', 'type', 'user_id'],
    fields: {
      ...common,
      ...thinFields,
      ...money,
      type: oneOf(['Bet', 'Settlement'] as const),
      lines: listOf(entry(['line_id'], { line_id: number }), '{line_id, …}'),
    },
  },
  {
    kind: 'cart',
    type: 'CART',
    method: 'POST',
    path: '/v1/integration/cart',
    confirmed: { path: true, type: true },
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
      ...common,
      ...thinFields,
      ...money,
      cart_id: number,
      discount_amount: number,
      status: oneOf(['Successful'] as const),
      type: oneOf(['Checkout'] as const),
      // `unkown` (sic) is how the CRM's schema spells it.
      device_type: oneOf(['desktop', 'mobile', 'tablet', 'unkown'] as const),
      payments: listOf(object, 'objects'),
      items: listOf(object, 'objects'),
    },
  },
  {
    kind: 'game',
    type: 'GAME',
    method: 'POST',
    path: '/v1/integration/game',
    confirmed: { path: true, type: true },
    required: ['game_id', 'is_live', 'name'],
    fields: { game_id: stringOrNumber, is_live: bool, name: text() },
    // Catalogue data with no player: updates of one game stay in order.
    orderKey: (body) => `game:${String(body.game_id)}`,
  },
  poker('poker_cash_game_buy_in', 'POKER_CASH_GAME_BUY_IN_V2', '/v2/integration/poker/cash-game-buy-in'),
  poker('poker_cash_game_cash_out', 'POKER_CASH_GAME_CASH_OUT_V2', '/v2/integration/poker/cash-game-cash-out'),
  poker('poker_tournament_buy_in', 'POKER_TOURNAMENT_BUY_IN_V2', '/v2/integration/poker/tournament-buy-in'),
  poker('poker_tournament_cash_out', 'POKER_TOURNAMENT_CASH_OUT_V2', '/v2/integration/poker/tournament-cash-out'),
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
        conversion_crm_activityid: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }),
        conversion_crm_actionid: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }),
        conversion_crm_actiongroupid: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }),
        conversion_crm_actioncommunicationprofileid: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }),
        conversion_crm_userid: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }),
        conversion_crm_playeroriginid: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }),
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

export const EVENT_KINDS = eventCatalogue.map((r) => r.kind) as readonly EventKind[];

const schemas = new Map<EventKind, z.ZodType>(eventCatalogue.map((r) => [r.kind, buildSchema(r.required, r.fields)]));
const byKind = new Map(eventCatalogue.map((r) => [r.kind, r]));

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
  /** The name the outbox stores (the catalogue's type): stable, whatever the configuration says. */
  storedType: string;
  /** The queue type name sent (the catalogue's, or the configured one). */
  type: string;
  method: 'POST' | 'PUT';
  path: string;
  /** False when the queue type name is neither documented nor configured: a queue transport must not invent one. */
  typeKnown: boolean;
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
      storedType: row.type,
      type: o.type ?? row.type,
      method: o.method ?? row.method,
      path: o.path ?? row.path,
      typeKnown: row.confirmed.type || o.type !== undefined,
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

const defaults = new Map(resolveCatalogue().map((r) => [r.kind, r]));
