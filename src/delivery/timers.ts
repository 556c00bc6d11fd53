/**
 * `serve`'s timers of the delivery area: the sweep every delivery.sweep_interval (silent messages become
 * delivery_unknown, parked receipts are matched again, providers are asked about lost sends: sweep.ts), a retention
 * pass every retention.interval (retention.ts), and on SQLite the move of the numbers' recent entries
 * (number-entries.ts). All stop first at shutdown.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { SmsProvider } from '../../providers/types.js';
import type { Config } from '../config/schema.js';
import type { Shutdown } from '../kit/shutdown.js';
import type { Database } from '../ledger/schema.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { Wake } from '../outbox/wake.js';
import { lookupOptionsOf } from './lookups.js';
import type { CostBook } from '../costs/cost-book.js';
import { startNumberEntryMoves } from './number-entries.js';
import { createRetention, type RetentionResult } from './retention.js';
import { runSweep, type SweepResult } from './sweep.js';

export interface DeliveryTimerDeps {
  db: Kysely<Database>;
  /** Ledger.spaceCheckpoints, for the retention pass. */
  spaceCheckpoints?: (walBytes: number) => () => void;
  /** Whether sends (and other grouped writes) wait for the ledger's writer: retention and the number entries' move give way to them. */
  writesWaiting?: () => boolean;
  now: () => number;
  logger: Logger;
  metrics: GatewayMetrics;
  providers: readonly SmsProvider[];
  /** The conversions a sweep queued (delivery_unknown, receipts matched at last) go out at once. */
  wake: Wake;
  /** Receipts the sweep applies count deliveries in the cost rollup (src/costs/charges.ts). */
  costs?: CostBook;
}

export interface DeliveryTimers {
  sweep(): Promise<SweepResult>;
  retention(): Promise<RetentionResult>;
}

export function startDeliveryTimers(config: Readonly<Config>, deps: DeliveryTimerDeps, shutdown: Shutdown): DeliveryTimers {
  const { db, now, logger, metrics } = deps;
  const lookupOptions = lookupOptionsOf(config, deps.providers);
  const sweep = async () => {
    const result = await runSweep(db, now(), config.delivery, { metrics, logger, costs: deps.costs }, config.sms.dispatch_lease, lookupOptions);
    if (result.unknown + result.rematched > 0) deps.wake('conversions');
    return result;
  };
  const sweepTimer = setInterval(() => {
    sweep().catch((error: unknown) => logger.error({ err: error }, 'sweep failed'));
  }, config.delivery.sweep_interval);
  sweepTimer.unref();
  // Old rows go off the request path, a small transaction at a time (retention.ts).
  const retention = createRetention({
    db,
    spaceCheckpoints: deps.spaceCheckpoints,
    writesWaiting: deps.writesWaiting,
    settings: config.retention,
    now,
    metrics,
    logger,
  });
  const retentionTimer = setInterval(() => {
    retention.runPass().catch((error: unknown) => logger.error({ err: error }, 'retention pass failed'));
  }, config.retention.interval);
  retentionTimer.unref();
  const entryMoves = startNumberEntryMoves({ db, logger, now, writesWaiting: deps.writesWaiting });
  shutdown.add('sends', "stopping the sweep, retention and number entries' timers", async () => {
    clearInterval(sweepTimer);
    clearInterval(retentionTimer);
    await entryMoves.stop();
  });
  return { sweep, retention: () => retention.runPass() };
}
