/**
 * `strategy: cheapest_delivering` in one process (src/provider-wrappers/delivery-choice.ts) over a real ledger: the
 * figures read for the members of the routes that use it, the order each message gets by country, the decisions
 * counted by reason, and the view /admin/routing and the console show. Runs on SQLite, and on PostgreSQL when
 * TEST_DATABASE_URL is set.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FailoverRouteConfig } from '../../src/config/failover-route-config.js';
import { parseConfig } from '../../src/config/load.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { createDeliveryChoice, deliveryViewsJson, type DeliveryChoice } from '../../src/provider-wrappers/delivery-choice.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { submittedMessageRow } from '../helpers/ledger.js';

const MIN = 60_000;
const NOW = 1_800_000_000_000;
const PRICES: Record<string, Record<string, bigint>> = { cheap: { GB: 20_000n, FR: 90_000n }, dear: { GB: 50_000n, FR: 60_000n } };

const config = parseConfig(
  {
    auth: { api_keys: ['k'] },
    providers: {
      cheap: { type: 'sandbox' },
      dear: { type: 'sandbox' },
      other: { type: 'sandbox' },
      promo: { type: 'route', members: ['dear', 'cheap'], strategy: 'cheapest_delivering', recent_delivery: { min_sample: 5 } },
      plain: { type: 'route', members: ['other'] },
    },
    costs: {
      rates: {
        cheap: { currency: 'EUR', per_segment: { GB: '0.02', FR: '0.09' } },
        dear: { currency: 'EUR', per_segment: { GB: '0.05', FR: '0.06' } },
      },
    },
  },
  {},
);
const routes = new Map(Object.entries(config.providers).flatMap(([name, p]) => (p.type === 'route' ? [[name, p as FailoverRouteConfig] as const] : [])));
const promo = routes.get('promo')!;

let n = 0;
function sent(provider: string, country: string, ageMin: number, receiptAfterMin: number | null) {
  const at = NOW - ageMin * MIN;
  return submittedMessageRow(`dc-${String(++n).padStart(4, '0')}`, provider, at, {
    country,
    ...(receiptAfterMin === null ? {} : { delivery_status: 'delivered', delivery_source: 'receipt', completed_at: at + receiptAfterMin * MIN }),
  });
}

describe('the delivery choice of a process', () => {
  let opened: TestLedger | undefined;
  let ledger: Ledger;
  let choice: DeliveryChoice;
  const registry = new Registry();

  beforeAll(async () => {
    opened = await openTestLedger('delivery-choice');
    ledger = opened.ledger;
    await ledger.db
      .insertInto('messages')
      .values([
        // cheap in GB: 6 messages without a receipt past the deadline (late); in FR, fast.
        ...[7, 8, 9, 10, 11, 12].map((age) => sent('cheap', 'GB', age, null)),
        ...[7, 8, 9].map((age) => sent('cheap', 'FR', age, 1)),
        ...[7, 8, 9, 10, 11].map((age) => sent('dear', 'GB', age, 1)),
        // A provider of no cheapest_delivering route: never read.
        sent('other', 'GB', 7, null),
      ])
      .execute();
    choice = createDeliveryChoice({
      readDb: ledger.db,
      now: () => NOW,
      logger: pino({ level: 'silent' }),
      registry,
      priceOf: (provider, country) => {
        const micros = PRICES[provider]?.[country ?? ''];
        return micros === undefined ? null : { micros, currency: 'EUR' };
      },
    });
    await choice.refresh(routes);
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('orders each country by its own prices and figures, and counts each decision', async () => {
    // GB: cheap is cheaper but 0 of 6 on time: stepped down behind dear.
    expect(choice.order('promo', promo, 'catch-all', promo.members, 'GB')).toEqual(['dear', 'cheap']);
    // FR: dear is cheaper there; cheap delivers but costs more.
    expect(choice.order('promo', promo, 'catch-all', promo.members, 'FR')).toEqual(['dear', 'cheap']);
    // A country no rate names and no figures: neither has a price, configured order.
    expect(choice.order('promo', promo, 'catch-all', promo.members, 'DE')).toEqual(['dear', 'cheap']);
    const metric = await registry.getSingleMetric('sms_gateway_route_decisions_total')!.get();
    expect(metric.values.map((v) => [v.labels.country, v.labels.member, v.labels.reason, v.value]).sort()).toEqual([
      ['DE', 'dear', 'no_price', 1],
      ['FR', 'dear', 'cheapest', 1],
      ['GB', 'dear', 'cheaper_stepped_down', 1],
    ]);
    const stepped = await registry.getSingleMetric('sms_gateway_route_member_stepped_down')!.get();
    expect(stepped.values.find((v) => v.labels.country === 'GB' && v.labels.member === 'cheap')?.value).toBe(1);
  });

  it('shows, per country, each member with its price and figures, and the last decision', () => {
    const [view] = deliveryViewsJson(choice.view(routes));
    expect(view).toMatchObject({ route: 'promo', figures_at: NOW, settings: { window_ms: 15 * MIN, min_sample: 5 } });
    const gb = view!.countries.find((c) => c.country === 'GB')!;
    expect(gb.members).toEqual([
      expect.objectContaining({ member: 'dear', price: '0.05', currency: 'EUR', sent: 5, judged: 5, on_time: 5, share: 1, counted: true, state: 'in' }),
      expect.objectContaining({ member: 'cheap', price: '0.02', sent: 6, judged: 6, on_time: 0, share: 0, state: 'stepped_down', since: NOW }),
    ]);
    expect(gb.last_decision).toMatchObject({ at: NOW, rule: 'catch-all', order: ['dear', 'cheap'], reason: 'cheaper_stepped_down' });
    expect(view!.countries.map((c) => c.country)).toEqual(['DE', 'FR', 'GB']);
    // The route without the strategy has no view.
    expect(choice.view(routes).map((v) => v.route)).toEqual(['promo']);
  });

  it('reads a member an admin switched in at the next refresh', async () => {
    expect(choice.order('promo', promo, 'catch-all', ['other', 'cheap'], 'GB')).toEqual(['other', 'cheap']);
    await choice.refresh(routes);
    const [view] = deliveryViewsJson(choice.view(routes));
    const other = view!.countries.find((c) => c.country === 'GB')!.last_decision!.members.find((m) => m.member === 'other');
    expect(other).toMatchObject({ price: null, sent: 0 });
    // Its one late message is read now, and counts at the next decision (one judged: too few to step it down).
    choice.order('promo', promo, 'catch-all', ['other', 'cheap'], 'GB');
    const again = deliveryViewsJson(choice.view(routes))[0]!.countries.find((c) => c.country === 'GB')!;
    expect(again.last_decision!.members.find((m) => m.member === 'other')).toMatchObject({ sent: 1, judged: 1, on_time: 0, state: 'in' });
  });
});
