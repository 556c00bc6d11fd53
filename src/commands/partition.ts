/**
 * `crm-sms-gateway partition`, PostgreSQL: lays messages and receipts out by UTC day (src/ledger/engine/partitions.ts), once,
 * with every instance stopped. Refuses on SQLite, on a schema that is not this version's, and while any other session
 * is connected to the database.
 */
import type { Writable } from 'node:stream';
import type { Config } from '../config/schema.js';
import { CommandError } from '../kit/command-error.js';
import { openCheckedLedger } from '../ledger/engine/schema-check.js';
import { ensureDayPartitions, otherSessions, partitionByDay } from '../ledger/engine/partitions.js';

export async function runPartition(config: Readonly<Config>, out: Writable, now: () => number = Date.now): Promise<number> {
  if (config.database.url.startsWith('sqlite:')) {
    throw new CommandError('partition: the SQLite ledger has no partitions; retention deletes its rows a day at a time (docs/retention.md)');
  }
  // One connection: every other session on the database is someone else's.
  const { ledger } = await openCheckedLedger({ ...config.database, pool_size: 1 }, 'job', 'partition');
  try {
    if (!ledger.flags.partitionsByDay) {
      const others = await otherSessions(ledger.db);
      if (others.length > 0) {
        throw new CommandError(
          `partition: ${others.length} other session(s) connected to the database (${[...new Set(others)].join(', ')}): stop every instance, and the cron jobs, first`,
        );
      }
      const started = performance.now();
      await partitionByDay(ledger.db, now());
      out.write(`partition: messages and receipts partitioned by day in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    } else {
      out.write('partition: messages and receipts are partitioned by day already\n');
    }
    // The check that lets a day's table be made without scanning the old rows is validated here, while nothing writes.
    const { created, gaveUp } = await ensureDayPartitions(ledger.db, now());
    out.write(`partition: made ${created.length} day table(s)${created.length ? `: ${created.join(', ')}` : ''}\n`);
    if (gaveUp) throw new CommandError(`partition: day tables: gave up for now (${gaveUp}); serve and retention try again`);
    return 0;
  } finally {
    await ledger.close();
  }
}
