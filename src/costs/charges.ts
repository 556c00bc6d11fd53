/**
 * A message's cost in the ledger (docs/costs.md): counted when it is claimed to send (its estimate, toward its budgets
 * and the daily rollup, in the claim's transaction), then changed where the send path and the receipts learn more:
 * taken back when its send sent nothing, moved to the member a route gave it to, replaced by the price its provider
 * reports. Every change replaces the message's contribution (before → after) in the three places at once: its
 * row, its cost_daily row and its budgets, so they never disagree.
 */
import type { Transaction } from 'kysely';
import {
  addBudgetSpend,
  addToCostRollup,
  budgetKeyText,
  findCostTargets,
  lockBudgetSpend,
  setMessageCosts,
  type BudgetPeriodKey,
  type CostRollupChange,
  type CostTarget,
  type MessageCost,
} from '../ledger/costs.js';
import type { CostSource, Database } from '../ledger/schema.js';
import { queuePriceFetches } from '../ledger/price-fetches.js';
import { storedIdentifiers } from '../http/exact-json.js';
import { formatMicros, toMicros } from '../kit/money.js';
import { budgetRefusal, budgetsFor, decideBudgetFits, periodKey, type Budget, type FitItem } from './budgets.js';
import type { CostBook } from './cost-book.js';
import { estimateCost } from './rates.js';
import type { ReportedPrice } from '../../providers/types.js';

type Trx = Transaction<Database>;
const DAY_MS = 86_400_000;

/** The activity's identifiers finance reports by, as text ('' when absent). */
export interface ActivityDimensions {
  brand_id: string;
  activity_id: string;
  action_group_id: string;
}

const DIMENSIONS = ['brand_id', 'activity_id', 'action_group_id'] as const;

/**
 * Read from the activity as stored, as the send path reads its brand (storedIdentifiers): an integer beyond 2^53 by the
 * digits as received, since the parsed double may be another number.
 */
export function activityDimensions(activityJson: string): ActivityDimensions {
  const ids = storedIdentifiers(activityJson, DIMENSIONS);
  return { brand_id: ids.brand_id ?? '', activity_id: ids.activity_id ?? '', action_group_id: ids.action_group_id ?? '' };
}

/** What a message adds to the figures: its carrier, its amount (null when none is known) and where that came from. */
export interface Contribution {
  provider: string;
  micros: bigint | null;
  currency: string | null;
  source: CostSource;
}

/** A message as the cost path sees it. */
export interface CostSubject {
  smsId: string;
  country: string | null;
  segments: number;
  createdAt: number;
  dimensions: ActivityDimensions;
}

export function subjectOf(target: CostTarget): CostSubject {
  return {
    smsId: target.sms_id,
    country: target.country,
    segments: Number(target.segments),
    createdAt: Number(target.created_at),
    dimensions: activityDimensions(target.activity_json),
  };
}

/** The message's contribution as its row holds it; null when it is not counted. */
export function contributionOf(target: CostTarget): Contribution | null {
  if (target.cost_source === null) return null;
  return {
    provider: target.provider,
    micros: target.cost_micros === null ? null : toMicros(target.cost_micros),
    currency: target.cost_currency,
    source: target.cost_source,
  };
}

function rollupChange(subject: CostSubject, c: Contribution, sign: 1 | -1, delivered = 0): CostRollupChange {
  const micros = c.micros ?? 0n;
  const s = BigInt(sign);
  return {
    key: {
      day: Math.floor(subject.createdAt / DAY_MS) * DAY_MS,
      provider: c.provider,
      country: subject.country ?? '',
      ...subject.dimensions,
      currency: c.currency ?? '',
    },
    messages: sign,
    segments: sign * subject.segments,
    delivered: sign * delivered,
    costMicros: s * micros,
    reportedMicros: c.source === 'reported' ? s * micros : 0n,
  };
}

function budgetChanges(book: CostBook, subject: CostSubject, c: Contribution, sign: 1 | -1): Array<BudgetPeriodKey & { micros: bigint }> {
  if (c.micros === null || c.micros === 0n) return [];
  const budgets = budgetsFor(book.budgets, { brandId: subject.dimensions.brand_id || null, country: subject.country, currency: c.currency });
  return budgets.map((b) => ({ ...periodKey(b, subject.createdAt), micros: BigInt(sign) * c.micros! }));
}

/**
 * Replaces each message's contribution: `before` taken back and `after` added (null: not counted), in its row, the
 * rollup and its budgets, in `trx`. `delivered`: the message was counted delivered, so the count moves with it.
 */
export async function replaceContributions(
  trx: Trx,
  book: CostBook,
  changes: ReadonlyArray<{ subject: CostSubject; before: Contribution | null; after: Contribution | null; delivered?: boolean }>,
): Promise<void> {
  if (changes.length === 0) return;
  const rollup: CostRollupChange[] = [];
  const spend: Array<BudgetPeriodKey & { micros: bigint }> = [];
  const rows: MessageCost[] = [];
  for (const { subject, before, after, delivered } of changes) {
    const d = delivered ? 1 : 0;
    if (before) {
      rollup.push(rollupChange(subject, before, -1, d));
      spend.push(...budgetChanges(book, subject, before, -1));
      if (before.micros !== null) book.metrics?.costWithdrawn(before.provider, subject.country ?? '', before.currency ?? '', before.source, before.micros);
    }
    if (after) {
      rollup.push(rollupChange(subject, after, 1, d));
      spend.push(...budgetChanges(book, subject, after, 1));
      if (after.micros !== null) book.metrics?.costAdded(after.provider, subject.country ?? '', after.currency ?? '', after.source, after.micros);
    }
    rows.push({ smsId: subject.smsId, micros: after?.micros ?? null, currency: after?.currency ?? null, source: after?.source ?? null });
  }
  await setMessageCosts(trx, rows);
  await addToCostRollup(trx, rollup);
  await addBudgetSpend(trx, spend);
}

/** Counts messages delivered in their rollup rows (only those counted: a message from before costs were kept is not). */
export async function countDeliveries(trx: Trx, targets: readonly CostTarget[]): Promise<void> {
  const changes: CostRollupChange[] = [];
  for (const t of targets) {
    const c = contributionOf(t);
    if (!c) continue;
    const change = rollupChange(subjectOf(t), c, 1, 1);
    changes.push({ ...change, messages: 0, segments: 0, costMicros: 0n, reportedMicros: 0n });
  }
  await addToCostRollup(trx, changes);
}

/** One message claimed to send, with the cost columns its row was claimed with. */
export interface ChargeItem {
  subject: CostSubject;
  contribution: Contribution;
  /** What a retried message still counted from its last attempt (an uncertain send): taken back, sent or not. */
  previous?: Contribution | null;
}

/** A message that would pass a cap: refused, nothing counted. */
export interface BudgetRefusal {
  budget: Budget;
  error: string;
}

/**
 * Counts the messages a claim is about to send, in order, under the locks of their budgets' rows: each that stays
 * within its caps is counted (its rollup row and budgets); one that would pass a cap is refused (its row is the
 * caller's to mark), naming the cap. Returns the refusals by sms_id.
 */
export async function chargeClaims(trx: Trx, book: CostBook, items: readonly ChargeItem[]): Promise<Map<string, BudgetRefusal>> {
  const refusals = new Map<string, BudgetRefusal>();
  if (items.length === 0) return refusals;
  const fits: FitItem[] = [];
  const keys: BudgetPeriodKey[] = [];
  const periods = new Map<string, number>();
  for (const { subject, contribution: c } of items) {
    const budgets =
      c.micros === null || book.budgets.length === 0
        ? []
        : budgetsFor(book.budgets, { brandId: subject.dimensions.brand_id || null, country: subject.country, currency: c.currency });
    const caps = budgets.map((budget) => {
      const key = periodKey(budget, subject.createdAt);
      keys.push(key);
      periods.set(budgetKeyText(key), key.periodStart);
      return { budget, key: budgetKeyText(key) };
    });
    fits.push({ micros: c.micros ?? 0n, caps });
  }
  const spent = keys.length > 0 ? await lockBudgetSpend(trx, keys) : new Map<string, bigint>();
  const decisions = decideBudgetFits(fits, spent);
  const counted: ChargeItem[] = [];
  for (const [i, decision] of decisions.entries()) {
    const item = items[i]!;
    if (decision.fits) counted.push(item);
    else {
      const currency = decision.budget.currency;
      refusals.set(item.subject.smsId, {
        budget: decision.budget,
        error: budgetRefusal(
          decision.budget,
          `${formatMicros(fits[i]!.micros, currency)} ${currency}`,
          `${formatMicros(decision.spentMicros, currency)} ${currency}`,
        ),
      });
      book.metrics?.budgetRefused(decision.budget.name);
    }
  }
  if (book.metrics) {
    for (const fit of fits) for (const cap of fit.caps) book.metrics.budgetSpent(cap.budget, periods.get(cap.key)!, spent.get(cap.key) ?? 0n);
  }
  const rollup: CostRollupChange[] = [];
  const spend: Array<BudgetPeriodKey & { micros: bigint }> = [];
  for (const { subject, previous } of items) {
    if (!previous) continue;
    rollup.push(rollupChange(subject, previous, -1));
    spend.push(...budgetChanges(book, subject, previous, -1));
    if (previous.micros !== null)
      book.metrics?.costWithdrawn(previous.provider, subject.country ?? '', previous.currency ?? '', previous.source, previous.micros);
  }
  for (const { subject, contribution } of counted) {
    rollup.push(rollupChange(subject, contribution, 1));
    spend.push(...budgetChanges(book, subject, contribution, 1));
    if (contribution.micros !== null)
      book.metrics?.costAdded(contribution.provider, subject.country ?? '', contribution.currency ?? '', contribution.source, contribution.micros);
  }
  await addToCostRollup(trx, rollup);
  await addBudgetSpend(trx, spend);
  return refusals;
}

/** The estimate of a message carried by `provider`, as a contribution (`none` when no rate covers it). */
export function estimateContribution(book: CostBook, provider: string, subject: CostSubject): Contribution {
  const estimate = estimateCost(book.rates, provider, subject.country, subject.segments);
  return estimate
    ? { provider, micros: estimate.micros, currency: estimate.currency, source: 'estimate' }
    : { provider, micros: null, currency: null, source: 'none' };
}

/** A provider's answer to one send, as the cost path needs it (src/sms/record.ts). */
export interface SentCost {
  smsId: string;
  /** The provider the message was claimed for (a route's name), and the one that carried it. */
  claimedProvider: string;
  carrier: string;
  /** False: the send is known to have sent nothing (rejected, retryable), so it costs nothing. */
  mayHaveSent: boolean;
  price?: ReportedPrice;
}

/**
 * After a send: a send that sent nothing is taken back, a route's message moves to the member that carried it (at
 * that member's rate), a price in the answer (Vonage) replaces the estimate. Runs before the answer is written, so it
 * reads the row as the claim left it. Most answers change nothing and cost no query.
 */
export async function recordSendCosts(trx: Trx, book: CostBook, sends: readonly SentCost[]): Promise<void> {
  const changing = sends.filter((s) => !s.mayHaveSent || s.carrier !== s.claimedProvider || s.price);
  if (changing.length === 0) return;
  const targets = new Map(
    (
      await findCostTargets(
        trx,
        changing.map((s) => s.smsId),
      )
    ).map((t) => [t.sms_id, t]),
  );
  const changes = changing.flatMap((send) => {
    const target = targets.get(send.smsId);
    if (!target) return [];
    const subject = subjectOf(target);
    const before = contributionOf(target);
    let after: Contribution | null = null;
    if (send.mayHaveSent) {
      after = send.price
        ? { provider: send.carrier, micros: send.price.micros, currency: send.price.currency, source: 'reported' }
        : estimateContribution(book, send.carrier, subject);
    }
    if (before === null && after === null) return [];
    return [{ subject, before, after, delivered: target.delivery_status === 'delivered' }];
  });
  await replaceContributions(trx, book, changes);
}

/** What the receipts of one transaction tell the cost path about a message. */
export interface ReceiptCost {
  smsId: string;
  /** A receipt of this transaction made it delivered. */
  deliveredNow: boolean;
  /** A receipt of this transaction gave it its final status (delivered or not). */
  finalNow?: boolean;
  price?: ReportedPrice;
  perPart?: boolean;
}

/**
 * After receipts: a reported price replaces the message's cost (a part's price only for a message of one part), and a
 * message that became delivered is counted delivered in its rollup row. Runs after the receipts moved the statuses.
 */
export async function recordReceiptCosts(
  trx: Trx,
  book: CostBook,
  receipts: readonly ReceiptCost[],
  now = 0,
  /** The messages as the receipt path already read them (before this transaction's receipts): no second read. */
  known?: ReadonlyMap<string, CostTarget>,
): Promise<void> {
  const relevant = receipts.filter((r) => r.deliveredNow || r.price || r.finalNow);
  if (relevant.length === 0) return;
  const targets = new Map<string, CostTarget>();
  for (const r of relevant) {
    const t = known?.get(r.smsId);
    if (t) targets.set(r.smsId, t);
  }
  const missing = relevant.filter((r) => !targets.has(r.smsId)).map((r) => r.smsId);
  if (missing.length > 0) for (const t of await findCostTargets(trx, missing)) targets.set(t.sms_id, t);
  const deliveredNow = new Set(relevant.filter((r) => r.deliveredNow).map((r) => r.smsId));
  const priced = new Map<string, ReportedPrice>();
  for (const r of relevant) {
    const target = targets.get(r.smsId);
    if (!r.price || !target || (r.perPart && Number(target.segments) > 1)) continue;
    // Only for a message that may have been sent: a refused one costs nothing whatever a stray receipt says.
    if (target.state !== 'submitted' && target.state !== 'uncertain') continue;
    priced.set(r.smsId, r.price); // the last of the transaction's prices stands
  }
  const changes: Parameters<typeof replaceContributions>[2][number][] = [];
  const updated = new Map<string, CostTarget>();
  for (const [smsId, price] of priced) {
    const target = targets.get(smsId)!;
    const before = contributionOf(target);
    const provider = target.provider;
    const after: Contribution = { provider, micros: price.micros, currency: price.currency, source: 'reported' };
    if (before && before.source === 'reported' && before.micros === after.micros && before.currency === after.currency) continue;
    const delivered = target.delivery_status === 'delivered' && !deliveredNow.has(smsId);
    changes.push({ subject: subjectOf(target), before, after, delivered });
    updated.set(smsId, { ...target, cost_micros: price.micros.toString(), cost_currency: price.currency, cost_source: 'reported' });
  }
  await replaceContributions(trx, book, changes);
  await countDeliveries(
    trx,
    [...deliveredNow].flatMap((id) => {
      const t = updated.get(id) ?? targets.get(id);
      return t ? [t] : [];
    }),
  );
  // A provider that reports no price in its receipts is asked for it after the final status (src/costs/price-fetch.ts).
  const fetch = book.priceFetch;
  if (!fetch) return;
  const owed = relevant.flatMap((r) => {
    const t = updated.get(r.smsId) ?? targets.get(r.smsId);
    if (!r.finalNow || !t || t.cost_source === 'reported' || t.cost_source === null || t.provider_message_id === null) return [];
    if (!fetch.providers.has(t.provider)) return [];
    return [{ sms_id: t.sms_id, provider: t.provider, provider_message_id: t.provider_message_id, next_attempt_at: now + fetch.afterMs }];
  });
  await queuePriceFetches(trx, owed);
}
