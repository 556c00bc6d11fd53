/**
 * Asking providers about our sends (SmsProvider.lookup, providers/types.ts), run by the sweep in `serve`, and for a
 * lost send also by a CRM retry of it (src/sms/dispatch.ts), which must not wait up to a delivery.sweep_interval
 * nor send again unasked:
 * - a send whose process was lost mid-call (`uncertain`, lookup `pending`, set when its lease expired) is looked up
 *   before anything sends it again: found → `submitted` with the provider's id (and its status taken like a
 *   receipt); absent → `retryable`, so the CRM's retry sends it at once; the provider cannot tell (no lookup in its
 *   API, or none by delivery.status_query_after) → it stays `uncertain`, counted and listed on the console;
 * - a submitted message with no final receipt by delivery.status_query_after is asked for its status once; a final
 *   status found is applied like a receipt (a status callback may have hit a process that was down).
 * No transaction stays open across a provider call (docs/design.md §8): read, ask, then write each answer.
 */
import type { Kysely } from 'kysely';
import type { LookupResult, SmsProvider } from '../../providers/types.js';
import type { Config } from '../config/schema.js';
import { inTransaction } from '../ledger/engine/db.js';
import { withStatsTally } from '../ledger/delivery-stats.js';
import type { Database } from '../ledger/schema.js';
import {
  findOtherProviderIds,
  findPendingLookups,
  findSilentMessages,
  markAbsentByLookup,
  markFoundByLookup,
  markStatusQueried,
  markUnknownByLookup,
  type LookupCandidate,
} from '../ledger/send-lookups.js';
import { applyReceipts, type ReceiptObservers } from './apply-receipts.js';

/** What the sweep does with one answer about a lost send. `ask-later`: the provider could not answer now. */
export type LostSendVerdict = 'found' | 'absent' | 'unknown' | 'ask-later';

/**
 * `cannotTell`: the provider has no lookup. An `unknown` answer (its API failed, or matched several messages) is
 * asked again at the next sweep until the send is `giveUpAfterMs` old, then it stays unknown for good.
 */
export function decideLostSend(answer: LookupResult | 'cannot-tell', ageMs: number, giveUpAfterMs: number): LostSendVerdict {
  if (answer === 'cannot-tell') return 'unknown';
  if (answer.answer === 'found' || answer.answer === 'absent') return answer.answer;
  return ageMs >= giveUpAfterMs ? 'unknown' : 'ask-later';
}

/** The answer's label in metrics and logs: `cannot_tell` for a provider without a lookup. */
export type LookupLabel = 'found' | 'absent' | 'unknown' | 'cannot_tell';

export type LookupObservers = ReceiptObservers;

export interface LookupOptions {
  providers: ReadonlyMap<string, SmsProvider>;
  /** sms.dispatch_lease: how long after its dispatch a lost send could still have reached the provider. */
  dispatchLeaseMs: number;
  /** delivery.status_query_after. */
  statusQueryAfterMs: number;
  /** Longest one lookup may take. */
  timeoutMs: number;
  /** Messages asked about per sweep (the rest wait for the next one). */
  batch: number;
}

/** The lookups of `serve`, from configuration: the sweep's (timers.ts) and a retry's (src/sms/dispatch.ts) alike. */
export function lookupOptionsOf(config: Readonly<Config>, providers: readonly SmsProvider[]): LookupOptions {
  return {
    providers: new Map(providers.map((p) => [p.name, p])),
    dispatchLeaseMs: config.sms.dispatch_lease,
    statusQueryAfterMs: config.delivery.status_query_after,
    timeoutMs: config.sms.send_timeout,
    batch: 200,
  };
}

const CONCURRENCY = 8;

async function eachLimited<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}

async function ask(db: Kysely<Database>, provider: SmsProvider, m: LookupCandidate, options: LookupOptions, byId: boolean): Promise<LookupResult> {
  const sentAfter = Number(m.dispatched_at);
  const sentBefore = sentAfter + options.dispatchLeaseMs;
  const otherProviderIds = byId ? [] : await findOtherProviderIds(db, m.recipient, m.sms_id, sentAfter - options.dispatchLeaseMs, sentBefore);
  return provider.lookup!(
    {
      smsId: m.sms_id,
      to: m.recipient,
      sentAfter,
      sentBefore,
      ...(byId && m.provider_message_id ? { providerMessageId: m.provider_message_id } : {}),
      ...(m.content !== null ? { text: m.content } : {}),
      otherProviderIds,
    },
    AbortSignal.timeout(options.timeoutMs),
  );
}

/** A found message's status, applied like a receipt (intermediate ones are stored, never reported). */
function receiptOf(m: LookupCandidate, answer: Extract<LookupResult, { answer: 'found' }>) {
  return {
    provider: m.provider,
    event: {
      smsId: m.sms_id,
      providerMessageId: answer.providerMessageIds[0],
      providerStatus: answer.providerStatus,
      status: answer.status,
      ...(answer.errorCode ? { errorCode: answer.errorCode } : {}),
    },
  };
}

export interface LookupSummary {
  found: number;
  absent: number;
  unknown: number;
  /** Silent messages asked for their status, and how many of those answers were final. */
  statusQueried: number;
  statusFinal: number;
}

/**
 * Asks about the sends whose lease expired (lookup `pending`): the sweep's oldest, or a retry's `smsIds`
 * (src/sms/dispatch.ts); returns what was concluded.
 */
export async function resolveLostSends(
  db: Kysely<Database>,
  now: number,
  options: LookupOptions,
  observers: LookupObservers = {},
  smsIds?: readonly string[],
): Promise<Pick<LookupSummary, 'found' | 'absent' | 'unknown'>> {
  const summary = { found: 0, absent: 0, unknown: 0 };
  const pending = await findPendingLookups(db, options.batch, smsIds);
  await eachLimited(pending, async (m) => {
    const provider = options.providers.get(m.provider);
    const answer: LookupResult | 'cannot-tell' = provider?.lookup ? await ask(db, provider, m, options, false) : 'cannot-tell';
    const verdict = decideLostSend(answer, now - Number(m.dispatched_at), options.statusQueryAfterMs);
    const label: LookupLabel = answer === 'cannot-tell' ? 'cannot_tell' : answer.answer;
    observers.metrics?.lookupAnswered(m.provider, 'lost_send', label);
    const log = {
      sms_id: m.sms_id,
      activity_id: m.activity_key,
      provider: m.provider,
      answer: label,
      ...(answer !== 'cannot-tell' && answer.answer === 'unknown' ? { reason: answer.reason } : {}),
    };
    if (verdict === 'ask-later') {
      observers.logger?.info(log, 'the provider could not say whether it has a lost send; asking again at the next sweep');
      return;
    }
    const changed = await inTransaction(db, (trx) =>
      withStatsTally(trx, async (tally) => {
        if (verdict === 'found' && answer !== 'cannot-tell' && answer.answer === 'found') {
          if (!(await markFoundByLookup(trx, m.sms_id, answer.providerMessageIds[0]!, answer.providerStatus.slice(0, 64), now))) return false;
          tally.push({ at: now, provider: m.provider, outcome: 'submitted' });
          await applyReceipts(trx, tally, [receiptOf(m, answer)], now, observers);
          return true;
        }
        if (verdict === 'absent') return markAbsentByLookup(trx, m.sms_id, now);
        return markUnknownByLookup(trx, m.sms_id, now);
      }),
    );
    if (!changed) return;
    summary[verdict]++;
    if (verdict === 'unknown')
      observers.logger?.warn(
        log,
        'the provider cannot tell whether it has a lost send: it stays uncertain (a CRM retry after sms.ambiguous_retry_after sends it again)',
      );
    else
      observers.logger?.info(
        log,
        verdict === 'found' ? 'a lost send was found at its provider: submitted' : 'a lost send is not at its provider: a retry sends it',
      );
  });
  return summary;
}

/** Asks for the status of submitted messages silent since delivery.status_query_after; final ones are applied. */
export async function querySilentMessages(
  db: Kysely<Database>,
  now: number,
  options: LookupOptions,
  observers: LookupObservers = {},
): Promise<Pick<LookupSummary, 'statusQueried' | 'statusFinal'>> {
  // Those submitted within one more status_query_after before the cutoff: a sweep that stops for longer than that
  // leaves the older ones to delivery.unknown_after without asking.
  const silent = await findSilentMessages(db, now - 2 * options.statusQueryAfterMs, now - options.statusQueryAfterMs, options.batch);
  const askable = silent.filter((m) => options.providers.get(m.provider)?.lookup);
  // Those whose provider cannot be asked are marked too, so they are not read again at every sweep.
  await markStatusQueried(
    db,
    silent.map((m) => m.sms_id),
    now,
  );
  let statusFinal = 0;
  await eachLimited(askable, async (m) => {
    const answer = await ask(db, options.providers.get(m.provider)!, m, options, true);
    observers.metrics?.lookupAnswered(m.provider, 'status', answer.answer);
    if (answer.answer !== 'found') return;
    if (answer.status !== 'intermediate') statusFinal++;
    await inTransaction(db, (trx) => withStatsTally(trx, (tally) => applyReceipts(trx, tally, [receiptOf(m, answer)], now, observers)));
  });
  if (askable.length > 0)
    observers.logger?.info(
      { asked: askable.length, final: statusFinal, status_query_after_ms: options.statusQueryAfterMs },
      'asked providers for the status of silent messages',
    );
  return { statusQueried: askable.length, statusFinal };
}
