/**
 * Applying receipts (docs/design.md §1 "receipt"), the step behind the intake (intake.ts): store every valid event once, match it to its message, move the
 * message's status forward and queue a conversion for a terminal status, all in the caller's transaction.
 * Receipts that match nothing yet are parked and re-matched when their message's provider id becomes known.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { ReceiptEvent } from '../../providers/types.js';
import { insertConversions } from '../ledger/conversions.js';
import { type StatsTally, withStatsTally } from '../ledger/delivery-stats.js';
import {
  countReceiptsBySmsId,
  findParkedReceipts,
  findStoredDedupKeys,
  insertNewReceipts,
  markReceiptsMatched,
  RECEIPT_MATCH,
  storableNamedSmsIds,
  type NewReceipt,
} from '../ledger/receipts.js';
import {
  confirmSubmitted,
  findReceiptTargetsByProviderId,
  findReceiptTargetsBySmsId,
  updateDeliveryStatus,
  type ReceiptTarget,
  type ReceiptTargetWithId,
} from '../ledger/receipt-targets.js';
import type { Database } from '../ledger/schema.js';
import { rollUpPartStatus } from './parts.js';
import { receiptsOverCap } from './receipt-cap.js';
import type { ReceiptMetrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import { decideTransition } from './status.js';
import { inTransaction } from '../ledger/engine/db.js';
import { receiptKey, smsIdClock } from '../ledger/ids.js';
import { recordReceiptCosts } from '../costs/charges.js';
import type { CostBook } from '../costs/cost-book.js';

type Trx = Transaction<Database>;
type MessageState = ReceiptTarget;

export interface ReceiptInput {
  /** The config name of the provider whose /dlr endpoint received it. */
  provider: string;
  event: ReceiptEvent;
  /** The request that carried it, for the log lines about it. */
  requestId?: string;
  /** That request's SERVER span when tracing is on: the receipt's span is its child (docs/tracing.md). */
  traceparent?: string;
}

/**
 * Optional observers, told inside the transaction (a rolled-back batch is retried by the provider and may be
 * counted twice; metrics are rates, so that is tolerable). Per-receipt log lines are at debug level.
 */
export interface ReceiptObservers {
  metrics?: ReceiptMetrics;
  logger?: Logger;
  /** When on, each applied receipt is a span under its message's send span (docs/tracing.md). */
  tracing?: Tracing;
  /**
   * Not an observer but a writer in the same transaction: a receipt's price replaces its message's estimate and a
   * delivered message is counted in the cost rollup (src/costs/charges.ts). Absent: no cost is kept.
   */
  costs?: CostBook;
}

export interface ReceiptSummary {
  fresh: number;
  duplicates: number;
  parked: number;
  reported: number;
  /** Dropped: their message already had delivery.max_receipts_per_message. */
  capped: number;
}

/**
 * The key that makes a receipt delivered twice count once: provider, message, provider id, status, error. What stands for
 * the message:
 * - a receipt that names our sms_id and was matched by it: that sms_id;
 * - a receipt matched by the provider's id alone (SMPP's): its message's clock (`smsIdClock`). Its key is then led by
 *   time like the others, so it lands at the growing edge of the unique index and a day's receipts leave it together
 *   (docs/ledger.md "Beside messages"); the clock, not the whole id, keeps it 24 characters narrower;
 * - a receipt parked without a message: the sms_id it named, if any (`unmatchedReceiptKey`), until it is matched
 *   (`markReceiptsMatched` gives it the key above).
 * The same receipt always reaches the same message, so it gets the same key, except while it is parked, or when it was
 * stored by a build that keyed every receipt as unmatched: `applyReceipts` looks for that key too.
 */
export function receiptDedupKey({ provider, event }: ReceiptInput, matchedSmsId: string | undefined): string {
  const named = event.smsId ?? '';
  const message = matchedSmsId === undefined || matchedSmsId === named ? named : smsIdClock(matchedSmsId);
  return receiptKey(provider, message, event.providerMessageId ?? '', event.providerStatus, event.errorCode ?? '');
}

/** The key of the same receipt while parked. */
function unmatchedReceiptKey(input: ReceiptInput): string {
  return receiptDedupKey(input, undefined);
}

/** Finds the message of each receipt: by our sms_id first, else by the provider's message (or part) id. */
async function resolveMessages(trx: Trx, inputs: ReceiptInput[], now: number): Promise<Array<MessageState | undefined>> {
  const smsIds = [...new Set(inputs.flatMap((i) => (i.event.smsId ? [i.event.smsId] : [])))];
  const bySmsId = new Map((await findReceiptTargetsBySmsId(trx, smsIds)).map((m) => [m.sms_id, m]));
  const found: Array<MessageState | undefined> = inputs.map((i) => {
    const m = i.event.smsId ? bySmsId.get(i.event.smsId) : undefined;
    // A receipt only counts for a message sent through the provider whose endpoint received it.
    return m && m.provider === i.provider ? m : undefined;
  });

  const byProviderId = new Map<string, MessageState>();
  const missing = inputs.filter((i, k) => !found[k] && i.event.providerMessageId);
  for (const provider of new Set(missing.map((i) => i.provider))) {
    const ids = missing.filter((i) => i.provider === provider).map((i) => i.event.providerMessageId!);
    for (const m of await findReceiptTargetsByProviderId(trx, provider, ids, now)) byProviderId.set(`${provider}|${m.provider_message_id}`, m);
  }
  return inputs.map((i, k) => found[k] ?? (i.event.providerMessageId ? byProviderId.get(`${i.provider}|${i.event.providerMessageId}`) : undefined));
}

/** Applies events to their messages in arrival order; returns how many conversions were queued. */
async function applyEvents(
  trx: Trx,
  tally: StatsTally,
  pairs: Array<{ message: MessageState; event: ReceiptEvent; requestId?: string }>,
  now: number,
  observers: ReceiptObservers,
): Promise<number> {
  const state = new Map<string, MessageState & { providerStatus?: string; changed: boolean }>();
  const conversions: Array<{ smsId: string; status: NonNullable<MessageState['delivery_status']> }> = [];
  // Asked once per batch, not per event: the per-receipt line costs an object per event even when it is not written.
  const debug = observers.logger?.isLevelEnabled('debug') ? observers.logger : undefined;
  for (const { message, event, requestId } of pairs) {
    const current = state.get(message.sms_id) ?? { ...message, changed: false };
    // Only a per-part event needs the ledger (src/delivery/parts.ts); any other is its own status, without an await.
    const transition = decideTransition(current, event.perPart ? await rollUpPartStatus(trx, message.sms_id, event) : event.status);
    debug?.debug(
      {
        sms_id: message.sms_id,
        activity_id: message.activity_key,
        provider: message.provider,
        provider_status: event.providerStatus,
        status: event.status,
        reported: transition.kind === 'report' ? transition.status : undefined,
        request_id: requestId,
      },
      'receipt applied',
    );
    if (transition.kind === 'report') {
      // The timeout's delivery_unknown this receipt replaces leaves the counts where it was counted.
      if (current.delivery_source === 'timeout' && current.completed_at !== null) {
        tally.push({ at: Number(current.completed_at), provider: message.provider, outcome: 'delivery_unknown', n: -1 });
      }
      tally.push({ at: now, provider: message.provider, outcome: transition.status });
      observers.metrics?.deliveryReported(message.provider, transition.status, (now - Number(message.dispatched_at)) / 1000);
      current.delivery_status = transition.status;
      current.delivery_source = 'receipt';
      current.providerStatus = event.providerStatus;
      current.changed = true;
      conversions.push({ smsId: message.sms_id, status: transition.status });
    } else if (current.delivery_status === null) {
      current.providerStatus = event.providerStatus;
      current.changed = true;
    }
    state.set(message.sms_id, current);
  }
  // Messages that end in the same place share one UPDATE (the key is built once per message, never parsed back).
  const groups = new Map<string, { set: MessageState & { providerStatus?: string }; smsIds: string[] }>();
  for (const m of state.values()) {
    if (!m.changed) continue;
    const key = JSON.stringify([m.delivery_status, m.delivery_source, m.providerStatus ?? null]);
    const group = groups.get(key);
    if (group) group.smsIds.push(m.sms_id);
    else groups.set(key, { set: m, smsIds: [m.sms_id] });
  }
  for (const { set, smsIds } of groups.values()) {
    const deliveryStatus = set.delivery_status;
    await updateDeliveryStatus(trx, smsIds, {
      deliveryStatus,
      deliverySource: set.delivery_source,
      providerStatus: set.providerStatus ?? null,
      now,
      completedAt: deliveryStatus ? now : null,
    });
  }
  await insertConversions(trx, conversions, now);
  if (observers.costs) {
    const delivered = new Set(conversions.filter((c) => c.status === 'delivered').map((c) => c.smsId));
    const final = new Set(conversions.map((c) => c.smsId));
    const costs = pairs.flatMap(({ message, event }) =>
      event.price || final.has(message.sms_id)
        ? [
            {
              smsId: message.sms_id,
              deliveredNow: delivered.delete(message.sms_id),
              finalNow: final.delete(message.sms_id),
              price: event.price,
              perPart: event.perPart,
            },
          ]
        : [],
    );
    const known = new Map(pairs.map(({ message }) => [message.sms_id, message as ReceiptTargetWithId]));
    await recordReceiptCosts(trx, observers.costs, costs, now, known);
  }
  return conversions.length;
}

export async function applyReceipts(
  trx: Trx,
  tally: StatsTally,
  inputs: ReceiptInput[],
  now: number,
  observers: ReceiptObservers = {},
  /** delivery.max_receipts_per_message; unbounded when absent. */
  maxPerMessage?: number,
): Promise<ReceiptSummary> {
  const startedAt = observers.tracing?.enabled ? Date.now() : 0;
  const messages = await resolveMessages(trx, inputs, now);
  const rows: NewReceipt[] = inputs.map((input, k) => ({
    provider: input.provider,
    dedup_key: receiptDedupKey(input, messages[k]?.sms_id),
    sms_id: messages[k]?.sms_id ?? input.event.smsId ?? null,
    provider_message_id: input.event.providerMessageId ?? null,
    provider_status: input.event.providerStatus,
    mapped_status: input.event.status,
    error_code: input.event.errorCode ?? null,
    matched: messages[k] ? RECEIPT_MATCH.applied : RECEIPT_MATCH.parked,
    received_at: now,
    per_part: input.event.perPart ? 1 : 0,
    // Only a parked receipt keeps its price: an applied one's is on its message at once.
    price_micros: !messages[k] && input.event.price ? input.event.price.micros.toString() : null,
    price_currency: !messages[k] && input.event.price ? input.event.price.currency : null,
  }));
  const named = rows.flatMap((r, k) => (!messages[k] && typeof r.sms_id === 'string' ? [r.sms_id] : []));
  if (named.length > 0) {
    const storable = await storableNamedSmsIds(trx, named);
    rows.forEach((r, k) => {
      if (!messages[k] && typeof r.sms_id === 'string' && !storable.has(r.sms_id)) r.sms_id = null;
    });
  }
  // The same receipt twice in one batch counts once, like a duplicate arriving later.
  const firstIndex = new Map<string, number>();
  rows.forEach((r, k) => firstIndex.has(r.dedup_key) || firstIndex.set(r.dedup_key, k));
  // A receipt matched now by the provider's id may have been stored before under its unmatched key: parked while its
  // message was not known yet, or stored by a build that keyed every receipt so. (On PostgreSQL a copy that another
  // instance is parking in a transaction not committed yet is not seen: both are stored, and the sweep applies the
  // parked one later to no effect, its status being the message's already.)
  const unmatchedKeys = new Map<number, string>();
  for (const k of firstIndex.values()) {
    const key = unmatchedReceiptKey(inputs[k]!);
    if (key !== rows[k]!.dedup_key) unmatchedKeys.set(k, key);
  }
  const storedUnmatched = await findStoredDedupKeys(
    trx,
    [...unmatchedKeys.values()],
    [...unmatchedKeys.keys()].flatMap((k) => (rows[k]!.sms_id ? [rows[k]!.sms_id] : [])),
  );
  let unique = [...firstIndex.values()].filter((k) => {
    const key = unmatchedKeys.get(k);
    return key === undefined || !storedUnmatched.has(key);
  });
  const capped = new Set<number>();
  if (maxPerMessage !== undefined) {
    const named = unique.map((k) => ({ smsId: rows[k]!.sms_id ?? null, limit: maxPerMessage * Math.max(1, messages[k]?.segments ?? 1) }));
    const stored = await countReceiptsBySmsId(
      trx,
      named.flatMap((r) => (r.smsId === null ? [] : [r.smsId])),
    );
    const over = receiptsOverCap(named, stored);
    for (const i of over) capped.add(unique[i]!);
    unique = unique.filter((_, i) => !over.has(i));
  }
  const fresh = await insertNewReceipts(
    trx,
    unique.map((k) => rows[k]!),
  );
  observeReceipts(inputs, rows, unique, fresh, observers, capped);
  const unsent = unique.filter((k) => UNSENT_STATES.some((state) => messages[k]?.state === state));
  await confirmAcceptedSends(
    trx,
    tally,
    unsent.map((k) => ({ message: messages[k]!, event: inputs[k]!.event })),
    now,
  );
  const applicable = unique.filter((k) => fresh.has(rows[k]!.dedup_key) && messages[k]);
  const reported = await applyEvents(
    trx,
    tally,
    applicable.map((k) => ({ message: messages[k]!, event: inputs[k]!.event, requestId: inputs[k]!.requestId })),
    now,
    observers,
  );
  if (startedAt)
    traceReceipts(
      observers.tracing!,
      applicable.map((k) => ({ message: messages[k]!, event: inputs[k]!.event, traceparent: inputs[k]!.traceparent })),
      startedAt,
    );
  return {
    fresh: fresh.size,
    duplicates: inputs.length - fresh.size - capped.size,
    capped: capped.size,
    parked: unique.filter((k) => fresh.has(rows[k]!.dedup_key) && !messages[k]).length,
    reported,
  };
}

/**
 * One span per applied receipt, a child of the request that carried it and linked to its message's send span (stored
 * with the row): the send ended long before, often in another process, so the receipt is not its child but follows
 * from it. It covers applying the receipts up to the commit, which follows at once.
 */
function traceReceipts(
  tracing: Tracing,
  applied: Array<{ message: MessageState; event: ReceiptEvent; traceparent: string | undefined }>,
  startedAt: number,
): void {
  for (const { message, event, traceparent } of applied) {
    const attributes = {
      'sms.sms_id': message.sms_id,
      'sms.provider': message.provider,
      'sms.receipt_status': event.status,
      'sms.provider_status': event.providerStatus,
    };
    tracing.startSpan('sms.receipt', traceparent, { startTime: startedAt, attributes, links: [message.traceparent] }).end();
  }
}

/**
 * A receipt for a message whose send ended ambiguously proves the provider accepted it after all (a 5xx or a
 * timeout after Twilio had created the message: docs/providers.md §1, "ambiguous"). The message becomes submitted, so
 * the CRM's retry is answered with its sms_id instead of sending the SMS a second time. Only `uncertain` sends
 * qualify: a `retryable` one provably never reached the provider (429, connection refused), so a receipt claiming
 * it was accepted is wrong, and believing it would answer the CRM's retry `successful` for an SMS never sent.
 */
const UNSENT_STATES = ['uncertain'] as const;

async function confirmAcceptedSends(trx: Trx, tally: StatsTally, accepted: Array<{ message: MessageState; event: ReceiptEvent }>, now: number): Promise<void> {
  for (const { message, event } of accepted) {
    if (!(await confirmSubmitted(trx, message.sms_id, event.providerMessageId ?? null, UNSENT_STATES, now))) continue;
    message.state = 'submitted';
    // Taken back from the bucket the failed answer was counted in (its row was last written then).
    tally.push(
      { at: Number(message.updated_at), provider: message.provider, outcome: 'retryable', n: -1 },
      { at: now, provider: message.provider, outcome: 'submitted' },
    );
  }
}

/** Counts each receipt once: stored (by mapped status), a duplicate, or parked; logs the parked ones. */
function observeReceipts(
  inputs: ReceiptInput[],
  rows: NewReceipt[],
  unique: number[],
  fresh: Set<string>,
  observers: ReceiptObservers,
  capped: ReadonlySet<number>,
): void {
  const { metrics, logger } = observers;
  const isFresh = new Set(unique.filter((k) => fresh.has(rows[k]!.dedup_key)));
  inputs.forEach((input, k) => {
    if (capped.has(k)) return metrics?.receiptCapped(input.provider);
    if (!isFresh.has(k)) return metrics?.receiptDuplicate(input.provider);
    metrics?.receiptStored(input.provider, input.event.status);
    if (rows[k]!.matched !== RECEIPT_MATCH.parked) return;
    metrics?.receiptParked(input.provider);
    logger?.debug(
      {
        sms_id: input.event.smsId,
        provider: input.provider,
        provider_message_id: input.event.providerMessageId,
        status: input.event.status,
        request_id: input.requestId,
      },
      'receipt parked until its message is known',
    );
  });
}

/** Parked receipts read (and applied) per query and per transaction. */
const PARKED_PAGE = 1_000;

/** Applies parked receipts whose message can now be found (after a send recorded its provider ids, or by sweep). */
export async function matchParkedReceipts(
  trx: Trx,
  tally: StatsTally,
  now: number,
  scope: { provider: string; providerMessageIds: string[] },
  observers: ReceiptObservers = {},
): Promise<number> {
  return applyParked(trx, tally, await findParkedReceipts(trx, PARKED_PAGE, scope), now, observers);
}

/**
 * The sweep's pass over every parked receipt, a page at a time in id order (so a pile of receipts that will never
 * match cannot hide newer ones), each page in its own transaction.
 */
export async function matchAllParkedReceipts(db: Kysely<Database>, now: number, observers: ReceiptObservers = {}): Promise<number> {
  let applied = 0;
  for (let afterId = 0; ; ) {
    const page = await inTransaction(db, (trx) =>
      withStatsTally(trx, async (tally) => {
        const parked = await findParkedReceipts(trx, PARKED_PAGE, { afterId });
        applied += await applyParked(trx, tally, parked, now, observers);
        return parked;
      }),
    );
    if (page.length < PARKED_PAGE) return applied;
    afterId = Number(page[page.length - 1]!.id);
  }
}

async function applyParked(
  trx: Trx,
  tally: StatsTally,
  parked: Awaited<ReturnType<typeof findParkedReceipts>>,
  now: number,
  observers: ReceiptObservers,
): Promise<number> {
  if (parked.length === 0) return 0;
  const inputs: ReceiptInput[] = parked.map((r) => ({
    provider: r.provider,
    event: {
      smsId: r.sms_id ?? undefined,
      providerMessageId: r.provider_message_id ?? undefined,
      providerStatus: r.provider_status,
      status: r.mapped_status as ReceiptEvent['status'],
      errorCode: r.error_code ?? undefined,
      perPart: Number(r.per_part) === 1,
      ...(r.price_micros !== null && r.price_currency !== null ? { price: { micros: BigInt(r.price_micros), currency: r.price_currency } } : {}),
    },
  }));
  const messages = await resolveMessages(trx, inputs, now);
  const matched = parked.flatMap((r, k) =>
    messages[k] ? [{ id: Number(r.id), smsId: messages[k]!.sms_id, dedupKey: receiptDedupKey(inputs[k]!, messages[k]!.sms_id), parkedSmsId: r.sms_id, k }] : [],
  );
  await markReceiptsMatched(trx, matched);
  return applyEvents(
    trx,
    tally,
    matched.map((m) => ({ message: messages[m.k]!, event: inputs[m.k]!.event })),
    now,
    observers,
  );
}
