/**
 * Estimates from the configured rate tables (costs.rates, docs/costs.md "Estimates"): a provider's price of one
 * segment to the recipient's country (or its `*` rate), times the message's segments, as GOV.UK Notify bills by
 * fragment. A route without a table of its own is estimated at the dearest of its members that has one, so a budget
 * never counts less than the route may spend. Pure.
 */
import type { CostsConfig } from '../config/costs-config.js';
import { parseMicros } from '../kit/money.js';

/** An amount in micro-units of a currency. */
export interface Priced {
  micros: bigint;
  currency: string;
}

/** The rate tables read once: per provider, its currency and micro-units per segment by country. */
export interface RateBook {
  perSegment(provider: string, country: string | null): Priced | null;
}

export function createRateBook(rates: CostsConfig['rates'], routeMembers: ReadonlyMap<string, readonly string[]>): RateBook {
  const tables = new Map<string, { currency: string; byCountry: Map<string, bigint> }>();
  for (const [provider, table] of Object.entries(rates)) {
    tables.set(provider, { currency: table.currency, byCountry: new Map(Object.entries(table.per_segment).map(([c, a]) => [c, parseMicros(a)!])) });
  }
  const own = (provider: string, country: string | null): Priced | null => {
    const table = tables.get(provider);
    if (!table) return null;
    const micros = (country === null ? undefined : table.byCountry.get(country)) ?? table.byCountry.get('*');
    return micros === undefined ? null : { micros, currency: table.currency };
  };
  return {
    perSegment(provider, country) {
      const direct = own(provider, country);
      if (direct || !routeMembers.has(provider)) return direct;
      let dearest: Priced | null = null;
      for (const member of routeMembers.get(provider)!) {
        const rate = own(member, country);
        // Members in other currencies cannot be compared: the first currency found decides.
        if (rate && (!dearest || (rate.currency === dearest.currency && rate.micros > dearest.micros))) dearest = rate;
      }
      return dearest;
    },
  };
}

/** The estimate of a message of `segments` segments; null when no rate covers its provider and country. */
export function estimateCost(book: RateBook, provider: string, country: string | null, segments: number): Priced | null {
  const rate = book.perSegment(provider, country);
  return rate && { micros: rate.micros * BigInt(segments), currency: rate.currency };
}
