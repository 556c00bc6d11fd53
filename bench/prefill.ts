/**
 * npm run bench -- --prefill N --days D --out FILE [--indexes in-place|after] [--providers sandbox:70,twilio:20,smpp:10]
 * npm run bench -- --prefill N --days D --database postgres://…/DB [--partition-by-day]
 *
 * Writes a migrated ledger holding N messages spread over the last D days, each with its receipt, posted conversion,
 * webhook attempt and (player, number) pair (src/ledger/prefill.ts), then exits; prints one JSON line. The file (or
 * database) is a seed: `--seed FILE` (or `--seed DB` with `--database`) starts every bench mode on a copy of it, and
 * `SEED_DB=FILE ../shared/bench/gateway/run.mjs` the peer benchmark. `--partition-by-day` lays the PostgreSQL ledger
 * out as `crm-sms-gateway partition` does before filling it (src/ledger/engine/partitions.ts).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { prefillLedger } from '../src/ledger/prefill.js';

/** The bench's providers (bench/providers.ts), in the shares an operator with a main route and two others might send. */
const DEFAULT_PROVIDERS = 'sandbox:70,twilio:20,smpp:10';

/** Creates the database named by `url` on its server when it does not exist yet. */
async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = target.pathname.slice(1);
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`--database must name a database of lower-case letters, digits and _ (got "${name}")`);
  const server = new URL(url);
  server.pathname = '/postgres';
  const client = new pg.Client({ connectionString: server.toString() });
  await client.connect();
  try {
    const { rows } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (rows.length === 0) await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
}

async function databaseBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string }>('select pg_database_size(current_database()) as bytes');
    return Number(rows[0]!.bytes);
  } finally {
    await client.end();
  }
}

export async function runPrefill(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      prefill: { type: 'string' },
      days: { type: 'string', default: '30' },
      out: { type: 'string' },
      database: { type: 'string' },
      indexes: { type: 'string', default: 'in-place' },
      providers: { type: 'string', default: DEFAULT_PROVIDERS },
      'partition-by-day': { type: 'boolean', default: false },
    },
  });
  const messages = Number(values.prefill);
  const days = Number(values.days);
  if (!Number.isInteger(messages) || messages < 1) throw new Error(`--prefill must be an integer ≥ 1 (got ${values.prefill})`);
  if (!(days > 0)) throw new Error(`--days must be a number > 0 (got ${values.days})`);
  if (values.indexes !== 'in-place' && values.indexes !== 'after') throw new Error(`--indexes must be in-place or after (got ${values.indexes})`);
  if (!values.out === !values.database) throw new Error('--prefill needs one of --out FILE (SQLite) or --database URL (PostgreSQL)');
  if (values['partition-by-day'] && !values.database) throw new Error('--partition-by-day is for PostgreSQL (--database URL)');
  const providers = values.providers.split(',').map((entry): [string, number] => {
    const [name, share] = entry.split(':');
    if (!name || !(Number(share) > 0)) throw new Error(`--providers takes name:share,… (got "${entry}")`);
    return [name, Number(share)];
  });
  let url: string;
  if (values.out) {
    if (existsSync(values.out)) throw new Error(`${values.out} exists: prefill writes a new file`);
    url = `sqlite:${values.out}`;
  } else {
    await ensureDatabase(values.database!);
    url = values.database!;
  }
  const result = await prefillLedger(url, {
    messages,
    days,
    now: Date.now(),
    providers,
    indexes: values.indexes,
    partitionByDay: values['partition-by-day'],
    onProgress: (written) => {
      if (written % 200_000 === 0) process.stderr.write(`prefill: ${written} messages\n`);
    },
  });
  // The file and what SQLite keeps beside it (none once closed in WAL mode, but counted if there is); on PostgreSQL
  // the database's size, analyzed but not vacuumed.
  const bytes = values.out
    ? readdirSync(dirname(values.out))
        .filter((name) => name.startsWith(basename(values.out!)))
        .reduce((sum, name) => sum + statSync(join(dirname(values.out!), name)).size, 0)
    : await databaseBytes(url);
  console.log(
    JSON.stringify({
      bench: 'prefill',
      database: values.out ? 'sqlite' : 'postgres',
      indexes: values.indexes,
      ...(values['partition-by-day'] ? { layout: 'day-partitions' } : {}),
      messages: result.messages,
      days,
      rows: result.rows,
      seconds: Math.round(result.seconds * 10) / 10,
      messages_per_minute: Math.round((result.messages / result.seconds) * 60),
      rows_per_minute: Math.round((result.rows / result.seconds) * 60),
      [values.out ? 'file_bytes' : 'database_bytes']: bytes,
      bytes_per_message: Math.round(bytes / result.messages),
    }),
  );
}
