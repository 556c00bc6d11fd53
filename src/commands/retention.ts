/** `crm-sms-gateway retention` for cron: one retention pass (src/delivery/retention.ts), one summary line, exit 0. */
import type { Writable } from 'node:stream';
import type { Config } from '../config/schema.js';
import { createLogger } from '../observability/logger.js';
import { createRetention } from '../delivery/retention.js';
import { openCheckedLedger } from '../ledger/engine/schema-check.js';

export async function runRetentionCommand(config: Readonly<Config>, out: Writable): Promise<number> {
  const logger = createLogger(config.log.level === 'info' ? 'warn' : config.log.level);
  // Never migrates: a schema that is not this version's is refused, naming `migrate` (src/ledger/engine/schema-check.ts).
  const { ledger } = await openCheckedLedger(config.database, 'job', 'retention');
  try {
    const { deleted, blanked } = await createRetention({
      db: ledger.db,
      spaceCheckpoints: ledger.spaceCheckpoints,
      settings: config.retention,
      now: Date.now,
      logger,
    }).runPass();
    out.write(
      `retention: deleted messages=${deleted.messages} receipts=${deleted.receipts} events=${deleted.crm_events} inbound=${deleted.inbound_messages} costs=${deleted.costs}` +
        ` blanked messages=${blanked.messages} inbound=${blanked.inbound_messages}\n`,
    );
    return 0;
  } finally {
    await ledger.close();
  }
}
