#!/usr/bin/env node
/**
 * The crm-sms-gateway command: picks a subcommand and wires its parts; nothing else lives here. The package's bin is
 * src/bin.ts, which makes sure a Node new enough runs this file. Exit codes: 0 done, 1 failed (a CommandError's one
 * line: a port in use, a database out of reach, a schema to migrate first), 2 usage, 78 configuration (EX_CONFIG).
 */
import { parseArgs } from 'node:util';
import { CommandError } from './kit/command-error.js';
import { ConfigError, loadConfig } from './config/load.js';
import { describeFinding, findUnsafeSettings } from './config/production-checks.js';
import { readBuildInfo } from './observability/build-info.js';
import { createLogger } from './observability/logger.js';

const OPTIONS = `options:
  -c, --config FILE   configuration file (default: ./config.yaml)
  -h, --help          this text
  -v, --version       the version`;

const USAGE = `usage: crm-sms-gateway <command> [--config FILE]

commands:
  serve               run the HTTP API and the outboxes (migrates the database first, unless --no-migrate)
  migrate             bring the database schema up to date and exit
  flush               post every due conversion, event and credit once, then exit (for cron)
  retention           run one retention pass and exit (for cron)
  partition           PostgreSQL: lay messages and receipts out by day, once, with every instance stopped
  import users FILE   load NDJSON player records into the sql backend

${OPTIONS}

\`crm-sms-gateway <command> --help\` describes a command. Exit codes: 0 done, 1 failed (one line says why),
2 usage, 78 configuration (and, with server.environment production, a setting production refuses; docs/security.md).`;

/** Each command's --help. */
const HELP = {
  serve: `usage: crm-sms-gateway serve [--config FILE] [--no-migrate]

Runs the HTTP API, the conversion, event and credit outboxes, the unknown-timeout sweep and retention, until
SIGTERM or SIGINT. Migrates the database first.

  --no-migrate        leave migrations to a separate \`crm-sms-gateway migrate\` step (a Kubernetes Job, a deploy
                      script): exits 1 naming the pending migrations when the schema is not current
${OPTIONS}

Exits 1 with one line when a port is in use or not allowed (naming server.port or metrics.port) or the database
cannot be reached (naming database.url); 78 for a configuration error.`,
  migrate: `usage: crm-sms-gateway migrate [--config FILE]

Brings the database schema up to date and exits; on stderr, which migration runs (n of m) and for how long. Run it
as its own step before the new version serves. A schema migrated by a newer version is left as it is (exit 0, with a
warning; docs/deployment.md "Rollback").

${OPTIONS}`,
  flush: `usage: crm-sms-gateway flush [--config FILE]

For cron: runs the unknown-timeout sweep, posts every due conversion to crm.webhook_url, sends every due event
(crm.integration) and pushes every due credit (operator.credits.url), one summary line each. Never migrates: a
schema that is not this version's is refused (exit 1, naming \`crm-sms-gateway migrate\`).

${OPTIONS}

Exits 0, 1 when a receiver could not be reached or the schema is refused, 78 for a configuration error.`,
  retention: `usage: crm-sms-gateway retention [--config FILE]

For cron: one retention pass (old final rows deleted, old personal data blanked; docs/retention.md) and one summary
line. Never migrates: a schema that is not this version's is refused (exit 1, naming \`crm-sms-gateway migrate\`).

${OPTIONS}`,
  partition: `usage: crm-sms-gateway partition [--prepare | --unprepare] [--config FILE]

PostgreSQL only: makes messages and receipts tables partitioned by UTC day, so that retention drops a day's tables
instead of deleting their rows (docs/retention.md "How a pass runs"). The rows there now stay in place, in a
default partition, until retention removes them; no message is copied. One way: no version older than this one
runs on the ledger after it (docs/deployment.md "Partitioning by day"). Stop every instance and cron job first: it
refuses while another session is connected to the database. Start them again when it prints that they may start:
what it does after that (the old rows' check validated, the day tables made) needs none stopped. The conversion
took 27.6 s at 5 million messages on 2 cores, nearly all of it what --prepare does beforehand: prepared, 0.04 s.

  --prepare           while the instances serve: build the receipts' indexes and the activities' keys the
                      conversion needs, so that it takes seconds with them stopped; run again after a cut-off run
  --unprepare         take away what --prepare built, leaving the flat tables as they were

${OPTIONS}

Exits 0 when done (or done before), 1 when refused (naming why), 78 for a configuration error.`,
  import: `usage: crm-sms-gateway import users FILE [--config FILE]

Loads NDJSON user records (one PUT /admin/users body per line, user_id included) into the sql backend; bad lines
are reported with their number and skipped. Never migrates: run \`crm-sms-gateway migrate\` first.

${OPTIONS}

Exits 0 when every line loaded, 1 when some were refused or the file cannot be read, 2 for misuse.`,
} as const;

type Command = keyof typeof HELP;
const isCommand = (word: string | undefined): word is Command => word !== undefined && Object.hasOwn(HELP, word);

/** parseArgs' own message, first sentence only ("Unknown option '--frob'"), for one line of usage error. */
function argumentProblem(error: unknown): string | undefined {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) return undefined;
  return (error as Error).message.split(/\. /)[0]!.replace(/\.$/, '');
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        config: { type: 'string', short: 'c', default: 'config.yaml' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        'no-migrate': { type: 'boolean' },
        prepare: { type: 'boolean' },
        unprepare: { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const problem = argumentProblem(error);
    if (!problem) throw error;
    const command = argv.find((a) => !a.startsWith('-'));
    console.error(`crm-sms-gateway: ${problem}\n\n${isCommand(command) ? HELP[command] : USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.version) {
    console.log(`crm-sms-gateway ${readBuildInfo().version} (node ${process.version})`);
    return 0;
  }
  if (values.help) {
    console.log(isCommand(command) ? HELP[command] : USAGE);
    return 0;
  }
  if (!command) {
    console.log(USAGE);
    return 2;
  }
  if (!isCommand(command)) {
    console.error(`crm-sms-gateway: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  const migrate = !values['no-migrate'];
  if (!migrate && command !== 'serve') {
    console.error(`crm-sms-gateway: --no-migrate applies to serve only\n\n${HELP[command]}`);
    return 2;
  }
  if ((values.prepare || values.unprepare) && (command !== 'partition' || (values.prepare && values.unprepare))) {
    console.error(`crm-sms-gateway: --prepare and --unprepare apply to partition only, one at a time\n\n${HELP[command]}`);
    return 2;
  }
  const [, what, file, ...extra] = positionals;
  if (command === 'import' ? what !== 'users' || !file || extra.length > 0 : positionals.length > 1) {
    console.error(`crm-sms-gateway: unexpected ${command === 'import' ? 'arguments' : `argument "${positionals[1]}"`}\n\n${HELP[command]}`);
    return 2;
  }
  const config = await loadConfig(values.config!);
  // Production refuses what is unsafe; development says it once, at the start (src/config/production-checks.ts).
  // import users serves nobody: of those, only a database.url that fell back to a default matters to it.
  const findings = findUnsafeSettings(config).filter((f) => command !== 'import' || f.key === 'database.url');
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
      const gateway = await starting;
      // SIGHUP reads the file again: its routes' rules and `routing` section replace the ones in force between two
      // messages (requests in flight keep the rules they were decided by); a file that does not load, or that changes
      // more than routing, is refused and the old configuration kept.
      process.on('SIGHUP', () => {
        loadConfig(values.config!).then(
          (next) => {
            const result = gateway.reloadRouting(next);
            if (result.ok) logger.info({ changed: result.changed }, 'configuration reloaded: routing in force');
            else logger.error({ reason: result.error }, 'configuration reload refused: the old one stays');
          },
          (error: unknown) =>
            logger.error({ reason: error instanceof ConfigError ? error.message : String(error) }, 'configuration reload refused: the old one stays'),
        );
      });
      // The start-up's garbage, collected once before the first burst (src/kit/heap.ts).
      const { compactHeap } = await import('./kit/heap.js');
      logger.debug({ pause_ms: Math.round(compactHeap()) }, 'start-up heap compacted');
      return new Promise<number>(() => {}); // runs until a signal
    }
    case 'migrate': {
      warnOnce((line) => console.error(`warning: ${line}`));
      // Each command loads only its own modules: cron runs flush every minute, and start-up time adds up.
      const { describeKeptLayout, describeMadeLayout, openCheckedLedger } = await import('./ledger/engine/schema-check.js');
      const { reportMigrationProgress } = await import('./observability/migrate-progress.js');
      const progress = reportMigrationProgress(process.stderr);
      try {
        const { ledger, applied, notice, partitions, madeLayout, keptLayout } = await openCheckedLedger(config.database, 'migrate', 'migrate', {
          onStep: progress.step,
        });
        progress.stop();
        if (notice) console.error(`warning: ${notice}`);
        if (madeLayout) {
          const made = describeMadeLayout(config.database.layout, madeLayout);
          if (made.asked) console.log(made.line);
          else console.error(`warning: ${made.line}`);
        }
        const kept = keptLayout && describeKeptLayout(config.database.layout, keptLayout);
        if (kept) console.log(kept);
        if (partitions?.created.length) console.log(`made ${partitions.created.length} day partition(s): ${partitions.created.join(', ')}`);
        if (partitions?.gaveUp) console.error(`warning: day partitions: gave up for now (${partitions.gaveUp}); serve and retention try again`);
        console.log(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'database schema is up to date');
        await ledger.close();
      } finally {
        progress.stop();
      }
      return 0;
    }
    case 'flush':
      warnOnce((line) => console.error(`warning: ${line}`));
      return (await import('./commands/flush.js')).runFlush(config, process.stdout);
    case 'retention':
      warnOnce((line) => console.error(`warning: ${line}`));
      return (await import('./commands/retention.js')).runRetentionCommand(config, process.stdout);
    case 'partition':
      return (await import('./commands/partition.js')).runPartition(
        config,
        { out: process.stdout, err: process.stderr },
        values.prepare ? 'prepare' : values.unprepare ? 'unprepare' : 'convert',
      );
    case 'import': {
      const { runImportUsers } = await import('./commands/import-users.js');
      return runImportUsers(config, file!, { out: process.stdout, err: process.stderr });
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    // A ConfigError or a CommandError is the whole story in one line; anything else is a bug and keeps its stack.
    if (error instanceof ConfigError) console.error(error.message);
    else if (error instanceof CommandError) console.error(`crm-sms-gateway: ${error.message}`);
    else console.error(`crm-sms-gateway: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(error instanceof ConfigError ? 78 : error instanceof CommandError ? error.exitCode : 1);
  },
);
