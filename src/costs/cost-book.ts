/**
 * The costs configuration read once for the send and receipt paths (docs/costs.md): the rate tables, the budgets
 * and the metrics they report through. Built by src/gateway.ts and handed to the claim, the record and the intake.
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.js';
import type { CostSource } from '../ledger/schema.js';
import { readBudgets, type Budget } from './budgets.js';
import { createCostMetrics, type CostMetrics } from './metrics.js';
import { createRateBook, estimateCost, type RateBook } from './rates.js';

export interface CostBook {
  rates: RateBook;
  budgets: readonly Budget[];
  metrics?: CostMetrics;
  /** The providers whose prices are asked after the final status (Twilio), and how long after (src/costs/price-fetch.ts). */
  priceFetch?: { providers: ReadonlySet<string>; afterMs: number };
}

/** The cost columns a message is claimed with: its estimate, or `none` when no rate covers it. */
export interface CostColumns {
  cost_micros: string | null;
  cost_currency: string | null;
  cost_source: CostSource;
}

export function estimateColumns(book: CostBook, provider: string, country: string | null, segments: number): CostColumns {
  const estimate = estimateCost(book.rates, provider, country, segments);
  return estimate
    ? { cost_micros: estimate.micros.toString(), cost_currency: estimate.currency, cost_source: 'estimate' }
    : { cost_micros: null, cost_currency: null, cost_source: 'none' };
}

/**
 * Each route's members (a route without rates of its own is estimated at its dearest member): its catch-all members and
 * every rule's, since a rule may hand the message to a member the catch-all does not list (a budget estimated at the
 * catch-all alone would count nothing for a rule's member that alone has a rate).
 */
function routeMembersOf(providers: Config['providers']): Map<string, readonly string[]> {
  const members = new Map<string, readonly string[]>();
  for (const [name, p] of Object.entries(providers)) {
    if (p.type !== 'route') continue;
    const route = p as { members: string[]; rules?: Array<{ members: string[] }> };
    members.set(name, [...new Set([...route.members, ...(route.rules ?? []).flatMap((rule) => rule.members)])]);
  }
  return members;
}

export function createCostBook(config: Pick<Readonly<Config>, 'costs' | 'providers'>, registry?: Registry, now: () => number = Date.now): CostBook {
  const budgets = readBudgets(config.costs.budgets);
  const fetch = config.costs.twilio_price_fetch;
  const fetched = new Set(Object.entries(config.providers).flatMap(([name, p]) => (p.type === 'twilio' && fetch.enabled ? [name] : [])));
  return {
    rates: createRateBook(config.costs.rates, routeMembersOf(config.providers)),
    budgets,
    ...(fetched.size > 0 ? { priceFetch: { providers: fetched, afterMs: fetch.after } } : {}),
    ...(registry ? { metrics: createCostMetrics(registry, budgets, config.costs.warn_share, now) } : {}),
  };
}
