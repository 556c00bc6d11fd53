/**
 * Routing changes (src/provider-wrappers/routing-controls.ts) as tables: an admin request read into its target and
 * value or refused naming the field, stored rows read back into the state in force, and the members a rule sends
 * through under that state.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { FailoverRouteConfig } from '../../src/config/failover-route-config.js';
import { controlStateOf, NO_CONTROLS, planMembers, readControlChange, type ProvidersConfig } from '../../src/provider-wrappers/routing-controls.js';

const config = parseConfig(
  {
    server: { environment: 'development' },
    database: { url: 'sqlite::memory:' },
    auth: { api_keys: ['k'] },
    providers: {
      sinch: { type: 'sandbox' },
      infobip: { type: 'sandbox' },
      twilio: { type: 'sandbox' },
      promo: {
        type: 'route',
        members: ['twilio'],
        strategy: 'weighted',
        weights: { sinch: 2, infobip: 1, twilio: 1 },
        rules: [
          { name: 'brazil', match: { countries: ['BR'] }, members: ['sinch', 'infobip'] },
          { match: { countries: ['MX'] }, members: ['infobip'], strategy: 'failover' },
          { name: 'gb', match: { countries: ['GB'] }, members: ['sinch', 'twilio'], strategy: 'cheapest_delivering' },
        ],
      },
    },
    costs: { rates: { sinch: { currency: 'EUR', per_segment: { '*': '0.05' } } } },
  },
  {},
);
const providers = config.providers as ProvidersConfig;
const promo = config.providers.promo as FailoverRouteConfig;

describe('an admin request', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['suspend a provider', { action: 'suspend', provider: 'sinch' }, 'provider:sinch={"suspended":true}'],
    ['resume it', { action: 'resume', provider: 'sinch' }, 'provider:sinch=null'],
    ['suspend a member of a route', { action: 'suspend', route: 'promo', member: 'infobip' }, 'member:promo/infobip={"suspended":true}'],
    ["a route's weights", { action: 'set_weights', route: 'promo', weights: { sinch: 1, infobip: 3 } }, 'weights:promo={"sinch":1,"infobip":3}'],
    ["a rule's weights, by name", { action: 'set_weights', route: 'promo', rule: 'brazil', weights: { sinch: 1 } }, 'weights:promo/brazil={"sinch":1}'],
    [
      "a rule's weights, by the number of a named rule",
      { action: 'set_weights', route: 'promo', rule: 1, weights: { sinch: 1 } },
      'weights:promo/brazil={"sinch":1}',
    ],
    ["a rule's members, by number", { action: 'set_members', route: 'promo', rule: '2', members: ['twilio', 'sinch'] }, 'members:promo/2=["twilio","sinch"]'],
    ["the catch-all's members", { action: 'set_members', route: 'promo', rule: 'catch-all', members: ['sinch'] }, 'members:promo/catch-all=["sinch"]'],
    ['restore them', { action: 'clear_members', route: 'promo', rule: 'catch-all' }, 'members:promo/catch-all=null'],
  ])('%s', (_, body, expected) => {
    const change = readControlChange(body, providers);
    expect(change.ok ? `${change.target}=${change.value}` : change.error).toBe(expected);
  });

  it.each<[string, unknown, string]>([
    ['not an object', [], 'body:'],
    ['an unknown action', { action: 'pause' }, 'action:'],
    ['a route suspended as a provider', { action: 'suspend', provider: 'promo' }, 'provider: "promo"'],
    ['a provider not configured', { action: 'suspend', provider: 'nexmo' }, 'provider: "nexmo"'],
    ['provider and route together', { action: 'suspend', provider: 'sinch', route: 'promo', member: 'sinch' }, 'provider: give either'],
    ['no route', { action: 'set_weights', weights: { sinch: 1 } }, 'route: required'],
    ['a provider as the route', { action: 'set_weights', route: 'sinch', weights: { sinch: 1 } }, 'route: "sinch"'],
    ['a rule past the last', { action: 'set_members', route: 'promo', rule: 4, members: ['sinch'] }, 'rule: "4"'],
    ['members without a rule', { action: 'set_members', route: 'promo', members: ['sinch'] }, 'rule: required'],
    ['a route as a member', { action: 'set_members', route: 'promo', rule: 1, members: ['promo'] }, 'members[0]:'],
    ['a member twice', { action: 'set_members', route: 'promo', rule: 1, members: ['sinch', 'sinch'] }, 'members: a provider is listed twice'],
    ['a negative weight', { action: 'set_weights', route: 'promo', weights: { sinch: -1 } }, 'weights.sinch:'],
    ['a weight for __proto__', { action: 'set_weights', route: 'promo', weights: JSON.parse('{"__proto__": 1}') }, 'weights.__proto__:'],
    ['no weights', { action: 'set_weights', route: 'promo', weights: {} }, 'weights: required'],
    [
      'weights for a failover rule',
      { action: 'set_weights', route: 'promo', rule: 2, weights: { infobip: 1 } },
      'weights: rule 2 of route promo uses strategy failover',
    ],
    [
      'weights for a cheapest_delivering rule',
      { action: 'set_weights', route: 'promo', rule: 'gb', weights: { sinch: 1 } },
      'weights: rule gb of route promo uses strategy cheapest_delivering (members by price and delivery)',
    ],
  ])('refuses %s, naming the field', (_, body, start) => {
    const change = readControlChange(body, providers);
    expect(change.ok ? 'accepted' : change.error.slice(0, start.length)).toBe(start);
  });
});

describe('the members in force', () => {
  const state = (rows: Array<[string, unknown]>) => controlStateOf(rows.map(([target, value]) => ({ target, value: JSON.stringify(value) }))).state;
  const plan = (rule: number, name: string | undefined, rows: Array<[string, unknown]> = []) => {
    const p = planMembers('promo', promo, { rule, name }, state(rows));
    return { members: p.members.join(','), suspended: p.suspended.join(','), strategy: p.strategy, weights: Object.fromEntries(p.weights) };
  };

  it.each<[string, ReturnType<typeof plan>, ReturnType<typeof plan>]>([
    [
      "a rule as configured, with the route's weights",
      plan(1, 'brazil'),
      { members: 'sinch,infobip', suspended: '', strategy: 'weighted', weights: { sinch: 2, infobip: 1, twilio: 1 } },
    ],
    [
      'a rule with its own strategy',
      plan(2, undefined),
      { members: 'infobip', suspended: '', strategy: 'failover', weights: { sinch: 2, infobip: 1, twilio: 1 } },
    ],
    ['the catch-all', plan(0, undefined), { members: 'twilio', suspended: '', strategy: 'weighted', weights: { sinch: 2, infobip: 1, twilio: 1 } }],
    [
      'a suspended provider is left out',
      plan(1, 'brazil', [['provider:sinch', { suspended: true }]]),
      { members: 'infobip', suspended: 'sinch', strategy: 'weighted', weights: { sinch: 2, infobip: 1, twilio: 1 } },
    ],
    [
      'a member suspended on this route',
      plan(1, 'brazil', [['member:promo/infobip', { suspended: true }]]),
      { members: 'sinch', suspended: 'infobip', strategy: 'weighted', weights: { sinch: 2, infobip: 1, twilio: 1 } },
    ],
    [
      'a member suspended on another route stays',
      plan(1, 'brazil', [['member:other/infobip', { suspended: true }]]),
      { members: 'sinch,infobip', suspended: '', strategy: 'weighted', weights: { sinch: 2, infobip: 1, twilio: 1 } },
    ],
    [
      "the route's weights changed",
      plan(1, 'brazil', [['weights:promo', { sinch: 1, infobip: 5 }]]),
      { members: 'sinch,infobip', suspended: '', strategy: 'weighted', weights: { sinch: 1, infobip: 5 } },
    ],
    [
      "the rule's weights beat the route's",
      plan(1, 'brazil', [
        ['weights:promo', { sinch: 1 }],
        ['weights:promo/brazil', { infobip: 9 }],
      ]),
      { members: 'sinch,infobip', suspended: '', strategy: 'weighted', weights: { infobip: 9 } },
    ],
    [
      "the rule's members switched",
      plan(2, undefined, [['members:promo/2', ['twilio', 'sinch']]]),
      { members: 'twilio,sinch', suspended: '', strategy: 'failover', weights: { sinch: 2, infobip: 1, twilio: 1 } },
    ],
    [
      'every member suspended',
      plan(2, undefined, [['provider:infobip', { suspended: true }]]),
      { members: '', suspended: 'infobip', strategy: 'failover', weights: { sinch: 2, infobip: 1, twilio: 1 } },
    ],
  ])('%s', (_, actual, expected) => {
    expect(actual).toEqual(expected);
  });

  it('passes over a stored row it cannot read, naming it', () => {
    const read = controlStateOf([
      { target: 'weights:promo', value: 'not json' },
      { target: 'members:promo/1', value: '{"a": 1}' },
      { target: 'provider:sinch', value: '{"suspended":true}' },
    ]);
    expect(read.unreadable).toEqual(['weights:promo', 'members:promo/1']);
    expect([...read.state.suspended]).toEqual(['sinch']);
    expect(planMembers('promo', promo, { rule: 0, name: undefined }, NO_CONTROLS).members).toEqual(['twilio']);
  });
});
