/**
 * The send path's last step: the provider's answer becomes the message's outcome (src/sms/outcome.ts), written to
 * its ledger row in a grouped write (src/ledger/engine/transaction-queue.ts), counted and logged; a provider's opt-out is
 * handed on. The row was committed by the claim before the call, so a receipt can match it whatever happens here.
 */
import type { ReceiptIntake } from '../delivery/intake.js';
import type { Logger } from 'pino';
import type { SendResult } from '../../providers/types.js';
import { recordSendOutcomes, type SendOutcomeRecord } from '../ledger/messages.js';
import type { TransactionQueue } from '../ledger/engine/transaction-queue.js';
import { maskPhoneNumber, maskPhoneNumbersIn } from '../observability/logger.js';
import type { SendMetrics } from '../observability/metrics.js';
import { outcomeOf, type DispatchResult } from './outcome.js';
import type { PreparedMessage } from './prepare.js';
import { recordSendCosts, type SentCost } from '../costs/charges.js';
import type { CostBook } from '../costs/cost-book.js';

export interface RecordStepDeps {
  queue: TransactionQueue;
  logger: Logger;
  now: () => number;
  /**
   * The receipt intake's re-match (src/delivery/intake.ts), inside the transaction that recorded provider answers:
   * receipts that arrived before their send's answer are matched now.
   */
  rematchAfterSend?: ReceiptIntake['rematchAfterSend'];
  metrics?: Pick<SendMetrics, 'sendCompleted'>;
  /**
   * The provider said the recipient opted out (SendResult.recipientOptedOut) and the message names a player:
   * awaited before the answer, so the opt-out is committed when the CRM hears the refusal.
   */
  onRecipientOptedOut?: (optOut: { userId: string; recipient: string; provider: string; smsId: string }) => Promise<void>;
  /** What messages cost (src/costs/): the answer's price, the carrier's rate, or nothing for a send that sent nothing. */
  costs?: CostBook;
  /**
   * Whether a route's member names the sms_id in its receipts (SmsProvider.receiptsNameSmsId), by the member's name.
   * Absent: taken as not, so a route's messages keep their entry in the index of providers' message ids.
   */
  receiptsNameSmsId?: (provider: string) => boolean;
}

/** One provider call's facts, as the send step left them. */
export interface SendAnswer {
  message: PreparedMessage;
  smsId: string;
  answer: SendResult;
  /** How long the provider call took. */
  seconds: number;
  requestId?: string;
}

function cut(text: string | undefined, max: number): string | null {
  if (text === undefined) return null;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The ledger row's new fields; a provider's answer is outside text, stored (and logged) cut to a length that still shows what it said. */
export function recordOf(smsId: string, carrier: { provider: string; receiptsNameSmsId: boolean }, answer: SendResult, rerouted: boolean): SendOutcomeRecord {
  const state = outcomeOf(answer);
  const { provider, receiptsNameSmsId } = carrier;
  return answer.ok
    ? {
        smsId,
        provider,
        rerouted,
        receiptsNameSmsId,
        state,
        providerMessageIds: answer.providerMessageIds,
        providerStatus: cut(answer.providerStatus, 64),
        error: null,
        errorCode: null,
      }
    : {
        smsId,
        provider,
        rerouted,
        receiptsNameSmsId,
        state,
        providerMessageIds: [],
        providerStatus: null,
        error: cut(answer.error, 500),
        errorCode: cut(answer.code, 64),
      };
}

export function createRecordStep(deps: RecordStepDeps) {
  const { logger } = deps;
  const costs = deps.costs;
  const writes = deps.queue.writer<SendOutcomeRecord & { cost: SentCost }, void>(async (trx, records, tally) => {
    // First, while the row still names the provider it was claimed for (a route's answer changes it to the member).
    if (costs)
      await recordSendCosts(
        trx,
        costs,
        records.map((r) => r.cost),
      );
    await recordSendOutcomes(trx, tally, records, deps.now());
    await deps.rematchAfterSend?.(trx, tally, records);
    return records.map(() => undefined);
  });

  /**
   * Records one answer and tells the dispatcher what to answer for it; never throws. The CRM's answer waits for the
   * record, a submitted one too: answering first and recording in the next grouped commit cost about 5% less server
   * CPU per message in the send benchmark, but multiplied the end-to-end conversion lag (bench/run.ts, mode e2e)
   * by four, and leaves a window in which the row the CRM was answered about still reads `dispatching`.
   */
  return async function record({ message, smsId, answer, seconds, requestId }: SendAnswer): Promise<DispatchResult> {
    // A route answers with the member that carried the message: its receipts come to /dlr/{member}.
    const provider = answer.carrier ?? message.provider.name;
    const rerouted = provider !== message.provider.name;
    const receiptsNameSmsId = rerouted ? deps.receiptsNameSmsId?.(provider) === true : message.provider.receiptsNameSmsId === true;
    const row = recordOf(smsId, { provider, receiptsNameSmsId }, answer, rerouted);
    const cost: SentCost = {
      smsId,
      claimedProvider: message.provider.name,
      carrier: provider,
      mayHaveSent: row.state === 'submitted' || row.state === 'uncertain',
      ...(answer.ok && answer.price ? { price: answer.price } : {}),
    };
    try {
      await writes.run([{ ...row, cost }]);
    } catch (error) {
      // The row was committed before the call, so receipts still match; the answer stays what the provider said.
      logger.error({ err: error, sms_id: smsId, activity_id: message.activityKey, request_id: requestId }, 'could not record the provider answer');
    }
    if (!answer.ok && answer.recipientOptedOut && message.userId !== null && deps.onRecipientOptedOut) {
      try {
        await deps.onRecipientOptedOut({ userId: message.userId, recipient: message.recipient, provider: message.provider.name, smsId });
      } catch (error) {
        logger.error({ err: error, sms_id: smsId, user_id: message.userId }, 'could not record the opt-out the provider reported');
      }
    }
    deps.metrics?.sendCompleted(provider, row.state, message.segments, seconds);
    if (answer.ok && answer.balance) deps.costs?.metrics?.providerBalance(provider, answer.balance.currency, answer.balance.micros);
    // Refusals are what operators look for; a line per accepted message only at debug (it is the hot path).
    logger[answer.ok ? 'debug' : 'info'](
      {
        sms_id: smsId,
        activity_id: message.activityKey,
        provider,
        ...(provider !== message.provider.name ? { route: message.provider.name } : {}),
        to: maskPhoneNumber(message.recipient),
        segments: message.segments,
        state: row.state,
        error: row.error === null ? undefined : maskPhoneNumbersIn(row.error),
        request_id: requestId,
      },
      'sms dispatched',
    );
    if (answer.ok) return { outcome: 'submitted', smsId };
    return { outcome: row.state as Exclude<typeof row.state, 'submitted'>, smsId, error: row.error ?? answer.error };
  };
}
