/**
 * Budgets (costs.budgets, docs/costs.md "Budgets"): which caps a message counts toward, the period it counts in, and
 * whether a group of messages fits under the caps, in order. Pure: the spend comes from the ledger's locked rows
 * (src/ledger/costs.ts, lockBudgetSpend) and the decisions go back to it.
 */
import type { BudgetConfig } from '../config/costs-config.js';
import { parseMicros } from '../kit/money.js';
import type { BudgetPeriodKey } from '../ledger/costs.js';

const DAY_MS = 86_400_000;

/** The UTC day or month a moment falls in, as its first millisecond. */
export function periodStart(period: BudgetConfig['period'], at: number): number {
  if (period === 'day') return Math.floor(at / DAY_MS) * DAY_MS;
  const d = new Date(at);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** A budget read once: its limit in micro-units. */
export interface Budget extends BudgetConfig {
  limitMicros: bigint;
}

export function readBudgets(configs: readonly BudgetConfig[]): Budget[] {
  return configs.map((b) => ({ ...b, limitMicros: parseMicros(b.limit)! }));
}

/** What a message is: its brand, country and the currency of its cost. */
export interface BudgetSubject {
  brandId: string | null;
  country: string | null;
  currency: string | null;
}

/** The budgets a message counts toward: its brand's and country's (or every one's), in its cost's currency. */
export function budgetsFor(budgets: readonly Budget[], subject: BudgetSubject): Budget[] {
  if (subject.currency === null) return [];
  return budgets.filter(
    (b) =>
      b.currency === subject.currency &&
      (b.brand_id === undefined || b.brand_id === subject.brandId) &&
      (b.country === undefined || b.country === subject.country),
  );
}

export function periodKey(budget: Budget, at: number): BudgetPeriodKey {
  return { budget: budget.name, periodStart: periodStart(budget.period, at), currency: budget.currency };
}

/** One message to fit: its cost and the caps (with their period keys) it counts toward. */
export interface FitItem {
  micros: bigint;
  caps: ReadonlyArray<{ budget: Budget; key: string }>;
}

export type FitDecision = { fits: true } | { fits: false; budget: Budget; spentMicros: bigint };

/**
 * Takes the messages in order: each one that stays within every cap is counted (the next sees its spend); one that
 * would pass a cap is refused, naming the first such cap, and counts nothing. `spent` (by key) is updated in place.
 */
export function decideBudgetFits(items: readonly FitItem[], spent: Map<string, bigint>): FitDecision[] {
  return items.map((item) => {
    for (const { budget, key } of item.caps) {
      const used = spent.get(key) ?? 0n;
      if (used + item.micros > budget.limitMicros) return { fits: false, budget, spentMicros: used };
    }
    for (const { key } of item.caps) spent.set(key, (spent.get(key) ?? 0n) + item.micros);
    return { fits: true };
  });
}

/** The refusal's text, naming the cap (the CRM stores it with the failed action). */
export function budgetRefusal(budget: Budget, costText: string, spentText: string): string {
  const scope = [budget.brand_id === undefined ? null : `brand ${budget.brand_id}`, budget.country === undefined ? null : `country ${budget.country}`]
    .filter((s) => s !== null)
    .join(', ');
  return `budget ${budget.name} (${scope || 'all messages'}, ${budget.limit} ${budget.currency} a ${budget.period}) would be passed: ${spentText} spent, this message ${costText}; nothing was sent`;
}
