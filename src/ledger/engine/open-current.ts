/**
 * `serve`'s ledger: opened with its background checkpoints, its schema brought up to date, or with `serve
 * --no-migrate` (a `migrate` Job ran first) checked to be, start-up failing with the pending migrations named
 * instead of running them under a liveness probe (the decision: judgeSchema, src/ledger/engine/schema-check.ts). A newer
 * schema (a rollback) is logged once and served. It closes last at shutdown.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Shutdown } from '../../kit/shutdown.js';
import type { Ledger } from './ledger.js';
import { describeKeptLayout, describeMadeLayout, openCheckedLedger } from './schema-check.js';

export async function openCurrentLedger(config: Config['database'], options: { logger: Logger; migrate: boolean }, shutdown: Shutdown): Promise<Ledger> {
  const { logger } = options;
  const mode = options.migrate ? 'migrate' : 'no-migrate';
  const { ledger, notice, partitions, madeLayout, keptLayout } = await openCheckedLedger(config, mode, options.migrate ? 'serve' : 'serve --no-migrate', {
    logger,
    backgroundCheckpoints: { logger },
  });
  if (notice) logger.warn(notice);
  if (madeLayout) {
    const made = describeMadeLayout(config.layout, madeLayout);
    logger[made.asked ? 'info' : 'warn']({ layout: madeLayout }, made.line);
  }
  const kept = keptLayout && describeKeptLayout(config.layout, keptLayout);
  if (kept) logger.info({ layout: keptLayout }, kept);
  if (partitions?.created.length) logger.info({ created: partitions.created }, 'day partitions made');
  if (partitions?.gaveUp) logger.warn({ reason: partitions.gaveUp }, 'day partitions: gave up for now; the next retention pass tries again');
  shutdown.add('ledger', 'closing the ledger', () => ledger.close());
  return ledger;
}
