#!/usr/bin/env -S node --max-semi-space-size=8
// The flag above, also the image's (Dockerfile), for a process started as npx or a shell starts it. V8 sizes the
// young generation from the machine's memory: on a 24 GiB host Node 24 allowed it 2 × 64 MiB and filled it under
// load (113 MiB of a 296 MiB single-mode peak); with 2 × 8 MiB the peak was 194–213 MiB at the same CPU per message.
// The image's --max-old-space-size=384 is not here: it cost single mode 5–40% more CPU per message (bench/README.md
// "Memory"). Flags on this line win over NODE_OPTIONS; `node dist/src/cli.js` reads no first line.
/** The crm-sms-gateway command: picks a subcommand and wires its parts; nothing else lives here. */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.js';
import { describeFinding, findUnsafeSettings } from './config/production-checks.js';
import { createLogger } from './observability/logger.js';

const USAGE = `usage: crm-sms-gateway <command> [--config FILE]

commands:
  serve     run the HTTP API (migrates the database first; with --no-migrate it only checks that the
            schema is current and exits 1 naming the pending migrations when it is not)
  migrate   bring the database schema up to date and exit
  flush     post every due conversion to the CRM and run the unknown-timeout sweep (for cron);
            exits 0, or 1 when the webhook could not be reached
  retention run one retention pass (delete old final rows, blank old personal data; docs/retention.md)
            and print what it removed (for cron, when serve runs with retention.interval set long)

serve, migrate, flush and retention exit 78 when server.environment is production and a setting is unsafe (docs/security.md).
  import users FILE
            load NDJSON user records (one per line, as PUT /admin/users takes them) into the sql backend

options:
  --config FILE   configuration file (default: ./config.yaml)
  --no-migrate    serve only: leave migrations to a separate \`migrate\` step (a Kubernetes Job, a deploy script)`;

const COMMANDS = ['serve', 'migrate', 'flush', 'retention', 'import'];

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c', default: 'config.yaml' }, help: { type: 'boolean', short: 'h' }, 'no-migrate': { type: 'boolean' } },
    allowPositionals: true,
  });
  const command = positionals[0];
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  if (!COMMANDS.includes(command)) {
    console.error(`unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  const migrate = !values['no-migrate'];
  if (!migrate && command !== 'serve') {
    console.error(`--no-migrate applies to serve only\n\n${USAGE}`);
    return 2;
  }
  const config = await loadConfig(values.config!);
  // Production refuses what is unsafe; development says it once, at the start (src/config/production-checks.ts).
  const findings = command === 'import' ? [] : findUnsafeSettings(config);
  const refused = findings.filter((f) => f.severity === 'refuse');
  if (refused.length > 0 && config.server.environment === 'production') {
    console.error(
      `server.environment is production and the configuration is not safe for it:\n${refused.map((f) => `  - ${describeFinding(f)}`).join('\n')}\n` +
        'Fix these keys, or run with server.environment: development (or GATEWAY_ENV=development) to start anyway with warnings.',
    );
    return 78;
  }
  // Every finding is said once at the start: `refuse` ones only get here in development, `warn` ones in any environment.
  const warnOnce = (warn: (line: string) => void) =>
    findings.forEach((f) => warn(f.severity === 'refuse' ? `not safe for production: ${describeFinding(f)}` : `check this setting: ${describeFinding(f)}`));

  switch (command) {
    case 'serve': {
      const logger = createLogger(config.log.level);
      warnOnce((line) => logger.warn(line));
      // Handlers go in before the server starts, so a signal during start-up still ends in an orderly close.
      let stopping = false;
      const { startGateway } = await import('./gateway.js');
      const starting = startGateway(config, { logger, migrate });
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'shutting down');
        starting
          .then((gateway) => gateway.close())
          .then(
            () => process.exit(0),
            (error) => {
              logger.error({ err: error }, 'shutdown failed');
              process.exit(1);
            },
          );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      await starting;
      return new Promise<number>(() => {}); // runs until a signal
    }
    case 'migrate': {
      warnOnce((line) => console.error(`warning: ${line}`));
      // Each command loads only its own modules: cron runs flush every minute, and start-up time adds up.
      const { migrateToLatest, openLedger } = await import('./ledger/db.js');
      const { reportMigrationProgress } = await import('./observability/migrate-progress.js');
      const ledger = openLedger(config.database);
      const progress = reportMigrationProgress(process.stderr);
      try {
        const applied = await migrateToLatest(ledger.db, progress.step);
        progress.stop();
        console.log(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'database schema is up to date');
      } finally {
        progress.stop();
        await ledger.close();
      }
      return 0;
    }
    case 'flush':
      warnOnce((line) => console.error(`warning: ${line}`));
      return (await import('./commands/flush.js')).runFlush(config, process.stdout);
    case 'retention':
      warnOnce((line) => console.error(`warning: ${line}`));
      return (await import('./commands/retention.js')).runRetentionCommand(config, process.stdout);
    case 'import': {
      const [, what, file] = positionals;
      if (what !== 'users' || !file) {
        console.error(`usage: crm-sms-gateway import users FILE [--config FILE]\n\n${USAGE}`);
        return 2;
      }
      const { runImportUsers } = await import('./commands/import-users.js');
      return runImportUsers(config, file, { out: process.stdout, err: process.stderr });
    }
    default:
      return 2; // not reached: the command was checked before loading the config
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof ConfigError ? error.message : `crm-sms-gateway: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(error instanceof ConfigError ? 78 : 1);
  },
);
