/**
 * `serve`'s ledger: opened with its background checkpoints, its schema brought up to date, or with `serve
 * --no-migrate` (a `migrate` Job ran first) checked to be, start-up failing with the pending migrations named
 * instead of running them under a liveness probe. It closes last at shutdown.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Shutdown } from '../kit/shutdown.js';
import { listPendingMigrations, migrateToLatest, openLedger, type Ledger } from './db.js';

export async function openCurrentLedger(config: Config['database'], options: { logger: Logger; migrate: boolean }, shutdown: Shutdown): Promise<Ledger> {
  const { logger } = options;
  const ledger = openLedger(config, { logger, backgroundCheckpoints: { logger } });
  if (options.migrate) {
    await migrateToLatest(ledger.db);
  } else {
    const pending = await listPendingMigrations(ledger.db);
    if (pending.length > 0) {
      await ledger.close();
      throw new Error(
        `serve --no-migrate: the database schema is not up to date (${pending.length} pending: ${pending.join(', ')}); run \`crm-sms-gateway migrate\` first`,
      );
    }
  }
  shutdown.add('ledger', 'closing the ledger', () => ledger.close());
  return ledger;
}
