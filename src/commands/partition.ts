/**
 * `crm-sms-gateway partition`, PostgreSQL: lays messages and receipts out by UTC day (src/ledger/engine/partitions.ts), once,
 * with every instance stopped until it says they may start: the validation and the day tables after the conversion
 * need none stopped. Refuses on SQLite, on a schema that is not this version's, and while any other session
 * is connected to the database. `--prepare` builds beforehand, while instances serve, what the conversion would build
 * with them stopped; `--unprepare` takes that away again.
 */
import type { Writable } from 'node:stream';
import type { Config } from '../config/schema.js';
import { CommandError } from '../kit/command-error.js';
import { openCheckedLedger } from '../ledger/engine/schema-check.js';
import {
  ensureDayPartitions,
  otherSessions,
  partitionByDay,
  preparePartitionByDay,
  serverHoldsLayoutByDay,
  unpreparePartitionByDay,
} from '../ledger/engine/partitions.js';

export type PartitionStep = 'convert' | 'prepare' | 'unprepare';

export async function runPartition(
  config: Readonly<Config>,
  { out, err }: { out: Writable; err: Writable },
  step: PartitionStep = 'convert',
  now: () => number = Date.now,
): Promise<number> {
  if (config.database.url.startsWith('sqlite:')) {
    throw new CommandError('partition: the SQLite ledger has no partitions; retention deletes its rows a day at a time (docs/retention.md)');
  }
  // One connection: every other session on the database is someone else's.
  const { ledger } = await openCheckedLedger({ ...config.database, pool_size: 1 }, 'job', 'partition');
  try {
    if (step !== 'unprepare' && !ledger.flags.partitionsByDay && !(await serverHoldsLayoutByDay(ledger.db))) {
      throw new CommandError(`partition: the layout by day needs PostgreSQL 15 or later (the receipts' key is unique nulls not distinct); nothing was changed`);
    }
    if (step !== 'convert') {
      if (ledger.flags.partitionsByDay) throw new CommandError(`partition --${step}: messages and receipts are partitioned by day already`);
      const started = performance.now();
      const result =
        step === 'prepare'
          ? await preparePartitionByDay(ledger.db, (done, ms) => out.write(`partition --prepare: ${done} in ${seconds(ms)} s\n`))
          : await unpreparePartitionByDay(ledger.db);
      if ('gaveUp' in result && result.gaveUp) throw new CommandError(`partition --${step}: gave up (${result.gaveUp}); try again`);
      out.write(
        step === 'prepare'
          ? `partition --prepare: prepared in ${seconds(performance.now() - started)} s; stop every instance and cron job, then run crm-sms-gateway partition\n`
          : 'partition --unprepare: what --prepare built is gone\n',
      );
      return 0;
    }
    if (!ledger.flags.partitionsByDay) {
      const others = await otherSessions(ledger.db);
      if (others.length > 0) {
        throw new CommandError(
          `partition: ${others.length} other session(s) connected to the database (${[...new Set(others)].join(', ')}): stop every instance, and the cron jobs, first`,
        );
      }
      const started = performance.now();
      const { copiedKeys, builtIndexes } = await partitionByDay(ledger.db, now());
      out.write(
        `partition: messages and receipts partitioned by day in ${seconds(performance.now() - started, 2)} s` +
          (copiedKeys === 0 && builtIndexes === 0
            ? ''
            : `, of which ${builtIndexes} index(es) built and ${copiedKeys} activity key(s) copied: partition --prepare does that while sends go on`) +
          '; the instances may start now\n',
      );
    } else {
      out.write('partition: messages and receipts are partitioned by day already\n');
    }
    // The old rows keep today's and tomorrow's sends (partitionByDay), so what follows needs nothing stopped: the
    // check's validation reads both old tables whole (about 0.4 s a million messages from the page cache) under a lock
    // sends do not take, and an instance starting meanwhile gives up waiting for it after 2 s and serves.
    const started = performance.now();
    const { created, gaveUp } = await ensureDayPartitions(ledger.db, now());
    out.write(
      `partition: made ${created.length} day table(s) in ${seconds(performance.now() - started, 2)} s${created.length ? `: ${created.join(', ')}` : ''}\n`,
    );
    // The conversion stands: serve (as it starts) and every retention pass make what is missing, well before the day
    // after tomorrow, when the first send needs a day's table.
    if (gaveUp) err.write(`warning: partition: day tables: gave up for now (${gaveUp}); serve and each retention pass try again\n`);
    return 0;
  } finally {
    await ledger.close();
  }
}

const seconds = (ms: number, digits = 1) => (ms / 1000).toFixed(digits);
