/**
 * `crm-sms-gateway flush` for cron: runs the unknown-timeout sweep, posts every due conversion, sends every due
 * real-time event (crm.integration), pushes every due credit to operator.credits.url (sql backend), prints one
 * summary line per outbox. The schema must be current (run `migrate` first). Exit code 0, or 1 when the webhook, the
 * CRM's Integration API or the operator's credits endpoint could not be reached (cron mails or alerts on it). The
 * outboxes are put together as `serve`'s are (src/outboxes.ts).
 */
import type { Writable } from 'node:stream';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { runSweep } from '../delivery/sweep.js';
import { createLogger } from '../observability/logger.js';
import { createTracing } from '../observability/tracing.js';
import type { OutboxKindName } from '../outbox/wake.js';
import { flushableOutboxes } from '../outboxes.js';
import { openCheckedLedger } from '../ledger/engine/schema-check.js';

/** Each kind's summary line: its prefix, the word for rows taken, and what could not be reached. */
const LINES: Record<OutboxKindName, { prefix: string; sent: string; unreachable: string }> = {
  conversions: { prefix: 'flush', sent: 'posted', unreachable: 'webhook unreachable' },
  events: { prefix: 'flush events', sent: 'sent', unreachable: 'CRM unreachable' },
  credits: { prefix: 'flush credits', sent: 'delivered', unreachable: 'operator.credits.url unreachable' },
};

export async function runFlush(config: Readonly<Config>, out: Writable): Promise<number> {
  const logger = createLogger(config.log.level === 'info' ? 'warn' : config.log.level);
  // What cron posts and sends is traced too, linked to its causes (docs/tracing.md); nothing is loaded when off.
  const tracing = await createTracing(config, logger);
  const outboxes = flushableOutboxes(config, tracing);
  const release = async () => {
    await outboxes.close();
    await tracing.shutdown();
  };
  if (!outboxes.any) {
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
    for (const outbox of outboxes.kinds({ db: ledger.db, logger, now: Date.now, tracing })) {
      // Silent messages become delivery_unknown first, so their conversions go out in this flush.
      const sweep = outbox.name === 'conversions' ? await runSweep(ledger.db, Date.now(), config.delivery, {}, config.sms.dispatch_lease) : undefined;
      // Each kind stops where serve's loop would wait (drainOutbox): a receiver that is down is not hammered.
      const drained = await outbox.drain();
      if (!drained.reachable) reachable = false;
      const backlog = await outbox.backlog();
      const line = LINES[outbox.name];
      const counts = Object.entries(backlog.counts ?? {})
        .map(([name, n]) => ` ${name}=${n}`)
        .join('');
      out.write(
        `${line.prefix}: ${line.sent}=${drained.sent} failed=${drained.retrying} dead=${drained.dead} left=${backlog.left}${counts} dead_total=${backlog.dead}` +
          `${sweep ? ` unknown_marked=${sweep.unknown}` : ''}${drained.reachable ? '' : ` (${line.unreachable})`}\n`,
      );
    }
    return reachable ? 0 : 1;
  } finally {
    await release();
    await ledger.close();
  }
}
