/**
 * `crm-sms-gateway flush` for cron: runs the unknown-timeout sweep, posts every due conversion, sends every due
 * real-time event (crm.integration), pushes every due credit to operator.credits.url (sql backend), prints one
 * summary line per outbox. The schema must be current (run `migrate` first). Exit code 0, or 1 when the webhook, the CRM's Integration API or the operator's credits
 * endpoint could not be reached (cron mails or alerts on it).
 */
import type { Writable } from 'node:stream';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { createEventTransport } from '../events/create-transport.js';
import { createDestinations } from '../events/destination.js';
import { countOutboxBacklog } from '../ledger/conversions.js';
import { countEventBacklog } from '../ledger/events.js';
import { countCreditBacklog } from '../ledger/credit-delivery.js';
import { createLogger } from '../observability/logger.js';
import { createTracing } from '../observability/tracing.js';
import { runSweep } from '../delivery/sweep.js';
import { createWebhookClient } from '../delivery/webhook.js';
import { flushConversions } from '../delivery/conversion-outbox.js';
import { flushEvents } from '../events/event-outbox.js';
import { flushCredits } from '../operator/credit-outbox.js';
import { openCheckedLedger } from './schema-check.js';

export async function runFlush(config: Readonly<Config>, out: Writable): Promise<number> {
  const transport = createEventTransport(config.crm.integration);
  const creditsUrl = config.operator.backend === 'sql' ? config.operator.credits.url : undefined;
  if (!config.crm.webhook_url && !transport && !creditsUrl)
    throw new ConfigError('crm.webhook_url: required by flush (or crm.integration, to send events, or operator.credits.url, to push credits)');
  const logger = createLogger(config.log.level === 'info' ? 'warn' : config.log.level);
  // Never migrates: a schema that is not this version's is refused, naming `migrate` (src/commands/schema-check.ts).
  const { ledger } = await openCheckedLedger(config.database, 'job', 'flush');
  const webhook = createWebhookClient(config.crm);
  // Conversions posted by cron are traced too, linked to their sends (docs/tracing.md); nothing is loaded when off.
  const tracing = await createTracing(config, logger);
  try {
    let reachable = true;
    if (config.crm.webhook_url) {
      const deps = { db: ledger.db, flags: ledger.flags, webhook, delivery: config.delivery, logger, now: Date.now, tracing };
      const sweep = await runSweep(ledger.db, Date.now(), config.delivery, {}, config.sms.dispatch_lease);
      // Each kind stops where serve's loop would wait (drainOutbox): a receiver that is down is not hammered.
      const posted = await flushConversions(deps);
      if (!posted.reachable) reachable = false;
      const backlog = await countOutboxBacklog(ledger.db);
      out.write(
        `flush: posted=${posted.sent} failed=${posted.retrying} dead=${posted.dead} left=${backlog.due + backlog.retrying} ` +
          `dead_total=${backlog.dead} unknown_marked=${sweep.unknown}${posted.reachable ? '' : ' (webhook unreachable)'}\n`,
      );
    }
    if (transport) {
      const sent = await flushEvents({
        db: ledger.db,
        flags: ledger.flags,
        transport,
        destinations: createDestinations(config.crm.integration),
        relay: config.relay,
        logger,
        now: Date.now,
      });
      if (!sent.reachable) reachable = false;
      const backlog = await countEventBacklog(ledger.db);
      out.write(
        `flush events: sent=${sent.sent} failed=${sent.retrying} dead=${sent.dead} left=${backlog.unsent} not_routed=${backlog.notRouted} dead_total=${backlog.dead}` +
          `${sent.reachable ? '' : ' (CRM unreachable)'}\n`,
      );
    }
    if (creditsUrl) {
      const deps = { db: ledger.db, flags: ledger.flags, credits: { ...config.operator.credits, url: creditsUrl }, logger, now: Date.now };
      const delivered = await flushCredits(deps);
      if (!delivered.reachable) reachable = false;
      const backlog = await countCreditBacklog(ledger.db);
      out.write(
        `flush credits: delivered=${delivered.sent} failed=${delivered.retrying} dead=${delivered.dead} left=${backlog.due} dead_total=${backlog.dead}` +
          `${delivered.reachable ? '' : ' (operator.credits.url unreachable)'}\n`,
      );
    }
    return reachable ? 0 : 1;
  } finally {
    await tracing.shutdown();
    await transport?.close();
    await webhook.close();
    await ledger.close();
  }
}
