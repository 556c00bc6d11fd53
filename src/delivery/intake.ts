/**
 * The receipt intake: where every receipt enters the ledger, whether it came to /dlr/{provider}
 * (src/delivery/routes.ts) or over a provider's own connection (SMPP deliver_sm), and where parked receipts are
 * re-matched once a send records the provider's message ids (src/sms/record.ts calls `rematchAfterSend` in the
 * transaction that records them). Built once by src/gateway.ts.
 */
import type { StatsTally } from '../ledger/delivery-stats.js';
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { MappedStatus, ReceiptEvent } from '../../providers/types.js';
import type { SendOutcomeRecord } from '../ledger/messages.js';
import { anyParkedReceipts, setAsideParkedBeyond } from '../ledger/receipts.js';
import type { Database } from '../ledger/schema.js';
import type { TransactionQueue } from '../ledger/engine/transaction-queue.js';
import { isRefusedValue } from '../ledger/engine/write-errors.js';
import type { ReceiptMetrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { Wake } from '../outbox/wake.js';
import type { CostBook } from '../costs/cost-book.js';
import { applyReceipts, matchParkedReceipts, type ReceiptSummary, type ReceiptInput } from './apply-receipts.js';

export interface ReceiptIntakeDeps {
  /** The ledger's grouping layer: receipts share commits with each other and with the send path's writes. */
  queue: TransactionQueue;
  now: () => number;
  logger: Logger;
  metrics?: ReceiptMetrics;
  /** delivery.max_receipts_per_message: receipts past it are counted and dropped. */
  maxReceiptsPerMessage?: number;
  /** Told of every stored receipt's provider and status (route members' delivery rates: src/provider-wrappers/breakers.ts). */
  observeReceipt?: (provider: string, status: MappedStatus) => void;
  /** Told when a write queued conversions, so the conversion outbox looks at once. */
  wake?: Wake;
  /** Receipt spans under their messages' send spans when on (docs/tracing.md). */
  tracing?: Tracing;
  /** Prices in receipts and deliveries, written to the costs in the same transaction (src/costs/charges.ts). */
  costs?: CostBook;
}

export interface ReceiptIntake {
  /** Stores a request's receipts, batched with other requests' into one transaction. */
  store(inputs: ReceiptInput[]): Promise<ReceiptSummary>;
  /**
   * Stores receipts a plugin pushed over its own connection (SMPP), then keeps about `maxParked` of that provider's
   * receipts parked, setting the oldest aside (parkedCheckInterval): a source that reports ids we never issued cannot
   * grow the pile forever.
   */
  storePushed(provider: string, events: ReceiptEvent[], limits?: { maxParked?: number }): Promise<ReceiptSummary>;
  /** Receipts that beat the provider's answer and carry only its message id wait parked until the send is recorded. */
  rematchAfterSend(trx: Transaction<Database>, tally: StatsTally, records: SendOutcomeRecord[]): Promise<void>;
}

/**
 * How many receipts a process parks between two enforcements of a provider's `max_parked_receipts`. Enforcing reads
 * up to that many parked entries (setAsideParkedBeyond), so doing it on every receipt would make each receipt of a
 * flood of unknown ids cost the whole bound; once per tenth of the bound costs about ten entries a receipt, and lets
 * the pile pass the bound by less than a tenth of it (per instance) before the oldest are set aside.
 */
export function parkedCheckInterval(maxParked: number): number {
  return Math.max(1, Math.floor(maxParked / 10));
}

export function createReceiptIntake(deps: ReceiptIntakeDeps): ReceiptIntake {
  const { queue, now, logger } = deps;
  const observers = { metrics: deps.metrics, logger, tracing: deps.tracing, costs: deps.costs };
  const reported = (count: number) => {
    if (count > 0) deps.wake?.('conversions');
  };

  const writes = queue.writer<ReceiptInput, ReceiptSummary>(
    async (trx, inputs, tally) => {
      const summary = await applyReceipts(trx, tally, inputs, now(), observers, deps.maxReceiptsPerMessage);
      return inputs.map(() => summary);
    },
    // Told once the receipts are committed: the worker must not wake up for conversions not yet stored.
    (inputs, summaries) => {
      const summary = summaries[0]!;
      for (const input of inputs) deps.observeReceipt?.(input.provider, input.event.status);
      if (summary.parked > 0) logger.info({ parked: summary.parked }, 'receipts parked until their message is known');
      reported(summary.reported);
    },
  );

  // Receipts this process parked per provider since it last enforced the bound (absent: not yet, so the first enforces).
  const parkedSinceCheck = new Map<string, number>();

  const intake: ReceiptIntake = {
    /**
     * Each event is written on its own if its group fails (src/ledger/engine/transaction-queue.ts), so one event that cannot be
     * stored never costs the others. An event the ledger refuses as a value is logged and dropped (a retry cannot
     * store it); any other failure answers 5xx, so the provider sends the request again (stored events deduplicate).
     */
    async store(inputs) {
      const settled = await writes.settle(inputs);
      const failed = settled.flatMap((s, i) => (s.status === 'rejected' ? [{ error: s.reason as unknown, input: inputs[i]! }] : []));
      const retry = failed.find((f) => !isRefusedValue(f.error));
      if (retry) throw retry.error;
      for (const f of failed) {
        logger.warn(
          { err: f.error, provider: f.input.provider, sms_id: f.input.event.smsId?.slice(0, 64), request_id: f.input.requestId },
          'receipt event refused by the ledger; dropped',
        );
      }
      const stored = settled.find((s) => s.status === 'fulfilled');
      return stored?.status === 'fulfilled' ? stored.value : { fresh: 0, duplicates: 0, parked: 0, reported: 0, capped: 0 };
    },

    async storePushed(provider, events, limits) {
      const summary = await intake.store(events.map((event) => ({ provider, event })));
      const keep = limits?.maxParked;
      if (keep !== undefined && summary.parked > 0) {
        const since = (parkedSinceCheck.get(provider) ?? Number.POSITIVE_INFINITY) + summary.parked;
        if (since < parkedCheckInterval(keep)) {
          parkedSinceCheck.set(provider, since);
          return summary;
        }
        parkedSinceCheck.set(provider, 0);
        const dropped = await queue.transact((trx) => setAsideParkedBeyond(trx, provider, keep));
        if (dropped > 0) {
          deps.metrics?.parkedReceiptsDropped(provider, dropped);
          logger.warn({ provider, dropped, max_parked_receipts: keep }, "parked receipts over the provider's bound; the oldest were set aside");
        }
      }
      return summary;
    },

    async rematchAfterSend(trx, tally, records) {
      if (
        !(await anyParkedReceipts(
          trx,
          records.map((r) => r.smsId),
        ))
      )
        return;
      for (const provider of new Set(records.map((r) => r.provider))) {
        const providerMessageIds = records.filter((r) => r.provider === provider).flatMap((r) => r.providerMessageIds);
        if (providerMessageIds.length > 0) reported(await matchParkedReceipts(trx, tally, now(), { provider, providerMessageIds }, observers));
      }
    },
  };
  return intake;
}
