/**
 * The send path's first step: claim each message in the ledger, committed before any provider call, so a message
 * the provider may get is never lost and never sent twice (docs/design.md §4). A claim is one of:
 * - a new row (`dispatching`): send it;
 * - a repeat of an activity.id the ledger knows: answered from its row, or taken over for another attempt
 *   (src/sms/idempotency.ts decides which);
 * - a recipient read as no number of its player's country, or as two numbers with nothing to choose between them
 *   (src/sms/recipient-reading.ts): stored `rejected` with its code, nothing sent;
 * - a player who must not get it (src/consents/suppression.ts): stored `rejected`, nothing sent;
 * - a message inside its quiet hours (src/sms/quiet-hours.ts): stored `held` with its held_sends row, answered with
 *   its sms_id, and sent by the held sends outbox when its window opens (src/sms/held-sends.ts);
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
  type MessageRow,
  type NewMessage,
} from '../ledger/messages.js';
import type { Database } from '../ledger/schema.js';
import { holdReclaimedMessage, insertHeldMessages, type HoldRow } from '../ledger/held-sends.js';
import type { QuietHoursConfig } from '../config/quiet-hours-config.js';
import { decideQuietHours, planHold } from './quiet-hours.js';
import type { TransactionQueue } from '../ledger/engine/transaction-queue.js';
import { isRefusedValue } from '../ledger/engine/write-errors.js';
import { activityDimensions, chargeClaims, contributionOf, replaceContributions, subjectOf, type ChargeItem } from '../costs/charges.js';
import { estimateColumns, type CostBook, type CostColumns } from '../costs/cost-book.js';
import { toMicros } from '../kit/money.js';
import type { SendMetrics } from '../observability/metrics.js';
import type { Routing } from '../provider-wrappers/routing.js';
import { decideRepeat, type RepeatTimings } from './idempotency.js';
import type { DispatchResult } from './outcome.js';
import type { PreparedMessage } from './prepare.js';
import { maskPhoneNumber } from '../observability/logger.js';
import { RECIPIENT_REFUSAL_CODES, type RecipientRefusalCode } from './recipient-reading.js';
import { readWithPlayerRecord } from './player-records.js';
import { ROUTING_REFUSAL_CODES } from './routing-verdict.js';
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
export type Claim =
  | {
      send: true;
      smsId: string;
      /** The message as claimed, when the claim read its recipient again with its player's record (send this one). */
      message?: PreparedMessage;
    }
  | { send: false; result: DispatchResult; lostSend?: string };

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
  /** sms.default_region, for a recipient read again with its player's record in the claim. */
  defaultRegion?: string;
  /** What messages cost and the budgets they count toward (src/costs/); absent: no cost is kept. */
  costs?: CostBook;
  /** quiet_hours: a message inside its window's quiet hours is held, not sent (absent or no windows: none is). */
  quietHours?: QuietHoursConfig;
  /** Its `routing.zones` (the operator's zones by prefix), which place a recipient for quiet hours too. */
  routing?: Pick<Routing, 'snapshot'>;
}

/** A message to claim and, when its player was looked up before the claim (http backend), that player's standing. */
type ClaimItem = ToClaim<PreparedMessage> & { requestId: string | null; traceparent: string | null };
type ClaimAnswer =
  | Claim
  | { send: false; result: DispatchResult; budgetRefused: string }
  | { send: false; result: DispatchResult; heldUntil: number }
  | { send: false; result: DispatchResult; suppressed: SuppressionReason; message?: PreparedMessage }
  | { send: false; result: DispatchResult; recipientRefused: RecipientRefusalCode };

/** Why a message is stored refused: its recipient's reading (first: there is no number to send to), or its player's standing. */
type Refusal = { error: string; code: string; suppressed?: SuppressionReason; recipientRefused?: RecipientRefusalCode; routingRefused?: true };

function refusalOf(message: PreparedMessage, suppression: SuppressionReason | null): Refusal | null {
  const reading = message.reading;
  if (reading?.outcome === 'refused') return { error: reading.error, code: reading.code, recipientRefused: reading.code };
  // Where it may not go (routing-verdict.ts) is refused before its player's standing is asked about.
  const verdict = message.verdict;
  if (verdict && !verdict.ok) return { error: verdict.error, code: verdict.code, routingRefused: true };
  if (!suppression) return null;
  return { error: suppressionError(message.userId!, suppression), code: suppressionCode(suppression), suppressed: suppression };
}

/** The claim's answer for a refused message: the code the CRM reads (recipient refusals) and what the metrics count. */
function refusedAnswer(smsId: string, refusal: Refusal): ClaimAnswer {
  if (refusal.recipientRefused) {
    return { send: false, result: { outcome: 'rejected', smsId, error: refusal.error, code: refusal.code }, recipientRefused: refusal.recipientRefused };
  }
  if (refusal.routingRefused) return { send: false, result: { outcome: 'rejected', smsId, error: refusal.error, code: refusal.code } };
  return { send: false, result: { outcome: 'rejected', smsId, error: refusal.error }, suppressed: refusal.suppressed! };
}

/** What the message's timeline says was read otherwise than sent (prepare.ts's notes, then the recipient's reading). */
function intakeNoteOf(message: PreparedMessage): string | null {
  const texts = message.notes.map((n) => n.text);
  if (message.reading?.outcome === 'national') texts.push(message.reading.note);
  return texts.length > 0 ? texts.join('; ') : null;
}

/** The route and rule its routing verdict chose, stored with the row (the member that carries it is `provider`, later). */
function routeColumnsOf(m: PreparedMessage): Pick<NewMessage, 'route' | 'route_rule' | 'route_rule_name'> {
  const choice = m.verdict?.ok ? m.verdict.choice : undefined;
  return choice
    ? { route: choice.route, route_rule: choice.rule, route_rule_name: choice.name ?? null }
    : { route: null, route_rule: null, route_rule_name: null };
}

/** The message's hold when it arrives inside its quiet hours (decideQuietHours), else undefined. */
function holdOf(deps: ClaimStepDeps, message: PreparedMessage, smsId: string, at: number): HoldRow | undefined {
  const quiet = deps.quietHours;
  if (!quiet) return undefined;
  const zones = deps.routing?.snapshot().calendar.zones;
  const decision = decideQuietHours(at, { e164: message.recipient, country: message.country }, message.brand, quiet, zones);
  if (decision.action === 'send') return undefined;
  const plan = planHold(decision, at, smsId, quiet);
  return { quietWindow: plan.window, content: message.text, releaseAt: plan.releaseAt, expiresAt: plan.expiresAt };
}

/** The claims of one grouped write, all in `trx`: one answer per item, in order. */
async function claimInTransaction(deps: ClaimStepDeps, trx: Transaction<Database>, tally: StatsTally, items: ClaimItem[]): Promise<ClaimAnswer[]> {
  const at = deps.now();
  const standings = await refusalsInClaim(deps.recipients, items, trx);
  // The sql backend's standings carry the player's record: the recipient is read with it here, not in a read before.
  // Unless it was read with it before the claim, for its routing verdict (dispatch.ts): that reading stands.
  const messages = items.map(({ message }, i) => (message.recordRead ? message : readWithPlayerRecord(message, standings[i]!.place, deps.defaultRegion)));
  const refusals = messages.map((m, i) => refusalOf(m, standings[i]!.refusal));
  const rows: NewMessage[] = items.map(({ requestId, traceparent }, i) => {
    const m = messages[i]!;
    return {
      sms_id: newSmsId(),
      activity_key: m.activityKey,
      activity_json: m.activityJson,
      user_id: m.userId,
      request_id: requestId,
      provider: m.provider.name,
      // A route's member is known at the record (record.ts); until then a route's message keeps its index entry.
      receipts_name_sms_id: m.provider.receiptsNameSmsId ? 1 : 0,
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
      ...routeColumnsOf(m),
      country: m.country ?? null,
      // Counted only once claimed to send (chargeClaims, below); a refused row never is.
      ...(deps.costs && !refusals[i] ? estimateColumns(deps.costs, m.provider.name, m.country ?? null, m.segments) : NOT_COUNTED),
    };
  });
  // The hold is decided here, at the claim, with the row's own sms_id (its release is spread by it): a repeat of an
  // activity.id finds the row and is answered from it (idempotency.ts), so nothing is held twice.
  const holds = rows.map((r, i) => (refusals[i] ? undefined : holdOf(deps, messages[i]!, r.sms_id, at)));
  const inserted = await insertNewMessages(
    trx,
    rows.filter((_, i) => !refusals[i] && !holds[i]),
  );
  const held = await insertHeldMessages(
    trx,
    rows.flatMap((message, i) => (holds[i] ? [{ message, hold: holds[i] }] : [])),
    at,
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
  const repeats = rows.filter((r) => !inserted.has(r.activity_key) && !refused.has(r.activity_key) && !held.has(r.activity_key));
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
  /** The messages this claim sends, each with the moment its cost counts in (its first claim's). */
  const charged: Array<{ index: number; row: NewMessage; createdAt: number; previous?: MessageRow }> = [];
  const withdrawn: MessageRow[] = [];
  for (const [i, row] of rows.entries()) {
    const reread = messages[i] === items[i]!.message ? {} : { message: messages[i]! };
    if (inserted.has(row.activity_key)) {
      charged.push({ index: answers.length, row, createdAt: at });
      answers.push({ send: true, smsId: row.sms_id, ...reread });
      continue;
    }
    if (refused.has(row.activity_key)) {
      answers.push({ ...refusedAnswer(row.sms_id, refusals[i]!), ...reread });
      continue;
    }
    if (held.has(row.activity_key)) {
      // A held message counts toward its budgets now, as a sent one: a budget it would pass refuses it instead.
      charged.push({ index: answers.length, row, createdAt: at });
      // Accepted: the CRM's custom channel hears 200 with the sms_id, and the conversion follows the send.
      answers.push({ send: false, result: { outcome: 'submitted', smsId: row.sms_id }, heldUntil: holds[i]!.releaseAt });
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
      const code = [...RECIPIENT_REFUSAL_CODES, ...ROUTING_REFUSAL_CODES].find((c) => c === previous.error_code);
      answers.push({ send: false, result: { outcome: 'rejected', smsId: decision.smsId, error: decision.error, ...(code ? { code } : {}) } });
    } else if (decision.action === 'resend' && (await reclaimMessageForRetry(trx, decision.smsId, row, at, cutoffs))) {
      const refusal = refusals[i];
      if (refusal) {
        // A retry of a transient failure, for a player who must not get it any more (or to a number now read as
        // another country's): refused for good.
        await markMessageRefused(trx, decision.smsId, { error: refusal.error, error_code: refusal.code }, at);
        tally.push({ at, provider: row.provider, outcome: statsOutcome(refusal) });
        answers.push(refusedAnswer(decision.smsId, refusal));
        // What its last attempt still counted (an uncertain send) is taken back with it.
        if (previous.cost_source !== null) withdrawn.push(previous);
        continue;
      }
      charged.push({ index: answers.length, row: { ...row, sms_id: decision.smsId }, createdAt: Number(previous.created_at), previous });
      // A retry of a transient failure that arrives inside its quiet hours is held like a new message.
      const hold = holdOf(deps, messages[i]!, decision.smsId, at);
      if (hold) {
        await holdReclaimedMessage(trx, decision.smsId, hold, at);
        answers.push({ send: false, result: { outcome: 'submitted', smsId: decision.smsId }, heldUntil: hold.releaseAt });
      } else answers.push({ send: true, smsId: decision.smsId, ...reread });
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
  if (deps.costs) {
    await replaceContributions(
      trx,
      deps.costs,
      withdrawn.map((m) => ({ subject: subjectOf(m), before: contributionOf(m), after: null, delivered: m.delivery_status === 'delivered' })),
    );
    await chargeSends(deps.costs, trx, tally, at, charged, answers);
  }
  return answers;
}

const NOT_COUNTED: Omit<CostColumns, 'cost_source'> & { cost_source: null } = { cost_micros: null, cost_currency: null, cost_source: null };

/**
 * Counts what the claimed sends cost toward their budgets and the rollup (src/costs/charges.ts); one that would pass
 * a budget is refused here, its row marked `rejected` with code budget_exceeded in this same transaction, so nothing
 * is sent and a retry of its activity.id repeats the refusal.
 */
async function chargeSends(
  costs: CostBook,
  trx: Transaction<Database>,
  tally: StatsTally,
  at: number,
  charged: Array<{ index: number; row: NewMessage; createdAt: number; previous?: MessageRow }>,
  answers: ClaimAnswer[],
): Promise<void> {
  const items: ChargeItem[] = charged.map(({ row, createdAt, previous }) => ({
    previous: previous && contributionOf(previous),
    subject: { smsId: row.sms_id, country: row.country, segments: row.segments, createdAt, dimensions: activityDimensions(row.activity_json) },
    contribution: {
      provider: row.provider,
      micros: row.cost_micros === null ? null : toMicros(row.cost_micros),
      currency: row.cost_currency,
      source: row.cost_source ?? 'none',
    },
  }));
  const refused = await chargeClaims(trx, costs, items);
  for (const { index, row } of charged) {
    const refusal = refused.get(row.sms_id);
    if (!refusal) continue;
    await markMessageRefused(trx, row.sms_id, { error: refusal.error, error_code: 'budget_exceeded' }, at);
    tally.push({ at, provider: row.provider, outcome: 'rejected' });
    answers[index] = {
      send: false,
      result: { outcome: 'rejected', smsId: row.sms_id, error: refusal.error, code: 'budget_exceeded' },
      budgetRefused: refusal.budget.name,
    };
  }
}

export function createClaimStep(claimDeps: ClaimStepDeps) {
  // No window configured: no message is held, and the claim does not ask.
  const windows = claimDeps.quietHours && Object.keys(claimDeps.quietHours.windows).length > 0;
  const deps = windows ? claimDeps : { ...claimDeps, quietHours: undefined };
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
      let message = messages[i]!;
      if (s.status === 'fulfilled') {
        const answer = s.value;
        if ('message' in answer && answer.message) message = answer.message;
        if (!answer.send && 'budgetRefused' in answer) {
          logger.info(
            { sms_id: answer.result.smsId, activity_id: message.activityKey, budget: answer.budgetRefused, request_id: requestId },
            'sms refused: it would pass a budget',
          );
          return { send: false, result: answer.result };
        }
        if (!answer.send && 'recipientRefused' in answer) {
          deps.metrics?.recipientRead(answer.recipientRefused);
          return { send: false, result: answer.result };
        }
        // Counted once its row holds the note: a national reading of a message that goes to its provider.
        if (answer.send && message.reading?.outcome === 'national') deps.metrics?.recipientRead(`national_by_${message.reading.basis}`);
        if (!answer.send && 'heldUntil' in answer) {
          logger.info(
            {
              sms_id: answer.result.smsId,
              activity_id: message.activityKey,
              to: maskPhoneNumber(message.recipient),
              held_until: new Date(answer.heldUntil).toISOString(),
              request_id: requestId,
            },
            'sms held for its quiet hours',
          );
          return { send: false, result: answer.result };
        }
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
