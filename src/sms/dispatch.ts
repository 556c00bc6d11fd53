/**
 * The send path after validation (DESIGN §1 "send"): claim each message in the ledger (committed before any
 * provider call), send the claimed ones with bounded concurrency until the deadline, record the answers.
 * Single and batch requests share it; their ledger writes are grouped across concurrent requests.
 */
import { setMaxListeners } from 'node:events';
import type { Kysely, Transaction } from 'kysely';
import type { Logger } from 'pino';
import { NOT_SENT_SHUTTING_DOWN, type SendResult, type SmsProvider } from '../../providers/types.js';
import { incrementDeliveryStats } from '../ledger/delivery-stats.js';
import {
  findMessagesByActivityKeys,
  insertNewMessages,
  insertRefusedMessages,
  markMessageRefused,
  reclaimMessageForRetry,
  recordSendOutcomes,
  type NewMessage,
  type SendOutcomeRecord,
} from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import type { Transact } from '../ledger/transaction-queue.js';
import { newSmsId } from '../ledger/ids.js';
import { createWriteBatcher } from '../ledger/write-batcher.js';
import { isRefusedValue } from '../ledger/write-errors.js';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import type { SendMetrics } from '../observability/metrics.js';
import type { Encoding } from './encoding.js';
import { decideRepeat, type RepeatTimings } from './idempotency.js';
import { maskPhoneNumber } from './recipient.js';
import { refusalsInClaim, standingsBeforeClaim, suppressionCode, suppressionError, type RecipientCheck, type SuppressionReason, type ToClaim } from './suppression.js';

export interface PreparedMessage {
  activityKey: string;
  activityJson: string;
  /** activity.user_id as text, or null: the player sms.suppression looks up. */
  userId: string | null;
  provider: SmsProvider;
  recipient: string;
  sender: string | null;
  text: string;
  encoding: Encoding;
  segments: number;
}

/** `failed` is permanent (single 400, batch failed[]); `fatal` is transient (single 5xx, batch fatal[]). */
export type DispatchResult =
  | { outcome: 'sent'; smsId: string }
  | { outcome: 'failed'; smsId?: string; error: string }
  | { outcome: 'fatal'; smsId?: string; error: string };

export interface DispatcherDeps {
  db: Kysely<Database>;
  logger: Logger;
  now: () => number;
  storeContent: boolean;
  /** sms.dispatch_lease and sms.ambiguous_retry_after, for repeats of an activity.id (idempotency.ts). */
  repeatTimings: RepeatTimings;
  sendTimeoutMs: number;
  callbackUrl: (providerName: string, smsId: string) => string;
  /** Runs ledger writes in a transaction (shared with other writers by the gateway's transaction queue). */
  transact?: Transact;
  /** Runs inside the transaction that recorded provider answers (to match receipts that arrived first). */
  onRecorded?: (trx: Transaction<Database>, records: SendOutcomeRecord[]) => Promise<void>;
  metrics?: SendMetrics;
  /** sms.suppression: where a player's standing is read; absent when suppression is off. */
  recipients?: RecipientCheck;
  /**
   * The provider said the recipient opted out (SendResult.recipientOptedOut) and the message names a player:
   * awaited before the answer, so the opt-out is committed when the CRM hears the 400.
   */
  onRecipientOptedOut?: (optOut: { userId: string; recipient: string; provider: string; smsId: string }) => Promise<void>;
}

export interface DispatchOptions {
  /** Epoch ms after which messages not yet handed to a provider are answered `fatal`. */
  deadline: number;
  /** Epoch ms until which a message may wait for provider capacity (throttle); defaults to `deadline`. */
  waitDeadline?: number;
  concurrency: number;
  /** The request's id, carried by the log lines about its messages. */
  requestId?: string;
}

type Claim = { send: true; smsId: string } | { send: false; result: DispatchResult; suppressed?: SuppressionReason };
/** A message to claim and, when its player was looked up before the claim (http backend), that player's standing. */
type ClaimItem = ToClaim<PreparedMessage> & { requestId: string | null };

/**
 * An AbortSignal.timeout per message costs more than a sandbox send; messages whose deadlines fall in the same
 * 50 ms window share one signal (a provider call may run up to 50 ms past its deadline).
 */
function createDeadlineSignals(now: () => number, abandon: AbortSignal) {
  const signals = new Map<number, AbortSignal>();
  return (deadline: number): AbortSignal => {
    const window = Math.ceil(deadline / 50) * 50;
    let signal = signals.get(window);
    if (!signal) {
      if (signals.size > 1_000) for (const [w, s] of signals) if (s.aborted) signals.delete(w);
      // Also aborted when a shutdown abandons the calls in flight (abandonInFlight).
      signal = AbortSignal.any([AbortSignal.timeout(Math.max(0, window - now())), abandon]);
      // Every in-flight provider call listens on it (undici adds one abort listener per request); without this,
      // more than 10 sharers print a MaxListenersExceededWarning per window.
      setMaxListeners(0, signal);
      signals.set(window, signal);
    }
    return signal;
  };
}

function cut(text: string | undefined, max: number): string | null {
  if (text === undefined) return null;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Where a failed send leaves its message: for good, free to send again, or waiting for a receipt first. */
function failedState(answer: Extract<SendResult, { ok: false }>): SendOutcomeRecord['state'] {
  if (answer.kind === 'permanent') return 'rejected';
  return answer.ambiguous ? 'uncertain' : 'retryable';
}

export function createDispatcher(deps: DispatcherDeps) {
  const { db, logger, now } = deps;
  /** Requests for an activity.id already being handled here wait for that answer instead of sending again. */
  const inflight = new Map<string, Promise<DispatchResult>>();
  /** Aborted by stopSending(): nothing more is claimed or handed to a provider, and capacity waits end. */
  const stopping = new AbortController();
  /** Aborted by abandonInFlight(): provider calls under way end as if their timeout fired. */
  const abandoning = new AbortController();
  const signalFor = createDeadlineSignals(now, abandoning.signal);

  const transact: Transact = deps.transact ?? ((work) => db.transaction().execute(work));
  const reclaimCutoffs = (at: number) => ({
    leaseCutoff: at - deps.repeatTimings.dispatchLeaseMs,
    uncertainCutoff: at - deps.repeatTimings.ambiguousRetryAfterMs,
  });
  const claims = createWriteBatcher<ClaimItem, Claim>((items) =>
    transact(async (trx) => {
      const at = now();
      const messages = items.map((i) => i.message);
      const refusals = await refusalsInClaim(deps.recipients, items, trx);
      const rows: NewMessage[] = items.map(({ message: m, requestId }) => ({
        sms_id: newSmsId(),
        activity_key: m.activityKey,
        activity_json: m.activityJson,
        user_id: m.userId,
        request_id: requestId,
        provider: m.provider.name,
        recipient: m.recipient,
        sender: m.sender,
        encoding: m.encoding,
        segments: m.segments,
        content: deps.storeContent ? m.text : null,
        created_at: at,
        updated_at: at,
        dispatched_at: at,
      }));
      const errorOf = (i: number) => suppressionError(messages[i]!.userId!, refusals[i]!);
      const inserted = await insertNewMessages(trx, rows.filter((_, i) => !refusals[i]));
      const refused = await insertRefusedMessages(
        trx,
        rows.flatMap((r, i) => (refusals[i] ? [{ ...r, error: errorOf(i), error_code: suppressionCode(refusals[i]!) }] : [])),
      );
      // Counted per reason beside the send outcomes, for the console (never sent, so not a provider's `rejected`).
      await incrementDeliveryStats(trx, rows.flatMap((r, i) => (refusals[i] && refused.has(r.activity_key) ? [{ at, provider: r.provider, outcome: suppressionCode(refusals[i]!) }] : [])));
      const repeats = rows.filter((r) => !inserted.has(r.activity_key) && !refused.has(r.activity_key));
      const existing = new Map((await findMessagesByActivityKeys(trx, repeats.map((r) => r.activity_key))).map((r) => [r.activity_key, r]));
      const result: Claim[] = [];
      for (const [i, row] of rows.entries()) {
        if (inserted.has(row.activity_key)) {
          result.push({ send: true, smsId: row.sms_id });
          continue;
        }
        if (refused.has(row.activity_key)) {
          result.push({ send: false, result: { outcome: 'failed', smsId: row.sms_id, error: errorOf(i) }, suppressed: refusals[i]! });
          continue;
        }
        const previous = existing.get(row.activity_key);
        if (!previous) {
          // Neither inserted nor found: the database stored the key as other text than it was given.
          result.push({ send: false, result: { outcome: 'failed', error: `activity.id ${JSON.stringify(row.activity_key.slice(0, 60))}: cannot be stored as given` } });
          continue;
        }
        const decision = decideRepeat(previous, at, deps.repeatTimings);
        if (decision.action === 'answer-sent') result.push({ send: false, result: { outcome: 'sent', smsId: decision.smsId } });
        else if (decision.action === 'answer-failed') result.push({ send: false, result: { outcome: 'failed', smsId: decision.smsId, error: decision.error } });
        else if (decision.action === 'resend' && (await reclaimMessageForRetry(trx, decision.smsId, row, at, reclaimCutoffs(at)))) {
          if (refusals[i]) {
            // A retry of a transient failure, for a player who must not get it any more: refused for good.
            const error = errorOf(i);
            await markMessageRefused(trx, decision.smsId, { error, error_code: suppressionCode(refusals[i]!) }, at);
            await incrementDeliveryStats(trx, [{ at, provider: row.provider, outcome: suppressionCode(refusals[i]!) }]);
            result.push({ send: false, result: { outcome: 'failed', smsId: decision.smsId, error }, suppressed: refusals[i]! });
          } else result.push({ send: true, smsId: decision.smsId });
        } else {
          const error =
            decision.action === 'busy' && decision.reason === 'awaiting-receipt'
              ? `activity.id ${row.activity_key}: its last send may have reached the provider; waiting for a receipt before sending it again, retry later`
              : `activity.id ${row.activity_key} is being sent by another request; retry later`;
          result.push({ send: false, result: { outcome: 'fatal', smsId: decision.smsId, error } });
        }
      }
      return result;
    }),
  );

  const records = createWriteBatcher<SendOutcomeRecord, void>(async (items) => {
    await transact(async (trx) => {
      await recordSendOutcomes(trx, items, now());
      await deps.onRecorded?.(trx, items);
    });
    return items.map(() => undefined);
  });

  async function callProvider(message: PreparedMessage, smsId: string, deadline: number, waitDeadline: number): Promise<SendResult> {
    if (deadline <= now()) return { ok: false, kind: 'transient', error: 'not sent before the batch deadline; retry' };
    if (stopping.signal.aborted) return NOT_SENT_SHUTTING_DOWN;
    try {
      return await message.provider.send(
        {
          smsId,
          to: message.recipient,
          from: message.sender ?? undefined,
          text: message.text,
          encoding: message.encoding,
          segments: message.segments,
          callbackUrl: deps.callbackUrl(message.provider.name, smsId),
          deadline: waitDeadline,
          waitSignal: stopping.signal,
        },
        signalFor(Math.min(now() + deps.sendTimeoutMs, deadline)),
      );
    } catch (error) {
      // A plugin should answer with values, but a throw must not lose the message: treat it as transient.
      return { ok: false, kind: 'transient', error: `provider ${message.provider.name} failed: ${(error as Error).message}` };
    }
  }

  async function sendClaimed(message: PreparedMessage, smsId: string, options: DispatchOptions): Promise<DispatchResult> {
    const started = performance.now();
    const answer = await callProvider(message, smsId, options.deadline, options.waitDeadline ?? options.deadline);
    const seconds = (performance.now() - started) / 1000;
    // A route answers with the member that carried the message: its receipts come to /dlr/{member}.
    const provider = answer.carrier ?? message.provider.name;
    // A provider's answer is outside text: stored (and logged) cut to a length that still shows what it said.
    const record: SendOutcomeRecord = answer.ok
      ? { smsId, provider, rerouted: provider !== message.provider.name, state: 'submitted', providerMessageIds: answer.providerMessageIds, providerStatus: cut(answer.providerStatus, 64), error: null, errorCode: null }
      : { smsId, provider, rerouted: provider !== message.provider.name, state: failedState(answer), providerMessageIds: [], providerStatus: null, error: cut(answer.error, 500), errorCode: cut(answer.code, 64) };
    try {
      await records.run([record]);
    } catch (error) {
      // The row was committed before the call, so receipts still match; the answer stays what the provider said.
      logger.error({ err: error, sms_id: smsId, activity_id: message.activityKey, request_id: options.requestId }, 'could not record the provider answer');
    }
    if (!answer.ok && answer.recipientOptedOut && message.userId !== null && deps.onRecipientOptedOut) {
      try {
        await deps.onRecipientOptedOut({ userId: message.userId, recipient: message.recipient, provider: message.provider.name, smsId });
      } catch (error) {
        logger.error({ err: error, sms_id: smsId, user_id: message.userId }, 'could not record the opt-out the provider reported');
      }
    }
    const outcome = answer.ok ? 'sent' : answer.kind === 'permanent' ? 'failed' : 'fatal';
    deps.metrics?.sendCompleted(provider, outcome, message.segments, seconds);
    // Refusals are what operators look for; a line per accepted message only at debug (it is the hot path).
    logger[answer.ok ? 'debug' : 'info'](
      {
        sms_id: smsId,
        activity_id: message.activityKey,
        provider,
        ...(provider !== message.provider.name ? { route: message.provider.name } : {}),
        to: maskPhoneNumber(message.recipient),
        segments: message.segments,
        state: record.state,
        error: record.error === null ? undefined : maskPhoneNumbersIn(record.error),
        request_id: options.requestId,
      },
      'sms dispatched',
    );
    if (answer.ok) return { outcome: 'sent', smsId };
    return { outcome: answer.kind === 'permanent' ? 'failed' : 'fatal', smsId, error: record.error ?? answer.error };
  }

  function reportSuppressed(message: PreparedMessage, claim: Extract<Claim, { send: false }>, options: DispatchOptions): void {
    deps.metrics?.sendSuppressed(claim.suppressed!);
    logger.info(
      { sms_id: claim.result.smsId, activity_id: message.activityKey, user_id: message.userId, to: maskPhoneNumber(message.recipient), reason: claim.suppressed, request_id: options.requestId },
      'sms suppressed',
    );
  }

  async function process(fresh: Array<{ message: PreparedMessage; resolve: (r: DispatchResult) => void }>, options: DispatchOptions): Promise<void> {
    // Each message's claim stands alone: a message whose row cannot be written fails only itself.
    const toClaim = await standingsBeforeClaim(deps.recipients, fresh.map((f) => f.message));
    const settled = await claims.settle(toClaim.map((item) => ({ ...item, requestId: options.requestId ?? null })));
    const unavailable: Array<{ activityKey: string; error: unknown }> = [];
    const claimed: Claim[] = settled.map((s, i) => {
      if (s.status === 'fulfilled') return s.value;
      const message = fresh[i]!.message;
      if (isRefusedValue(s.reason)) {
        logger.info({ err: s.reason, activity_id: message.activityKey.slice(0, 100), request_id: options.requestId }, 'message refused by the ledger: nothing sent');
        return { send: false, result: { outcome: 'failed', error: `activity.id ${JSON.stringify(message.activityKey.slice(0, 60))}: the message cannot be stored as given (${String((s.reason as Error).message).slice(0, 120)})` } };
      }
      unavailable.push({ activityKey: message.activityKey, error: s.reason });
      return { send: false, result: { outcome: 'fatal', error: 'ledger unavailable; nothing was sent, retry later' } };
    });
    if (unavailable.length > 0) {
      // One line per request, not per message: a ledger that is down fails every message alike.
      const activityIds = unavailable.slice(0, 20).map((u) => u.activityKey.slice(0, 100));
      logger.error({ err: unavailable[0]!.error, count: unavailable.length, activity_ids: activityIds, request_id: options.requestId }, 'ledger unavailable: nothing sent');
    }
    const toSend: number[] = [];
    claimed.forEach((claim, i) => {
      if (claim.send) return void toSend.push(i);
      if (claim.suppressed) reportSuppressed(fresh[i]!.message, claim, options);
      fresh[i]!.resolve(claim.result);
    });
    let next = 0;
    const worker = async () => {
      while (next < toSend.length) {
        const i = toSend[next++]!;
        const claim = claimed[i] as { smsId: string };
        fresh[i]!.resolve(await sendClaimed(fresh[i]!.message, claim.smsId, options));
      }
    };
    await Promise.all(Array.from({ length: Math.min(options.concurrency, toSend.length) }, worker));
  }

  return {
    async dispatch(messages: PreparedMessage[], options: DispatchOptions): Promise<DispatchResult[]> {
      // Nothing is claimed once stopping: the CRM's retry finds these ids untouched.
      if (stopping.signal.aborted) return messages.map(() => ({ outcome: 'fatal', error: NOT_SENT_SHUTTING_DOWN.error }));
      const fresh: Array<{ message: PreparedMessage; resolve: (r: DispatchResult) => void }> = [];
      const answers = messages.map((message) => {
        const running = inflight.get(message.activityKey);
        if (running) return running;
        const answer = new Promise<DispatchResult>((resolve) => fresh.push({ message, resolve }));
        inflight.set(message.activityKey, answer);
        void answer.then(() => inflight.delete(message.activityKey));
        return answer;
      });
      await process(fresh, options);
      return Promise.all(answers);
    },

    /**
     * For a graceful stop: requests in flight finish at once, their messages not yet handed to a provider
     * answered transient (batch `fatal`, single 503) and left free to send again, so the CRM's retry can go to
     * another instance instead of its request being cut off when the process exits. Sends under way complete.
     */
    stopSending(): void {
      stopping.abort();
    },

    /**
     * For a shutdown that cannot wait longer: provider calls still under way are abandoned. The provider may have
     * taken them, so their messages are left `uncertain` (a receipt confirms them; a retry waits
     * sms.ambiguous_retry_after) and answered transient (batch `fatal`, single 503), so the CRM's request gets
     * its answer before the connections close.
     */
    abandonInFlight(): void {
      stopping.abort();
      abandoning.abort();
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
