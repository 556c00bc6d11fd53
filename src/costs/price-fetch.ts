/**
 * The price fetch (docs/costs.md "Twilio"): Twilio reports no price in its status callbacks, so a message of a
 * provider with `fetchPrice` is queued in `price_fetches` when its final status arrives (src/costs/charges.ts), and
 * asked for later, one ask at a time within costs.twilio_price_fetch.rate_per_second. The ask happens outside any
 * transaction; its price then replaces the estimate as a receipt's would, in the transaction that ends the row.
 * It is the `price-fetches` outbox kind (price-fetches-outbox.ts): the shared round (src/outbox/outbox.ts) claims,
 * counts and dead-letters by its max_attempts, and this file's kind does the rest its own way (see priceFetchOutbox).
 */
import type { Kysely } from 'kysely';
import type { PriceFetch, SmsProvider } from '../../providers/types.js';
import { inTransaction } from '../ledger/engine/db.js';
import { claimDuePriceFetches, deferPriceFetch, finishPriceFetch, giveUpPriceFetch, type ClaimedPriceFetch } from '../ledger/price-fetches.js';
import type { Database } from '../ledger/schema.js';
import type { OutboxAttempt, OutboxKind, OutboxSettings } from '../outbox/outbox.js';
import type { OutboxOutcome } from '../outbox/outcome.js';
import { recordReceiptCosts } from './charges.js';
import type { CostBook } from './cost-book.js';

const ASK_TIMEOUT_MS = 10_000;
/** The longest wait between two asks of one message. */
const MAX_WAIT_MS = 6 * 3_600_000;

export interface PriceFetchSettings {
  ratePerSecond: number;
  maxAttempts: number;
  /** The wait before the first ask, doubled after each ask that got no price. */
  afterMs: number;
  pollIntervalMs: number;
}

/** What the asks are made with: the providers and the cost book of `serve`, bound once it has built them. */
export interface PriceAsker {
  providers: readonly SmsProvider[];
  book: CostBook;
}

export type PriceFetchDecision = { done: true } | { dead: true; error: string } | { done: false; nextAt: number; error: string };

/**
 * What the ask's answer means for the row: done, asked again at `nextAt`, or dead (given up: the estimate stands until
 * an operator replays it). Pure, tested by table.
 */
export function decidePriceFetch(
  answer: PriceFetch,
  attempts: number,
  now: number,
  settings: Pick<PriceFetchSettings, 'maxAttempts' | 'afterMs'>,
): PriceFetchDecision {
  if (answer.answer === 'priced') return { done: true };
  const error = answer.answer === 'not_yet' ? 'no price yet' : answer.reason;
  if (attempts >= settings.maxAttempts) return { dead: true, error: `${error}; gave up after ${attempts} asks` };
  const wait = Math.min(MAX_WAIT_MS, Math.max(1_000, settings.afterMs) * 2 ** Math.min(attempts, 20));
  return { done: false, nextAt: now + wait, error };
}

const pauseFor = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    timer.unref();
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** Asks one claimed row's provider and writes what it answered, with the price, in one transaction. */
async function deliverOne(
  db: Kysely<Database>,
  asker: PriceAsker,
  row: ClaimedPriceFetch,
  settings: PriceFetchSettings,
  now: () => number,
  signal: AbortSignal,
): Promise<{ answer: PriceFetch; decision: PriceFetchDecision; asked: boolean } | undefined> {
  const attempts = row.attempts + 1;
  const provider = asker.providers.find((p) => p.name === row.provider);
  // A provider no longer configured (or one without prices) is asked no more: its row is dead with the reason.
  const answer: PriceFetch = provider?.fetchPrice
    ? await provider.fetchPrice(row.provider_message_id, AbortSignal.any([signal, AbortSignal.timeout(ASK_TIMEOUT_MS)]))
    : { answer: 'failed', reason: `provider ${row.provider} is not configured or has no prices to ask` };
  // An ask the stopping gateway cut off is not the provider's answer: the row is left to its lease, its asks uncounted.
  if (signal.aborted && answer.answer !== 'priced') return undefined;
  const decision = decidePriceFetch(answer, attempts, now(), provider?.fetchPrice ? settings : { ...settings, maxAttempts: attempts });
  await inTransaction(db, async (trx) => {
    if (answer.answer === 'priced') await recordReceiptCosts(trx, asker.book, [{ smsId: row.sms_id, deliveredNow: false, price: answer.price }]);
    if ('dead' in decision) await giveUpPriceFetch(trx, row.sms_id, attempts, decision.error);
    else if (decision.done) await finishPriceFetch(trx, row.sms_id, attempts, null);
    else await deferPriceFetch(trx, row.sms_id, attempts, decision.nextAt, decision.error);
  });
  return { answer, decision, asked: provider?.fetchPrice !== undefined };
}

/** A claimed fetch as the shared round counts it: `id` is its place in the claim (the table's key is sms_id). */
export type PriceFetchRow = ClaimedPriceFetch & { id: number };

/** How many asks one round makes: the rate over one poll interval, at least one. */
const priceFetchBatch = (s: Pick<PriceFetchSettings, 'ratePerSecond' | 'pollIntervalMs'>) =>
  Math.max(1, Math.floor((s.ratePerSecond * s.pollIntervalMs) / 1_000));

/**
 * The price fetches as a kind of the shared round. The round's claim, drain, loop and counts fit; three things are
 * the kind's own, so its marks are not the round's: the table has no claim token (a lease only, claimed_until), so
 * each row is written by the ask's own transaction, where a price must be recorded together with the row's end; the
 * next ask follows the fetch's back-off (doubling from costs.twilio_price_fetch.after: Twilio prices within minutes,
 * not the receivers' seconds), decided by decidePriceFetch; and asks are paced across rounds at rate_per_second.
 * So every row comes back to the round already written (`marked`, or a failure whose markFailed writes nothing) and the
 * round's max_attempts is the fetch's, so its dead count is the rows given up.
 */
export function priceFetchOutbox(
  settings: PriceFetchSettings,
  asker: () => Promise<PriceAsker | undefined>,
  deps: {
    db: Kysely<Database>;
    now: () => number;
    signal: AbortSignal;
    pause?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
    onPriced?: ((count: number) => void) | undefined;
    onDead?: ((count: number) => void) | undefined;
  },
): OutboxKind<PriceFetchRow> {
  const gapMs = 1_000 / settings.ratePerSecond;
  const limit = priceFetchBatch(settings);
  // The lease outlives the round: every ask paced, each up to its timeout.
  const lease = limit * (gapMs + ASK_TIMEOUT_MS) + 1_000;
  const outboxSettings: OutboxSettings = {
    batch_size: limit,
    poll_interval: settings.pollIntervalMs,
    retry_initial_ms: settings.afterMs,
    retry_max_ms: MAX_WAIT_MS,
    max_attempts: settings.maxAttempts,
    lease,
  };
  const pause = deps.pause ?? pauseFor;
  let lastAskAt = Number.NEGATIVE_INFINITY;
  // Rows of the round under way the provider answered (priced or not yet): the provider is reachable.
  let answered = 0;
  return {
    name: 'price fetches outbox',
    settings: outboxSettings,
    claim: async (db, max, now, leaseMs) => (await claimDuePriceFetches(db, now, max, leaseMs)).map((row, id) => ({ ...row, id })),
    attemptsOf: (row) => row.attempts,
    async send(rows) {
      answered = 0;
      const bound = await asker();
      const attempts: OutboxAttempt<PriceFetchRow>[] = [];
      for (const row of rows) {
        // The rest are asked when their lease ends.
        if (deps.signal.aborted || !bound) break;
        await pause(lastAskAt + gapMs - deps.now(), deps.signal);
        if (deps.signal.aborted) break;
        lastAskAt = deps.now();
        const delivered = await deliverOne(deps.db, bound, row, settings, deps.now, deps.signal);
        if (!delivered) break;
        const { answer, decision, asked } = delivered;
        if (answer.answer !== 'failed') answered++;
        // A provider that cannot be asked is dead at once, before max_attempts: `refused` tells the round so.
        const outcome: OutboxOutcome = 'error' in decision ? { ok: false, status: null, error: decision.error, refused: !asked } : { ok: true, status: null };
        attempts.push({ rows: [row], outcome, marked: outcome.ok });
      }
      return attempts;
    },
    markSent: async () => {},
    markFailed: async () => {},
    again: () => answered > 0,
    report: (round) => deps.onPriced?.(round.sent.length),
    onDead: (count) => deps.onDead?.(count),
  };
}
