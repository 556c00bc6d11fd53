/**
 * The send path's first step: claim each message in the ledger, committed before any provider call, so a message
 * the provider may get is never lost and never sent twice (docs/design.md §4). A claim is one of:
 * - a new row (`dispatching`): send it;
 * - a repeat of an activity.id the ledger knows: answered from its row, or taken over for another attempt
 *   (src/sms/idempotency.ts decides which);
 * - a recipient read as no number of its player's country, or as two numbers with nothing to choose between them
 *   (src/sms/recipient-reading.ts): stored `rejected` with its code, nothing sent;
 * - a player who must not get it (src/consents/suppression.ts): stored `rejected`, nothing sent;
 * - a repeat of a send whose process died mid-call: its lease expired here, as the sweep expires it, and the claim
 *   names it `lostSend` for the dispatcher to resolve (its provider asked) before it is claimed again.
 * The claims of concurrent requests share one grouped write (src/ledger/engine/transaction-queue.ts); a message whose
 * row cannot be written fails only itself.
 */
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { StatsOutcome, StatsTally } from '../ledger/delivery-stats.js';
import { newSmsId } from '../ledger/ids.js';
import {
  expireDispatchLeases,
  findMessagesByActivityKeys,
  insertNewMessages,
  insertRefusedMessages,
  markMessageRefused,
  reclaimMessageForRetry,
  type NewMessage,
} from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import type { TransactionQueue } from '../ledger/engine/transaction-queue.js';
import { isRefusedValue } from '../ledger/engine/write-errors.js';
import type { SendMetrics } from '../observability/metrics.js';
import { decideRepeat, type RepeatTimings } from './idempotency.js';
import type { DispatchResult } from './outcome.js';
import type { PreparedMessage } from './prepare.js';
import { maskPhoneNumber } from '../observability/logger.js';
import { RECIPIENT_REFUSAL_CODES, type RecipientRefusalCode } from './recipient-reading.js';
import {
  refusalsInClaim,
  standingsBeforeClaim,
  suppressionCode,
  suppressionError,
  type RecipientCheck,
  type SuppressionReason,
  type ToClaim,
} from '../consents/suppression.js';

/**
 * `send`: the message is this request's to hand to its provider; otherwise it is answered now, with `result`. With
 * `lostSend` (the message's sms_id), its sender died mid-call and its provider is still to be asked: `result` is the
 * answer until the dispatcher has resolved it (src/sms/dispatch.ts).
 */
export type Claim = { send: true; smsId: string } | { send: false; result: DispatchResult; lostSend?: string };

export interface ClaimStepDeps {
  queue: TransactionQueue;
  logger: Logger;
  now: () => number;
  storeContent: boolean;
  /** sms.dispatch_lease and sms.ambiguous_retry_after, for repeats of an activity.id (idempotency.ts). */
  repeatTimings: RepeatTimings;
  /** sms.suppression: where a player's standing is read; absent when suppression is off. */
  recipients?: RecipientCheck;
  metrics?: Pick<SendMetrics, 'sendSuppressed' | 'recipientRead'>;
}

/** A message to claim and, when its player was looked up before the claim (http backend), that player's standing. */
type ClaimItem = ToClaim<PreparedMessage> & { requestId: string | null; traceparent: string | null };
type ClaimAnswer =
  | Claim
  | { send: false; result: DispatchResult; suppressed: SuppressionReason }
  | { send: false; result: DispatchResult; recipientRefused: RecipientRefusalCode };

/** Why a message is stored refused: its recipient's reading (first: there is no number to send to), or its player's standing. */
type Refusal = { error: string; code: string; suppressed?: SuppressionReason; recipientRefused?: RecipientRefusalCode };

function refusalOf(message: PreparedMessage, suppression: SuppressionReason | null): Refusal | null {
  const reading = message.reading;
  if (reading?.outcome === 'refused') return { error: reading.error, code: reading.code, recipientRefused: reading.code };
  if (!suppression) return null;
  return { error: suppressionError(message.userId!, suppression), code: suppressionCode(suppression), suppressed: suppression };
}

/** The claim's answer for a refused message: the code the CRM reads (recipient refusals) and what the metrics count. */
function refusedAnswer(smsId: string, refusal: Refusal): ClaimAnswer {
  if (refusal.recipientRefused) {
    return { send: false, result: { outcome: 'rejected', smsId, error: refusal.error, code: refusal.code }, recipientRefused: refusal.recipientRefused };
  }
  return { send: false, result: { outcome: 'rejected', smsId, error: refusal.error }, suppressed: refusal.suppressed! };
}

/** What the message's timeline says was read otherwise than sent (prepare.ts's notes, then the recipient's reading). */
function intakeNoteOf(message: PreparedMessage): string | null {
  const texts = message.notes.map((n) => n.text);
  if (message.reading?.outcome === 'national') texts.push(message.reading.note);
  return texts.length > 0 ? texts.join('; ') : null;
}

/** The claims of one grouped write, all in `trx`: one answer per item, in order. */
async function claimInTransaction(deps: ClaimStepDeps, trx: Transaction<Database>, tally: StatsTally, items: ClaimItem[]): Promise<ClaimAnswer[]> {
  const at = deps.now();
  const standings = await refusalsInClaim(deps.recipients, items, trx);
  const refusals = items.map((item, i) => refusalOf(item.message, standings[i]!));
  const rows: NewMessage[] = items.map(({ message: m, requestId, traceparent }) => ({
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
    traceparent,
    intake_note: intakeNoteOf(m),
  }));
  const inserted = await insertNewMessages(
    trx,
    rows.filter((_, i) => !refusals[i]),
  );
  const refused = await insertRefusedMessages(
    trx,
    rows.flatMap((r, i) => (refusals[i] ? [{ ...r, error: refusals[i]!.error, error_code: refusals[i]!.code }] : [])),
  );
  // Suppressions are counted per reason beside the send outcomes, for the console (never sent, so not a provider's
  // `rejected`); a recipient refused for its reading is a refused message like any other.
  const statsOutcome = (refusal: Refusal): StatsOutcome => (refusal.suppressed ? suppressionCode(refusal.suppressed) : 'rejected');
  tally.push(
    ...rows.flatMap((r, i) => (refusals[i] && refused.has(r.activity_key) ? [{ at, provider: r.provider, outcome: statsOutcome(refusals[i]!) }] : [])),
  );
  const repeats = rows.filter((r) => !inserted.has(r.activity_key) && !refused.has(r.activity_key));
  const existing = new Map(
    (
      await findMessagesByActivityKeys(
        trx,
        repeats.map((r) => r.activity_key),
      )
    ).map((r) => [r.activity_key, r]),
  );
  const leaseCutoff = at - deps.repeatTimings.dispatchLeaseMs;
  const cutoffs = { uncertainCutoff: at - deps.repeatTimings.ambiguousRetryAfterMs };
  const answers: ClaimAnswer[] = [];
  for (const [i, row] of rows.entries()) {
    if (inserted.has(row.activity_key)) {
      answers.push({ send: true, smsId: row.sms_id });
      continue;
    }
    if (refused.has(row.activity_key)) {
      answers.push(refusedAnswer(row.sms_id, refusals[i]!));
      continue;
    }
    const previous = existing.get(row.activity_key);
    if (!previous) {
      // Neither inserted nor found: the database stored the key as other text than it was given.
      answers.push({
        send: false,
        result: { outcome: 'rejected', error: `activity.id ${JSON.stringify(row.activity_key.slice(0, 60))}: cannot be stored as given` },
      });
      continue;
    }
    const decision = decideRepeat(previous, at, deps.repeatTimings);
    if (decision.action === 'answer-sent') answers.push({ send: false, result: { outcome: 'submitted', smsId: decision.smsId } });
    else if (decision.action === 'answer-failed') {
      // A repeat of a recipient refused for its reading answers the same code.
      const code = RECIPIENT_REFUSAL_CODES.find((c) => c === previous.error_code);
      answers.push({ send: false, result: { outcome: 'rejected', smsId: decision.smsId, error: decision.error, ...(code ? { code } : {}) } });
    } else if (decision.action === 'resend' && (await reclaimMessageForRetry(trx, decision.smsId, row, at, cutoffs))) {
      const refusal = refusals[i];
      if (refusal) {
        // A retry of a transient failure, for a player who must not get it any more (or to a number now read as
        // another country's): refused for good.
        await markMessageRefused(trx, decision.smsId, { error: refusal.error, error_code: refusal.code }, at);
        tally.push({ at, provider: row.provider, outcome: statsOutcome(refusal) });
        answers.push(refusedAnswer(decision.smsId, refusal));
      } else answers.push({ send: true, smsId: decision.smsId });
    } else if (decision.action === 'resolve-lost-send') {
      // The sweep's change, made now (expireDispatchLeases): `uncertain`, its lookup pending, or `submitted` where a
      // receipt already came. Nothing here sends it: the dispatcher asks its provider, then claims it again.
      const [expired] = await expireDispatchLeases(trx, leaseCutoff, at, { smsIds: [decision.smsId] });
      if (expired?.state === 'submitted') {
        tally.push({ at, provider: expired.provider, outcome: 'submitted' });
        answers.push({ send: false, result: { outcome: 'submitted', smsId: decision.smsId } });
        continue;
      }
      const error = `activity.id ${row.activity_key}: its last send was lost mid-call and may have reached the provider; asking the provider before sending it again, retry later`;
      answers.push({ send: false, result: { outcome: 'uncertain', smsId: decision.smsId, error }, lostSend: decision.smsId });
    } else if (decision.action === 'busy' && decision.reason === 'awaiting-receipt') {
      const error = `activity.id ${row.activity_key}: its last send may have reached the provider; waiting for a receipt before sending it again, retry later`;
      answers.push({ send: false, result: { outcome: 'uncertain', smsId: decision.smsId, error } });
    } else {
      answers.push({
        send: false,
        result: { outcome: 'retryable', smsId: decision.smsId, error: `activity.id ${row.activity_key} is being sent by another request; retry later` },
      });
    }
  }
  return answers;
}

export function createClaimStep(deps: ClaimStepDeps) {
  const { logger } = deps;
  const writes = deps.queue.writer<ClaimItem, ClaimAnswer>((trx, items, tally) => claimInTransaction(deps, trx, tally, items));

  /** Claims `messages` for one request: one Claim per message, in order; never throws. */
  /** `traceparents[i]`: the send span of messages[i], stored with its row when tracing is on (docs/tracing.md). */
  return async function claim(messages: PreparedMessage[], requestId: string | undefined, traceparents?: Array<string | undefined>): Promise<Claim[]> {
    // The http backend's standings are asked here, before the claim: never a network call inside a transaction.
    const toClaim = await standingsBeforeClaim(deps.recipients, messages);
    const settled = await writes.settle(toClaim.map((item, i) => ({ ...item, requestId: requestId ?? null, traceparent: traceparents?.[i] ?? null })));
    const unavailable: Array<{ activityKey: string; error: unknown }> = [];
    const claims = settled.map((s, i): Claim => {
      const message = messages[i]!;
      if (s.status === 'fulfilled') {
        const answer = s.value;
        if (!answer.send && 'recipientRefused' in answer) {
          deps.metrics?.recipientRead(answer.recipientRefused);
          return { send: false, result: answer.result };
        }
        // Counted once its row holds the note: a national reading of a message that goes to its provider.
        if (answer.send && message.reading?.outcome === 'national') deps.metrics?.recipientRead(`national_by_${message.reading.basis}`);
        if (!answer.send && 'suppressed' in answer) {
          deps.metrics?.sendSuppressed(answer.suppressed);
          logger.info(
            {
              sms_id: answer.result.smsId,
              activity_id: message.activityKey,
              user_id: message.userId,
              to: maskPhoneNumber(message.recipient),
              reason: answer.suppressed,
              request_id: requestId,
            },
            'sms suppressed',
          );
          return { send: false, result: answer.result };
        }
        return answer;
      }
      if (isRefusedValue(s.reason)) {
        logger.info({ err: s.reason, activity_id: message.activityKey.slice(0, 100), request_id: requestId }, 'message refused by the ledger: nothing sent');
        return {
          send: false,
          result: {
            outcome: 'rejected',
            error: `activity.id ${JSON.stringify(message.activityKey.slice(0, 60))}: the message cannot be stored as given (${String((s.reason as Error).message).slice(0, 120)})`,
          },
        };
      }
      unavailable.push({ activityKey: message.activityKey, error: s.reason });
      return { send: false, result: { outcome: 'retryable', error: 'ledger unavailable; nothing was sent, retry later' } };
    });
    if (unavailable.length > 0) {
      // One line per request, not per message: a ledger that is down fails every message alike.
      const activityIds = unavailable.slice(0, 20).map((u) => u.activityKey.slice(0, 100));
      logger.error(
        { err: unavailable[0]!.error, count: unavailable.length, activity_ids: activityIds, request_id: requestId },
        'ledger unavailable: nothing sent',
      );
    }
    return claims;
  };
}
