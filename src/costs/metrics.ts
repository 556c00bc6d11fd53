/**
 * The cost metrics (docs/costs.md "Metrics"). Prometheus samples are doubles: they show trends, while the exact
 * figures are the ledger's (/admin/costs). Counters only grow, so an amount taken back (an estimate replaced by the
 * provider's price, the cost of a send that sent nothing) is counted in sms_gateway_cost_withdrawn_total:
 * spend = sms_gateway_cost_total - sms_gateway_cost_withdrawn_total.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CostSource } from '../ledger/schema.js';
import { microsToUnits } from '../kit/money.js';
import type { Budget } from './budgets.js';

export interface CostMetrics {
  costAdded(provider: string, country: string, currency: string, source: CostSource, micros: bigint): void;
  costWithdrawn(provider: string, country: string, currency: string, source: CostSource, micros: bigint): void;
  /** A message refused because it would pass this budget's cap. */
  budgetRefused(budget: string): void;
  /** A budget period's spend as last seen by this instance (the share of its limit). */
  budgetSpent(budget: Budget, periodStart: number, spentMicros: bigint): void;
  /** What a provider's account has left, as its last send answer said (Vonage). */
  providerBalance(provider: string, currency: string, micros: bigint): void;
}

export function createCostMetrics(registry: Registry, budgets: readonly Budget[], warnShare: number, now: () => number): CostMetrics {
  const labelNames = ['provider', 'country', 'currency', 'source'] as const;
  const added = new Counter({
    name: 'sms_gateway_cost_total',
    help: 'What messages cost, in units of the currency: estimates when counted, prices as their providers report them.',
    labelNames,
    registers: [registry],
  });
  const withdrawn = new Counter({
    name: 'sms_gateway_cost_withdrawn_total',
    help: 'Amounts of sms_gateway_cost_total taken back: estimates replaced by a reported price, costs of sends that sent nothing.',
    labelNames,
    registers: [registry],
  });
  const refused = new Counter({
    name: 'sms_gateway_budget_refusals_total',
    help: 'Messages refused (400 budget_exceeded) because they would pass a budget.',
    labelNames: ['budget'],
    registers: [registry],
  });
  // The period each budget's ratio was last seen in: a new period starts at 0 until this instance counts in it.
  const seen = new Map<string, { budget: Budget; periodStart: number; ratio: number }>();
  const periodOf = (b: Budget, at: number) => {
    const d = new Date(at);
    return b.period === 'day' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) : Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  };
  new Gauge({
    name: 'sms_gateway_budget_used_ratio',
    help: "The share of each budget's limit spent in its current period, as this instance last counted it.",
    labelNames: ['budget', 'period'],
    registers: [registry],
    collect() {
      this.reset();
      const at = now();
      for (const b of budgets) {
        const s = seen.get(b.name);
        this.set({ budget: b.name, period: b.period }, s && s.periodStart === periodOf(b, at) ? s.ratio : 0);
      }
    },
  });
  const warning = new Gauge({
    name: 'sms_gateway_budget_warning_ratio',
    help: 'The share of each budget at which the warning fires (costs.warn_share).',
    labelNames: ['budget'],
    registers: [registry],
  });
  for (const b of budgets) warning.set({ budget: b.name }, warnShare);
  const balance = new Gauge({
    name: 'sms_gateway_provider_balance',
    help: "What a provider's account has left, in units of the currency, as its last send answer on this instance said (Vonage's remaining-balance).",
    labelNames: ['provider', 'currency'],
    registers: [registry],
  });
  for (const b of budgets) refused.inc({ budget: b.name }, 0);
  return {
    costAdded(provider, country, currency, source, micros) {
      if (micros !== 0n) added.inc({ provider, country, currency, source }, microsToUnits(micros));
    },
    costWithdrawn(provider, country, currency, source, micros) {
      if (micros !== 0n) withdrawn.inc({ provider, country, currency, source }, microsToUnits(micros));
    },
    budgetRefused(budget) {
      refused.inc({ budget });
    },
    providerBalance(provider, currency, micros) {
      balance.set({ provider, currency }, microsToUnits(micros));
    },
    budgetSpent(budget, periodStart, spentMicros) {
      const ratio = budget.limitMicros === 0n ? 1 : Number((spentMicros * 1_000_000n) / budget.limitMicros) / 1_000_000;
      const s = seen.get(budget.name);
      if (!s || s.periodStart <= periodStart) seen.set(budget.name, { budget, periodStart, ratio });
    },
  };
}
