/**
 * The price fetch (docs/costs.md "Twilio"): Twilio reports no price in its status callbacks, so a message of a
 * provider with `fetchPrice` is queued in `price_fetches` when its final status arrives (src/costs/charges.ts), and
 * asked for later, a few at a time within costs.twilio_price_fetch.rate_per_second. The ask happens outside any
 * transaction; its price then replaces the estimate as a receipt's would. Self-contained: a claim of due rows, a
 * deliver step per row and a timer, so it can become one kind of the outboxes (src/outbox/) as it stands.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { PriceFetch, SmsProvider } from '../../providers/types.js';
import type { Config } from '../config/schema.js';
import type { Shutdown } from '../kit/shutdown.js';
import { inTransaction } from '../ledger/engine/db.js';
import { claimDuePriceFetches, deferPriceFetch, finishPriceFetch, type ClaimedPriceFetch } from '../ledger/price-fetches.js';
import type { Database } from '../ledger/schema.js';
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

export interface PriceFetchDeps {
  db: Kysely<Database>;
  book: CostBook;
  providers: readonly SmsProvider[];
  now: () => number;
  logger: Logger;
  settings: PriceFetchSettings;
  /** Waits between asks (the rate); tests may pass one that does not wait. */
  pause?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** What the ask's answer means for the row: done, or asked again at `nextAt`. Pure, tested by table. */
export function decidePriceFetch(
  answer: PriceFetch,
  attempts: number,
  now: number,
  settings: Pick<PriceFetchSettings, 'maxAttempts' | 'afterMs'>,
): { done: true; error: string | null } | { done: false; nextAt: number; error: string } {
  if (answer.answer === 'priced') return { done: true, error: null };
  const error = answer.answer === 'not_yet' ? 'no price yet' : answer.reason;
  if (attempts >= settings.maxAttempts) return { done: true, error: `${error}; gave up after ${attempts} asks` };
  const wait = Math.min(MAX_WAIT_MS, Math.max(1_000, settings.afterMs) * 2 ** Math.min(attempts, 20));
  return { done: false, nextAt: now + wait, error };
}

const pauseFor = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    timer.unref();
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** Asks one claimed row's provider and writes what it answered. */
async function deliverOne(deps: PriceFetchDeps, row: ClaimedPriceFetch, provider: SmsProvider | undefined, signal: AbortSignal): Promise<PriceFetch> {
  const attempts = row.attempts + 1;
  // A provider no longer configured (or one without prices) is asked no more: its row ends with the reason.
  const answer: PriceFetch = provider?.fetchPrice
    ? await provider.fetchPrice(row.provider_message_id, AbortSignal.any([signal, AbortSignal.timeout(ASK_TIMEOUT_MS)]))
    : { answer: 'failed', reason: `provider ${row.provider} is not configured or has no prices to ask` };
  const decision = decidePriceFetch(answer, attempts, deps.now(), provider?.fetchPrice ? deps.settings : { ...deps.settings, maxAttempts: attempts });
  await inTransaction(deps.db, async (trx) => {
    if (answer.answer === 'priced') await recordReceiptCosts(trx, deps.book, [{ smsId: row.sms_id, deliveredNow: false, price: answer.price }]);
    if (decision.done) await finishPriceFetch(trx, row.sms_id, attempts, decision.error);
    else await deferPriceFetch(trx, row.sms_id, attempts, decision.nextAt, decision.error);
  });
  return answer;
}

/** One round: the due rows an instance may ask within one poll interval at its rate, asked one after another. */
export async function runPriceFetchRound(deps: PriceFetchDeps, signal: AbortSignal = new AbortController().signal) {
  const { settings } = deps;
  const limit = Math.max(1, Math.floor((settings.ratePerSecond * settings.pollIntervalMs) / 1_000));
  const gapMs = 1_000 / settings.ratePerSecond;
  // The lease outlives the round: every ask paced, each up to its timeout.
  const claimed = await claimDuePriceFetches(deps.db, deps.now(), limit, limit * (gapMs + ASK_TIMEOUT_MS) + 1_000);
  const byName = new Map(deps.providers.map((p) => [p.name, p]));
  const counts = { priced: 0, not_yet: 0, failed: 0 };
  const pause = deps.pause ?? pauseFor;
  for (const [i, row] of claimed.entries()) {
    if (signal.aborted) break; // the rest are asked when their lease ends
    if (i > 0) await pause(gapMs, signal);
    const answer = await deliverOne(deps, row, byName.get(row.provider), signal);
    counts[answer.answer]++;
    if (answer.answer === 'failed')
      deps.logger.info({ sms_id: row.sms_id, provider: row.provider, reason: answer.reason }, 'price fetch failed; asked again later');
  }
  return counts;
}

/**
 * `serve`'s price fetch, when a provider has prices to ask (costs.twilio_price_fetch): a round every poll_interval,
 * never two at once. Its stop step ends the round under way before the providers close.
 */
export function startPriceFetch(
  config: Readonly<Config>,
  deps: Omit<PriceFetchDeps, 'settings'>,
  shutdown: Shutdown,
): { run: () => Promise<Awaited<ReturnType<typeof runPriceFetchRound>>> } | undefined {
  if (!deps.book.priceFetch) return undefined;
  const c = config.costs.twilio_price_fetch;
  const settings: PriceFetchSettings = { ratePerSecond: c.rate_per_second, maxAttempts: c.max_attempts, afterMs: c.after, pollIntervalMs: c.poll_interval };
  const stop = new AbortController();
  let running: Promise<unknown> | undefined;
  const run = () => runPriceFetchRound({ ...deps, settings }, stop.signal);
  const timer = setInterval(() => {
    if (running) return;
    running = run()
      .catch((error: unknown) => deps.logger.error({ err: error }, 'price fetch round failed'))
      .finally(() => {
        running = undefined;
      });
  }, c.poll_interval);
  timer.unref();
  shutdown.add('sends', 'stopping the price fetches', async () => {
    clearInterval(timer);
    stop.abort();
    await running;
  });
  return { run };
}
