/**
 * `crm-sms-gateway flush` for cron: runs the unknown-timeout sweep, posts every due conversion, sends every due
 * real-time event (crm.integration), pushes every due credit to operator.credits.url (sql backend), prints one
 * summary line per outbox. The schema must be current (run `migrate` first). Exit code 0, or 1 when the webhook, the
 * CRM's Integration API or the operator's credits endpoint could not be reached (cron mails or alerts on it). The
 * outboxes are the registry's (src/outboxes.ts), as `serve`'s are; each kind's summary line is its descriptor's.
 */
import type { Writable } from 'node:stream';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { createLogger } from '../observability/logger.js';
import { createTracing } from '../observability/tracing.js';
import type { OutboxDescriptor } from '../outbox/descriptor.js';
import { flushableOutboxes, OUTBOXES } from '../outboxes.js';
import { openCheckedLedger } from '../ledger/engine/schema-check.js';

/** ` name=n` for each count. */
const counted = (counts: Record<string, number> = {}) =>
  Object.entries(counts)
    .map(([name, n]) => ` ${name}=${n}`)
    .join('');

/** `outboxes`: the registry (src/outboxes.ts); a test hands in its own kinds beside it. */
export async function runFlush(config: Readonly<Config>, out: Writable, outboxes: readonly OutboxDescriptor[] = OUTBOXES): Promise<number> {
  const logger = createLogger(config.log.level === 'info' ? 'warn' : config.log.level);
  // What cron posts and sends is traced too, linked to its causes (docs/tracing.md); nothing is loaded when off.
  const tracing = await createTracing(config, logger);
  const flushable = flushableOutboxes(config, { logger, tracing }, outboxes);
  const release = async () => {
    await flushable.close();
    await tracing.shutdown(config.observability.tracing.export_timeout);
  };
  if (!flushable.any) {
    await release();
    throw new ConfigError('crm.webhook_url: required by flush (or crm.integration, to send events, or operator.credits.url, to push credits)');
  }
  // Never migrates: a schema that is not this version's is refused, naming `migrate` (src/ledger/engine/schema-check.ts).
  const { ledger } = await openCheckedLedger(config.database, 'job', 'flush').catch(async (error: unknown) => {
    await release();
    throw error;
  });
  try {
    let reachable = true;
    for (const outbox of flushable.kinds({ db: ledger.db, logger, now: Date.now, tracing })) {
      const before = await outbox.beforeFlush();
      // Each kind stops where serve's loop would wait (drainOutbox): a receiver that is down is not hammered.
      const drained = await outbox.drain();
      if (!drained.reachable) reachable = false;
      const backlog = await outbox.backlog();
      const { line } = outbox;
      out.write(
        `${line.prefix}: ${line.sent}=${drained.sent} failed=${drained.retrying} dead=${drained.dead} left=${backlog.left}${counted(backlog.counts)} dead_total=${backlog.dead}` +
          `${counted(before)}${drained.reachable ? '' : ` (${line.unreachable})`}\n`,
      );
    }
    return reachable ? 0 : 1;
  } finally {
    await release();
    await ledger.close();
  }
}
