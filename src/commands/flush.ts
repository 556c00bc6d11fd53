/**
 * `crm-sms-gateway flush` for cron: runs the unknown-timeout sweep, posts every due conversion, sends every due
 * real-time event (crm.integration), pushes every due credit to operator.credits.url (sql backend), prints one
 * summary line per outbox. Exit code 0, or 1 when the webhook, the CRM's Integration API or the operator's credits
 * endpoint could not be reached (cron mails or alerts on it).
 */
import type { Writable } from 'node:stream';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { createEventTransport } from '../events/create-transport.js';
import { createDestinations } from '../events/destination.js';
import { flushEvents } from '../events/flush.js';
import { countOutboxBacklog } from '../ledger/conversions.js';
import { countCreditBacklog } from '../ledger/credit-delivery.js';
import { migrateToLatest, openLedger } from '../ledger/db.js';
import { createLogger } from '../observability/logger.js';
import { createTracing } from '../observability/tracing.js';
import { runSweep } from '../delivery/sweep.js';
import { createWebhookClient } from '../delivery/webhook.js';
import { postDueConversions } from '../delivery/conversion-outbox.js';
import { deliverDueCredits } from '../operator/credit-outbox.js';

export async function runFlush(config: Readonly<Config>, out: Writable): Promise<number> {
  const transport = createEventTransport(config.crm.integration);
  const creditsUrl = config.operator.backend === 'sql' ? config.operator.credits.url : undefined;
  if (!config.crm.webhook_url && !transport && !creditsUrl)
    throw new ConfigError('crm.webhook_url: required by flush (or crm.integration, to send events, or operator.credits.url, to push credits)');
  const logger = createLogger(config.log.level === 'info' ? 'warn' : config.log.level);
  const ledger = openLedger(config.database);
  const webhook = createWebhookClient(config.crm);
  // Conversions posted by cron join their messages' traces too (docs/tracing.md); nothing is loaded when off.
  const tracing = await createTracing(config.observability.tracing, logger);
  try {
    await migrateToLatest(ledger.db);
    let reachable = true;
    if (config.crm.webhook_url) {
      const deps = { db: ledger.db, flags: ledger.flags, webhook, delivery: config.delivery, logger, now: Date.now, tracing };
      const sweep = await runSweep(ledger.db, Date.now(), config.delivery, {}, config.sms.dispatch_lease);
      const totals = { posted: 0, failed: 0, dead: 0 };
      // Stop at the first failed post: the rows are backed off, and hammering a CRM that is down helps nobody.
      for (;;) {
        const round = await postDueConversions(deps);
        totals.posted += round.posted;
        totals.failed += round.failed;
        totals.dead += round.dead;
        if (!round.ok) reachable = false;
        if (round.claimed === 0 || !round.ok) break;
      }
      const backlog = await countOutboxBacklog(ledger.db);
      out.write(
        `flush: posted=${totals.posted} failed=${totals.failed} dead=${totals.dead} left=${backlog.due + backlog.retrying} ` +
          `dead_total=${backlog.dead} unknown_marked=${sweep.unknown}${reachable ? '' : ' (webhook unreachable)'}\n`,
      );
    }
    if (transport) {
      const events = await flushEvents({
        db: ledger.db,
        flags: ledger.flags,
        transport,
        destinations: createDestinations(config.crm.integration),
        relay: config.relay,
        logger,
        now: Date.now,
      });
      out.write(`${events.line}\n`);
      if (!events.reachable) reachable = false;
    }
    if (creditsUrl) {
      const deps = { db: ledger.db, flags: ledger.flags, credits: { ...config.operator.credits, url: creditsUrl }, logger, now: Date.now };
      const totals = { delivered: 0, failed: 0, dead: 0 };
      // As above: stop at the first round the operator's endpoint refused; those credits are backed off.
      for (;;) {
        const round = await deliverDueCredits(deps);
        totals.delivered += round.delivered;
        totals.failed += round.failed;
        totals.dead += round.dead;
        if (round.failed > 0) reachable = false;
        if (round.claimed === 0 || round.failed > 0) break;
      }
      const backlog = await countCreditBacklog(ledger.db);
      out.write(
        `flush credits: delivered=${totals.delivered} failed=${totals.failed} dead=${totals.dead} left=${backlog.due} dead_total=${backlog.dead}` +
          `${reachable ? '' : ' (operator.credits.url unreachable)'}\n`,
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
