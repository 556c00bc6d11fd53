#!/usr/bin/env node
/** The crm-sms-gateway command: picks a subcommand and wires its parts; nothing else lives here. */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.js';
import { runSweep } from './delivery/sweep.js';
import { createWebhookClient } from './delivery/webhook.js';
import { postDueConversions } from './delivery/worker.js';
import { startGateway } from './gateway.js';
import { countOutboxBacklog } from './ledger/conversions.js';
import { migrateToLatest, openLedger } from './ledger/db.js';
import { createLogger } from './observability/logger.js';
import { runImportUsers } from './operator/import-users.js';

const USAGE = `usage: crm-sms-gateway <command> [--config FILE]

commands:
  serve     run the HTTP API (migrates the database first)
  migrate   bring the database schema up to date and exit
  flush     post every due conversion to the CRM and run the unknown-timeout sweep (for cron);
            exits 0, or 1 when the webhook could not be reached
  import users FILE
            load NDJSON user records (one per line, as PUT /admin/users takes them) into the sql backend

options:
  --config FILE   configuration file (default: ./config.yaml)`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c', default: 'config.yaml' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
  });
  const command = positionals[0];
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  const config = await loadConfig(values.config!);

  switch (command) {
    case 'serve': {
      const logger = createLogger(config.log.level);
      const gateway = await startGateway(config, { logger });
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'shutting down');
        gateway.close().then(
          () => process.exit(0),
          (error) => {
            logger.error({ err: error }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      return new Promise<number>(() => {}); // runs until a signal
    }
    case 'migrate': {
      const ledger = openLedger(config.database);
      try {
        const applied = await migrateToLatest(ledger.db);
        console.log(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'database schema is up to date');
      } finally {
        await ledger.close();
      }
      return 0;
    }
    case 'flush': {
      if (!config.crm.webhook_url) throw new ConfigError('crm.webhook_url: required by flush');
      const logger = createLogger(config.log.level === 'info' ? 'warn' : config.log.level);
      const ledger = openLedger(config.database);
      const webhook = createWebhookClient(config.crm);
      try {
        await migrateToLatest(ledger.db);
        const deps = { db: ledger.db, flags: ledger.flags, webhook, delivery: config.delivery, logger, now: Date.now };
        const sweep = await runSweep(ledger.db, Date.now(), config.delivery.unknown_after);
        const totals = { posted: 0, failed: 0, dead: 0 };
        let reachable = true;
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
        console.log(
          `flush: posted=${totals.posted} failed=${totals.failed} dead=${totals.dead} left=${backlog.due + backlog.retrying} ` +
            `dead_total=${backlog.dead} unknown_marked=${sweep.unknown}${reachable ? '' : ' (webhook unreachable)'}`,
        );
        return reachable ? 0 : 1;
      } finally {
        await webhook.close();
        await ledger.close();
      }
    }
    case 'import': {
      const [, what, file] = positionals;
      if (what !== 'users' || !file) {
        console.error(`usage: crm-sms-gateway import users FILE [--config FILE]\n\n${USAGE}`);
        return 2;
      }
      return runImportUsers(config, file, { out: process.stdout, err: process.stderr });
    }
    default:
      console.error(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof ConfigError ? error.message : `crm-sms-gateway: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(error instanceof ConfigError ? 78 : 1);
  },
);
