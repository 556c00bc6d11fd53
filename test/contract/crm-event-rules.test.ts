/**
 * The relay's door held to the CRM maker's event schemas by example (public repository
 * fasttrack-solutions/json-schema, folder pkg/validator/schemas, commit 467f529; docs/events.md "Rules per kind"),
 * through a live gateway in front of the fake Integration API. The examples are written here by hand from those
 * facts, apart from the rules the relay is built from (src/crm/event-rules.ts), so a wrong rule there fails here.
 * Both ways, for every kind the maker has a schema for: what the CRM's checker (gojsonschema 1.2) takes is answered
 * 202 and delivered unchanged; what it refuses is answered 400 `{error, code}` naming the field, and nothing is
 * stored or sent. Kinds without a schema (logout, device link and unlink, push conversions) keep their own checks:
 * test/events/relay-catalogue.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveCatalogue, type EventKind } from '../../src/crm/event-catalogue.js';
import { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { relay, RELAY_KEY } from '../helpers/events.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeIntegrationApi();
let gw: TestGateway;
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

beforeAll(async () => {
  await crm.start();
  gw = await startTestGateway({
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100 },
    crm: { integration: { url: crm.url } },
  });
});

afterAll(async () => {
  await gw.close();
  await crm.stop();
});

type Body = Record<string, unknown>;
/** A change at a dotted path (`bets.0.odds`); `undefined` removes the key. */
type Change = [path: string, value: unknown];

function changed(body: Body, [path, value]: Change): Body {
  const copy = structuredClone(body);
  const keys = path.split('.');
  let node = copy as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = keys.at(-1)!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}

const at = '2026-11-24T10:00:00Z';
const thin = (user: string) => ({ user_id: user, timestamp: at, origin: 'site.example.com' });

interface KindExamples {
  valid: (user: string) => Body;
  takes: Array<[label: string, Change]>;
  /** The change, and the field the refusal names. */
  refuses: Array<[label: string, Change, field: string]>;
}

/** What every player event shares: a non-empty string user_id and the checker's date-time. */
const playerRules = {
  takes: [
    ['a one-character user_id', ['user_id', 'x']],
    ['a timestamp with a fraction and an offset', ['timestamp', '2026-11-24T10:00:00.123456+01:00']],
    ['a timestamp that is a date alone', ['timestamp', '2026-11-24']],
    ['a timestamp with a one-digit hour', ['timestamp', '2026-11-24T9:05:00Z']],
  ] as Array<[string, Change]>,
  refuses: [
    ['an empty user_id', ['user_id', ''], 'user_id'],
    ['a numeric user_id', ['user_id', 42], 'user_id'],
    ['a timestamp without offset', ['timestamp', '2026-11-24T10:00:00'], 'timestamp'],
    ['a timestamp on the 31st of November', ['timestamp', '2026-11-31T10:00:00Z'], 'timestamp'],
    ['no timestamp', ['timestamp', undefined], 'timestamp'],
  ] as Array<[string, Change, string]>,
};

const thinKind: KindExamples = {
  valid: thin,
  takes: [...playerRules.takes, ['an empty origin', ['origin', '']]],
  refuses: [...playerRules.refuses, ['no origin', ['origin', undefined], 'origin']],
};

const pokerTournament: KindExamples = {
  valid: (u) => ({ ...thin(u), currency: 'EUR', exchange_rate: 1, status: 'Approved', buy_in: 5 }),
  takes: [
    ['an exchange_rate of 0', ['exchange_rate', 0]],
    ['status Rollback', ['status', 'Rollback']],
  ],
  refuses: [
    ['an exchange_rate below 0', ['exchange_rate', -0.5], 'exchange_rate'],
    ['status Won', ['status', 'Won'], 'status'],
    ['a numeric currency', ['currency', 978], 'currency'],
    ['no currency', ['currency', undefined], 'currency'],
  ],
};

const pokerCashGame: KindExamples = {
  valid: (u) => ({ ...thin(u), currency: 'EUR', exchange_rate: 1, status: 'Approved' }),
  // The cash game schemas require currency and exchange_rate but give them no type.
  takes: [
    ['an exchange_rate below 0', ['exchange_rate', -1]],
    ['a numeric currency', ['currency', 978]],
  ],
  refuses: [
    ['no exchange_rate', ['exchange_rate', undefined], 'exchange_rate'],
    ['status Approve', ['status', 'Approve'], 'status'],
  ],
};

const examples: Partial<Record<EventKind, KindExamples>> = {
  bonus: {
    valid: (u) => ({
      ...thin(u),
      amount: 10,
      bonus_id: 'b1',
      currency: 'EUR',
      exchange_rate: 1,
      product: 'Casino',
      status: 'Created',
      type: 'FreeSpins',
      user_bonus_id: `ub-${u}`,
      locked_amount: 0,
      meta: null,
      is_free_money: true,
    }),
    takes: [
      ['an amount of 0', ['amount', 0]],
      ['status NotApplicable', ['status', 'NotApplicable']],
      ['a one-character type', ['type', 'x']],
      ['currency mBTC', ['currency', 'mBTC']],
      ['an empty origin', ['origin', '']],
    ],
    refuses: [
      ['an amount below 0', ['amount', -0.01], 'amount'],
      ['an exchange_rate below 0', ['exchange_rate', -1], 'exchange_rate'],
      ['an empty type', ['type', ''], 'type'],
      ['an empty bonus_id', ['bonus_id', ''], 'bonus_id'],
      ['a locked_amount below 0', ['locked_amount', -1], 'locked_amount'],
      ['is_free_money as text', ['is_free_money', 'yes'], 'is_free_money'],
      ['product Bingo', ['product', 'Bingo'], 'product'],
    ],
  },
  registration: { ...thinKind, valid: (u) => ({ ...thin(u), ip_address: '', user_agent: 'ua', note: 'n' }) },
  login: {
    valid: (u) => ({ ...thin(u), ip_address: '203.0.113.7', is_verified: true, meta: {}, user_details: {} }),
    takes: [
      ['an empty ip_address', ['ip_address', '']],
      ['an ip_address that is no address', ['ip_address', 'unknown']],
      ['an empty origin', ['origin', '']],
    ],
    refuses: [
      ['meta null', ['meta', null], 'meta'],
      ['meta a list', ['meta', []], 'meta'],
      ['a numeric ip_address', ['ip_address', 7], 'ip_address'],
      ['user_details null', ['user_details', null], 'user_details'],
      ['is_impersonated as text', ['is_impersonated', 'no'], 'is_impersonated'],
    ],
  },
  user_update: thinKind,
  user_consents: thinKind,
  user_blocks: thinKind,
  user_migration: {
    valid: (u) => ({ ...thin(u), migration_reference: 'm1' }),
    takes: [['an empty migration_reference', ['migration_reference', '']]],
    refuses: [
      ['no migration_reference', ['migration_reference', undefined], 'migration_reference'],
      ['skip_publishing as text', ['skip_publishing', 'true'], 'skip_publishing'],
    ],
  },
  user_migration_approve: thinKind,
  user_tag: {
    valid: (u) => ({ ...thin(u), tags: 'vip' }),
    takes: [['empty tags', ['tags', '']]],
    refuses: [['tags as a list', ['tags', ['vip']], 'tags']],
  },
  custom: {
    valid: (u) => ({ ...thin(u), data: { spins: 5 }, notification_type: 'spins' }),
    takes: [
      ['an ip_address that is no address', ['ip_address', 'n/a']],
      ['an empty ip_address', ['ip_address', '']],
    ],
    refuses: [
      ['an empty origin', ['origin', ''], 'origin'],
      ['an empty notification_type', ['notification_type', ''], 'notification_type'],
      ['data a list', ['data', [1]], 'data'],
    ],
  },
  balance: {
    valid: (u) => ({ ...thin(u), balances: [{ amount: 1, currency: 'EUR', key: 'real_money', exchange_rate: 1 }] }),
    takes: [
      ['an amount of 0', ['balances.0.amount', 0]],
      ['an empty list', ['balances', []]],
    ],
    refuses: [
      ['an amount below 0', ['balances.0.amount', -1], 'balances.0.amount'],
      ['an exchange_rate below 0', ['balances.0.exchange_rate', -1], 'balances.0.exchange_rate'],
      ['a balance without key', ['balances.0.key', undefined], 'balances.0.key'],
      ['key cash', ['balances.0.key', 'cash'], 'balances.0.key'],
    ],
  },
  payment: {
    valid: (u) => ({
      ...thin(u),
      amount: 20,
      currency: 'EUR',
      payment_id: 'p1',
      status: 'Approved',
      type: 'Debit',
      vendor_id: 3,
      meta: { psp: 'x' },
      fee_amount: 0,
    }),
    takes: [
      ['a numeric payment_id', ['payment_id', 991]],
      ['a vendor_id of 0', ['vendor_id', 0]],
      ['a vendor_id string of a negative number', ['vendor_id', '-3']],
      ['an amount of 0', ['amount', 0]],
    ],
    refuses: [
      ['an amount below 0', ['amount', -5], 'amount'],
      ['a vendor_id below 0', ['vendor_id', -1], 'vendor_id'],
      ['meta null', ['meta', null], 'meta'],
      ['an empty origin', ['origin', ''], 'origin'],
      ['a fee_amount below 0', ['fee_amount', -1], 'fee_amount'],
      ['a deposit_count below 0', ['deposit_count', -1], 'deposit_count'],
      ['exchange_rate below 0', ['exchange_rate', -1], 'exchange_rate'],
    ],
  },
  casino: {
    valid: (u) => ({
      ...thin(u),
      activity_id: 'a1',
      amount: 1,
      currency: 'EUR',
      exchange_rate: 1,
      game_id: 'g1',
      game_name: 'Book',
      is_round_end: false,
      round_id: 'r1',
      status: 'Approved',
      type: 'Bet',
      vendor_id: 'v1',
      balance_after: -5,
    }),
    takes: [
      ['an empty activity_id', ['activity_id', '']],
      ['a numeric game_id', ['game_id', 77]],
      ['a negative balance_before', ['balance_before', -1]],
    ],
    refuses: [
      ['a numeric round_id', ['round_id', 1], 'round_id'],
      ['a numeric activity_id', ['activity_id', 1], 'activity_id'],
      ['an empty round_id', ['round_id', ''], 'round_id'],
      ['an empty game_name', ['game_name', ''], 'game_name'],
      ['an empty origin', ['origin', ''], 'origin'],
      ['an amount below 0', ['amount', -1], 'amount'],
      ['a bonus_wager_amount below 0', ['bonus_wager_amount', -1], 'bonus_wager_amount'],
    ],
  },
  sportsbook: {
    valid: (u) => ({
      ...thin(u),
      amount: 5,
      bet_type: 'Multi',
      currency: 'EUR',
      exchange_rate: 1,
      odds: 3,
      status: 'Approved',
      bets: [{ event_name: 'A v B', match_start: '2026-11-25T20:00:00Z', odds: 1.5, outcomes: [{ criterion_name: 'Winner', outcome_label: 'A' }] }],
    }),
    takes: [
      ['a bonus_wager_amount below 0', ['bonus_wager_amount', -1]],
      ['a match_start as a date alone', ['bets.0.match_start', '2026-11-25']],
      ['outcome meta null', ['bets.0.outcomes.0.meta', null]],
    ],
    refuses: [
      ['an outcome without outcome_label', ['bets.0.outcomes.0.outcome_label', undefined], 'bets.0.outcomes.0.outcome_label'],
      ['a bet without odds', ['bets.0.odds', undefined], 'bets.0.odds'],
      ['bet_type Double', ['bet_type', 'Double'], 'bet_type'],
      ['an amount below 0', ['amount', -1], 'amount'],
      ['type Cashout', ['type', 'Cashout'], 'type'],
    ],
  },
  lottery: {
    valid: (u) => ({
      ...thin(u),
      amount: 2,
      currency: 'EUR',
      exchange_rate: 1,
      type: 'Bet',
      draw_id: '123',
      draw_date: '2026-11-28T20:00:00Z',
      lines: [{ line_id: 1 }],
    }),
    takes: [
      ['draw_id one digit', ['draw_id', '0']],
      ['a draw_date as a date alone', ['draw_date', '2026-11-28']],
    ],
    refuses: [
      ['a draw_id with letters', ['draw_id', 'D-123'], 'draw_id'],
      ['a numeric draw_id', ['draw_id', 123], 'draw_id'],
      ['a draw_date that is no date', ['draw_date', 'Saturday'], 'draw_date'],
      ['a ticket_id with letters', ['ticket_id', 't1'], 'ticket_id'],
      ['a line without line_id', ['lines.0.line_id', undefined], 'lines.0.line_id'],
      ['numbers as text', ['lines.0.numbers', ['7']], 'lines.0.numbers.0'],
      ['a discount_amount below 0', ['discount_amount', -1], 'discount_amount'],
    ],
  },
  lottery_tickets: {
    valid: (u) => ({
      ...thin(u),
      account_amount: -1,
      amount: 2,
      bonus_amount: 0,
      bonus_code: '',
      currency: 'EUR',
      deposit_amount: 2,
      exchange_rate: 1,
      status: 'Approved',
      transaction_id: 'tx1',
      tickets: [{ ticket_id: 't1', product: 'lotto', product_name: 'Lotto', amount: 2, lines_count: 1, draws: [{ timestamp: '2026-11-28T20:00:00Z' }] }],
    }),
    takes: [['status Rejected', ['status', 'Rejected']]],
    refuses: [
      ['a ticket without draws', ['tickets.0.draws', undefined], 'tickets.0.draws'],
      ['a draw without timestamp', ['tickets.0.draws.0.timestamp', undefined], 'tickets.0.draws.0.timestamp'],
      ['a ticket amount below 0', ['tickets.0.amount', -1], 'tickets.0.amount'],
      ['status Bet', ['status', 'Bet'], 'status'],
      ['no transaction_id', ['transaction_id', undefined], 'transaction_id'],
    ],
  },
  cart: {
    valid: (u) => ({
      ...thin(u),
      amount: 10,
      cart_id: 1,
      currency: 'EUR',
      discount_amount: 0,
      status: 'Successful',
      type: 'Checkout',
      device_type: 'mobile',
      exchange_rate: 1,
      payments: [{ type: 'card', amount: 10 }],
      items: [{ id: 0, type: 'ticket', name: 'Lotto', description: '', amount: 10, discount_amount: 0, bonus_code: '' }],
    }),
    takes: [
      ['device_type unkown (sic)', ['device_type', 'unkown']],
      ['a cart_id of 0', ['cart_id', 0]],
    ],
    refuses: [
      ['a cart_id below 0', ['cart_id', -1], 'cart_id'],
      ['a cart_id as text', ['cart_id', '1'], 'cart_id'],
      ['a payment without amount', ['payments.0.amount', undefined], 'payments.0.amount'],
      ['an item without bonus_code', ['items.0.bonus_code', undefined], 'items.0.bonus_code'],
      ['an item with an empty name', ['items.0.name', ''], 'items.0.name'],
      ['an empty origin', ['origin', ''], 'origin'],
      ['device_type unknown', ['device_type', 'unknown'], 'device_type'],
    ],
  },
  game: {
    valid: () => ({ game_id: 'g-contract', is_live: true, name: 'Book', supported_devices: ['mobile', 'app'] }),
    takes: [
      ['an empty name', ['name', '']],
      ['supported_devices unknown', ['supported_devices', ['unknown']]],
    ],
    refuses: [
      ['a numeric game_id', ['game_id', 77], 'game_id'],
      ['an empty game_id', ['game_id', ''], 'game_id'],
      ['supported_devices tablet', ['supported_devices', ['tablet']], 'supported_devices.0'],
      ['no is_live', ['is_live', undefined], 'is_live'],
    ],
  },
  poker_cash_game_buy_in: pokerCashGame,
  poker_cash_game_cash_out: pokerCashGame,
  poker_tournament_buy_in: pokerTournament,
  poker_tournament_cash_out: pokerTournament,
};

const schemaKinds = Object.keys(examples) as EventKind[];
const routes = new Map(resolveCatalogue().map((r) => [r.kind, r]));

it('covers every kind of the catalogue but the four without a schema', () => {
  const without = resolveCatalogue()
    .map((r) => r.kind)
    .filter((k) => !schemaKinds.includes(k));
  expect(without.sort()).toEqual(['device_link', 'device_unlink', 'logout', 'push_conversion']);
});

describe.each(schemaKinds.map((k) => [k] as const))('%s', (kind) => {
  const route = routes.get(kind)!;
  const ex = examples[kind]!;
  const isPlayer = kind !== 'game';
  const takes = isPlayer ? [...playerRules.takes.filter(([l]) => !ex.takes.some(([m]) => m === l)), ...ex.takes] : ex.takes;
  const refuses = isPlayer ? [...playerRules.refuses.filter(([l]) => !ex.refuses.some(([m]) => m === l)), ...ex.refuses] : ex.refuses;

  it.each(takes.map(([label, change], i) => [label, change, i] as const))('takes %s: 202, delivered unchanged', async (_label, change, i) => {
    const user = `ct-${kind}-ok-${i}`;
    const body = changed({ ...ex.valid(user), ...(isPlayer ? {} : { game_id: `${kind}-${i}` }) }, change);
    if (isPlayer && change[0] !== 'user_id') body.user_id = user;
    const res = await relay(gw, route.method, route.path, body);
    expect(res.status, JSON.stringify(res.json)).toBe(202);
    const got = await waitFor(() => crm.accepted.find((r) => r.eventId === res.json.event_id), 10_000, `event of ${kind} at the CRM`);
    expect(got.body).toEqual(body);
  });

  it.each(refuses.map(([label, change, field]) => [label, change, field] as const))(
    'refuses %s: 400 naming %s, nothing stored',
    async (_label, change, field) => {
      const user = `ct-${kind}-bad`;
      const body = changed(ex.valid(user), change);
      const res = await relay(gw, route.method, route.path, body);
      expect(res.status).toBe(400);
      expect(res.json.code).toBe(400);
      expect(res.json.error.startsWith(`${field}:`), res.json.error).toBe(true);
      if (isPlayer && change[0] !== 'user_id') {
        const stored = await gw.get(`/admin/events?user_id=${user}`, admin);
        expect(stored.json.events).toEqual([]);
      }
    },
  );
});
