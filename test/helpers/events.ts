/** Event bodies as the operator's platform sends them, and a relay client with its key. */
import { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { startTestGateway, type TestGateway } from './gateway.js';

export const RELAY_KEY = 'test-relay-key';

export function bonusEvent(userId: string, userBonusId: string, status: string, overrides: Record<string, unknown> = {}) {
  return {
    amount: 10,
    bonus_code: 'B10',
    bonus_id: 'bonus-1',
    currency: 'EUR',
    exchange_rate: 1,
    origin: 'sub.example.com',
    product: 'Casino',
    status,
    timestamp: '2026-11-24T10:00:00+01:00',
    type: 'WelcomeBonus',
    user_bonus_id: userBonusId,
    user_id: userId,
    ...overrides,
  };
}

export function thinEvent(userId: string, overrides: Record<string, unknown> = {}) {
  return { user_id: userId, timestamp: '2026-11-24T09:00:00Z', origin: 'sub.example.com', ...overrides };
}

export function relay(gw: TestGateway, method: 'POST' | 'PUT', path: string, body: unknown, key = RELAY_KEY, headers: Record<string, string> = {}) {
  return method === 'POST' ? gw.post(`/relay${path}`, body, { 'x-api-key': key, ...headers }) : gw.put(`/relay${path}`, body, { 'x-api-key': key, ...headers });
}

export interface RelayToFakeCrm {
  gw: TestGateway;
  crm: FakeIntegrationApi;
  close(): Promise<void>;
}

/** A test gateway whose relay takes RELAY_KEY and delivers to a fake Integration API of its own within milliseconds. */
export async function startRelayToFakeCrm(): Promise<RelayToFakeCrm> {
  const crm = new FakeIntegrationApi();
  await crm.start();
  const gw = await startTestGateway({
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100 },
    crm: { integration: { url: crm.url } },
  });
  return {
    gw,
    crm,
    async close() {
      await gw.close();
      await crm.stop();
    },
  };
}

const at = '2026-11-24T10:00:00+01:00';
const player = (userId: string) => ({ user_id: userId, timestamp: at, origin: 'sub.example.com' });
const money = { amount: 12.5, currency: 'EUR', exchange_rate: 1 };

/**
 * A valid body of every kind of the catalogue (facts of docs/events.md), and a bad one with the start of the error
 * the relay must answer. Built per user so tests can run them side by side.
 */
export function catalogueExamples(userId: string): Record<string, { valid: Record<string, unknown>; bad: Record<string, unknown>; error: string }> {
  const p = player(userId);
  const thin = { valid: p, bad: { ...p, timestamp: 'yesterday' }, error: 'timestamp: must be a date-time' };
  const poker = {
    valid: { ...p, currency: 'EUR', exchange_rate: 1, status: 'Approved' },
    bad: { ...p, currency: 'EUR', exchange_rate: 1, status: 'Won' },
    error: 'status: must be one of Approved, Rollback',
  };
  return {
    bonus: {
      valid: bonusEvent(userId, `ub-${userId}`, 'Claimed', { type: 'Gift', currency: 'USDT', meta: null }),
      bad: bonusEvent(userId, 'ub', 'Created', { product: 'Bingo' }),
      error: 'product: must be one of',
    },
    registration: { valid: { ...p, note: 'n', user_agent: 'ua', ip_address: 'x' }, bad: { ...p, note: 5 }, error: 'note: must be a string' },
    login: {
      // ip_address: the CRM's checker does not know the format "ipv4,ipv6", so any string passes.
      valid: { ...p, is_impersonated: false, ip_address: 'behind a proxy', meta: { device: 'x' }, user_details: { vip: true } },
      bad: { ...p, meta: null },
      error: 'meta: must be an object',
    },
    logout: { valid: p, bad: { ...p, user_id: '' }, error: 'user_id: must not be empty' },
    user_update: thin,
    user_consents: thin,
    user_blocks: { valid: p, bad: { user_id: userId, timestamp: at }, error: 'origin: is required' },
    user_migration: { valid: { ...p, migration_reference: 'm-1' }, bad: p, error: 'migration_reference: is required' },
    user_migration_approve: thin,
    user_tag: { valid: { ...p, tags: 'vip,whale' }, bad: { ...p, tags: ['vip'] }, error: 'tags: must be a string' },
    custom: {
      valid: { ...p, notification_type: 'free_spins', data: { spins: 20, nested: { a: 1 } } },
      bad: { ...p, notification_type: 'n', data: 'x' },
      error: 'data: must be an object',
    },
    balance: {
      valid: { ...p, balances: [{ amount: 5, currency: 'USDT', key: 'real_money', exchange_rate: 1 }] },
      bad: { ...p, balances: [{ amount: -1, currency: 'EUR', key: 'real_money', exchange_rate: 1 }] },
      error: 'balances.0.amount: must be 0 or more',
    },
    payment: {
      valid: { ...p, ...money, payment_id: 991, vendor_id: 'stripe', status: 'Approved', type: 'Credit', meta: { psp: 'x' } },
      bad: { ...p, ...money, payment_id: 991, vendor_id: 'stripe', status: 'Approved', type: 'Refund' },
      error: 'type: must be one of Authorization',
    },
    casino: {
      valid: {
        ...p,
        ...money,
        activity_id: 'a1',
        game_id: 77,
        game_name: 'Book',
        is_round_end: true,
        round_id: 'r1',
        status: 'Approved',
        type: 'Bet',
        vendor_id: 3,
      },
      bad: {
        ...p,
        ...money,
        activity_id: 'a1',
        game_id: 77,
        game_name: 'Book',
        is_round_end: 'yes',
        round_id: 'r1',
        status: 'Approved',
        type: 'Bet',
        vendor_id: 3,
      },
      error: 'is_round_end: must be true or false',
    },
    sportsbook: {
      valid: {
        ...p,
        ...money,
        odds: 2.5,
        bet_type: 'Single',
        status: 'Approved',
        type: 'Bet',
        bets: [{ event_name: 'A v B', match_start: '2026-11-25T20:00:00Z', odds: 2.5 }],
      },
      bad: { ...p, ...money, odds: 2.5, bet_type: 'Single', status: 'Approved', bets: [{ event_name: 'A v B', match_start: 'tonight', odds: 2.5 }] },
      error: 'bets.0.match_start: must be a date-time',
    },
    lottery: {
      valid: { ...p, ...money, type: 'Bet', lines: [{ line_id: 1, numbers: [1, 2, 3] }] },
      bad: { ...p, ...money, type: 'Bet', lines: [{ numbers: [1] }] },
      error: 'lines.0.line_id: is required',
    },
    lottery_tickets: {
      valid: {
        ...p,
        ...money,
        account_amount: 12.5,
        bonus_amount: 0,
        bonus_code: '',
        deposit_amount: 0,
        status: 'Approved',
        transaction_id: 't-1',
        tickets: [{ ticket_id: '1', product: 'lotto', product_name: 'Lotto 6/49', amount: 12.5, lines_count: 2, draws: [{ timestamp: '2026-11-28' }] }],
      },
      bad: { ...p, ...money, account_amount: 0, bonus_amount: 0, bonus_code: '', deposit_amount: 0, status: 'Approved', transaction_id: 't', tickets: [{}] },
      error: 'tickets.0.ticket_id: is required',
    },
    cart: {
      valid: {
        ...p,
        ...money,
        cart_id: 5,
        discount_amount: 0,
        status: 'Successful',
        type: 'Checkout',
        device_type: 'unkown',
        payments: [{ type: 'card', amount: 12.5 }],
        items: [{ id: 1, type: 'ticket', name: 'Lotto', description: '', amount: 12.5, discount_amount: 0, bonus_code: '' }],
      },
      bad: { ...p, ...money, cart_id: 5, discount_amount: 0, status: 'Successful', type: 'Checkout', device_type: 'phone', payments: [], items: [] },
      error: 'device_type: must be one of desktop, mobile, tablet, unkown',
    },
    game: {
      valid: { game_id: `g-${userId}`, is_live: true, name: 'Book of X' },
      bad: { game_id: 1, is_live: true, name: 'Book' },
      error: 'game_id: must be a string',
    },
    poker_cash_game_buy_in: poker,
    poker_cash_game_cash_out: poker,
    poker_tournament_buy_in: poker,
    poker_tournament_cash_out: poker,
    device_link: { valid: { ...p, tokens: [{ token: 't', channel: 'ios', provider: 'apns' }] }, bad: { ...p, tokens: [] }, error: 'tokens: must not be empty' },
    device_unlink: {
      valid: { ...p, tokens: [{ token: 't', channel: 'web', provider: 'fcm' }] },
      bad: { ...p, tokens: [{ token: 't', channel: 'sms', provider: 'p' }] },
      error: 'tokens.0.channel',
    },
    push_conversion: {
      valid: {
        action: 'clicked',
        metadata: {
          conversion_crm_triggerhash: 'h',
          conversion_crm_id: 'c-1',
          conversion_crm_activityid: 1,
          conversion_crm_actionid: 2,
          conversion_crm_actiongroupid: 3,
          conversion_crm_actioncommunicationprofileid: 4,
          conversion_crm_userid: 42,
          conversion_crm_playeroriginid: 5,
          conversion_crm_push_notification_type: 'promo',
          conversion_crm_push_provider: 'fcm',
          user_ref: userId,
        },
      },
      bad: { action: 'opened', metadata: {} },
      error: 'action: "opened" is not allowed; allowed: delivered, read, clicked',
    },
  };
}

/**
 * Event bodies written as text, holding numbers a double would change (ids above 2^53, `1e400`, `-1e-400`, `1.0`,
 * long fractions), in keys the CRM's schema names and in keys it does not, with spacing of their own: the relay must
 * send each byte for byte. Every one is valid for the CRM's checker, which reads numbers exactly.
 */
export function exactNumberEvents(userId: string): Array<{ kind: string; method: 'POST' | 'PUT'; path: string; text: string }> {
  const at = '"timestamp":"2026-11-24T10:00:00Z","origin":"sub.example.com"';
  return [
    {
      kind: 'payment',
      method: 'POST',
      path: '/v1/integration/payment',
      text: `{"user_id":"${userId}","payment_id":9007199254740993,"vendor_id":18446744073709551617,"amount":1e400,"currency":"EUR","exchange_rate":1.0,"fee_amount":0.10000000000000000001,${at},"status":"Approved","type":"Credit","meta":{"psp_ref":98765432109876543210,"tiny":-1e-400,"exp":1E+2}, "ledger_seq" : 123456789012345678901234567890 }`,
    },
    {
      kind: 'casino',
      method: 'POST',
      path: '/v1/integration/casino',
      text: `{"user_id":"${userId}","activity_id":"a-1","amount":12.50,"currency":"EUR","exchange_rate":1,"game_id":9007199254740993,"game_name":"Book",\n"is_round_end":true,${at},"round_id":"r-1","status":"Approved","type":"Bet","vendor_id":9223372036854775807,"balance_before":-0.0,"balance_after":1.0e-5,"provider_round":18014398509481985}`,
    },
    {
      kind: 'cart',
      method: 'POST',
      path: '/v1/integration/cart',
      text: `{"user_id":"${userId}","amount":0,"cart_id":9007199254740993,"currency":"EUR","discount_amount":0.00,"status":"Successful",${at},"type":"Checkout","device_type":"mobile","exchange_rate":1,"payments":[{"type":"card","amount":1e2,"psp_id":98765432109876543210}],"items":[{"id":18446744073709551615,"type":"ticket","name":"Lotto","description":"","amount":0,"discount_amount":0,"bonus_code":""}]}`,
    },
    {
      kind: 'bonus',
      method: 'POST',
      path: '/v1/integration/bonus',
      text: `{"user_id":"${userId}","user_bonus_id":"ub-${userId}","bonus_id":"b-1","bonus_code":"NOT-CREDITED","status":"Created","type":"Gift","product":"Casino","amount":9007199254740993,"currency":"EUR","exchange_rate":1,${at},"meta":{"campaign":12345678901234567890}}`,
    },
    {
      kind: 'custom',
      method: 'POST',
      path: '/v1/integration/custom',
      text: `{"user_id":"${userId}",${at},"notification_type":"big","data":{"ids":[9007199254740993,-9007199254740993],"huge":1e400,"small":-1e-400,"long":0.12345678901234567890123}}`,
    },
  ];
}
