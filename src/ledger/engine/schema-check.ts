/**
 * What each command does with the schema it finds. `serve` migrates (or, with --no-migrate, insists the `migrate`
 * step ran); `flush`, `retention` and `import users` never migrate: a CronJob must not run a long migration under its
 * deadline, nor race the `migrate` Job, so they refuse a schema that is not exactly this version's. A schema newer than
 * this version (a rollback after `migrate` ran forward) does not stop `serve` and `migrate`: migrations add tables,
 * columns and indexes and keep the old ones, so the older code still finds what it uses; they say so in one line
 * (docs/deployment.md "Rollback").
 */
import type { Config } from '../../config/schema.js';
import { describeDatabaseFailure } from './database-failure.js';
import { migrateToLatest, openLedger, readMigrationState, type MigrationState, type MigrationStep } from './db.js';
import type { Ledger, LedgerOptions } from './ledger.js';
import { migrations } from './migrations.js';
import { ensureDayPartitions, type EnsureResult } from './partitions.js';
import { CommandError } from '../../kit/command-error.js';

/** `serve` and `migrate` bring the schema forward; `no-migrate` is `serve --no-migrate`; `job` is flush, retention, import users. */
export type SchemaMode = 'migrate' | 'no-migrate' | 'job';

export interface SchemaVerdict {
  /** Refuse to run, with this line. */
  refuse?: string;
  /** Run, after saying this once. */
  notice?: string;
  /** Apply the pending migrations before running. */
  migrate: boolean;
}

/** `3 pending: a, b, c`; a fresh database has every migration pending, so past three the rest are counted. */
const list = (names: string[], what: string) =>
  `${names.length} ${what}: ${names.slice(0, 3).join(', ')}${names.length > 3 ? ` and ${names.length - 3} more` : ''}`;

/** The decision, pure (test/ledger/schema-check.test.ts holds its table). */
export function judgeSchema(state: MigrationState, mode: SchemaMode, command: string): SchemaVerdict {
  const { pending, unknown } = state;
  const newer =
    unknown.length > 0
      ? `the database schema is newer than this crm-sms-gateway (${list(unknown, `unknown migration${unknown.length > 1 ? 's' : ''}`)}): a newer version migrated it`
      : undefined;
  if (newer && pending.length > 0) {
    return { migrate: false, refuse: `${command}: ${newer}, and it lacks ${list(pending, "of this version's migrations")}; run the newer version` };
  }
  const stale = `${command}: the database schema is not up to date (${list(pending, 'pending')}); run \`crm-sms-gateway migrate\` first`;
  if (mode === 'job') {
    if (newer) return { migrate: false, refuse: `${command}: ${newer}; run the ${command} of that version` };
    return pending.length > 0 ? { migrate: false, refuse: stale } : { migrate: false };
  }
  if (newer) return { migrate: false, notice: `${newer}; running on it as an older version (docs/deployment.md "Rollback")` };
  if (mode === 'no-migrate' && pending.length > 0) return { migrate: false, refuse: stale };
  return { migrate: pending.length > 0 };
}

/**
 * What a process that made a new PostgreSQL ledger says once: the layout it was made with, and whether that is the one
 * `database.layout` asked for (by day asked for on a server older than 15 is made flat). Pure.
 */
export function describeMadeLayout(asked: Config['database']['layout'], made: Config['database']['layout']): { line: string; asked: boolean } {
  if (made === 'by_day') return { asked: true, line: 'new ledger: messages and receipts laid out by day, a table per UTC day that retention drops whole' };
  if (asked === 'flat') return { asked: true, line: 'new ledger: messages and receipts laid out flat (database.layout: flat)' };
  return {
    asked: false,
    line: 'new ledger: messages and receipts laid out flat, not by day: the layout by day needs PostgreSQL 15 or later; retention deletes their rows one by one (docs/deployment.md "Partitioning by day")',
  };
}

/**
 * What a process serving (or migrating) a PostgreSQL ledger that existed says once, where `database.layout` asks for
 * another layout than the ledger's: the key is read only when a ledger is made, and a flat one stays flat until its
 * operator converts it. Undefined where the two agree. Pure.
 */
export function describeKeptLayout(asked: Config['database']['layout'], layout: Config['database']['layout']): string | undefined {
  if (asked === layout) return undefined;
  if (layout === 'by_day') return 'ledger laid out by day: database.layout: flat is read only when a ledger is made';
  return 'ledger laid out flat, not by day as database.layout asks (the key is read only when a ledger is made): retention deletes its messages and receipts row by row; `crm-sms-gateway partition --prepare` while it serves, then `partition` with every instance stopped, lays it out by day (docs/deployment.md "Partitioning by day")';
}

export interface CheckedLedger {
  ledger: Ledger;
  /** The migrations applied now (mode `migrate`). */
  applied: string[];
  /**
   * PostgreSQL, `serve` and `migrate`: the day tables made now (src/ledger/engine/partitions.ts), and why it stopped early if
   * it did (a lock not granted within its timeout: the next retention pass goes on).
   */
  partitions?: EnsureResult;
  /** A line to log once (a newer schema), or undefined. */
  notice?: string;
  /**
   * PostgreSQL, where this process made the ledger (it applied the first migration): the layout it was made with, which
   * is flat where `database.layout` asked for days on a server older than 15.
   */
  madeLayout?: Config['database']['layout'];
  /** PostgreSQL, where the ledger existed: its layout. */
  keptLayout?: Config['database']['layout'];
}

/**
 * Opens the ledger, reads its schema and acts on judgeSchema. A database that cannot be opened or reached, a schema
 * refused and a migration that fails all end in a CommandError: one line naming the key, no stack trace.
 */
export async function openCheckedLedger(
  database: Config['database'],
  mode: SchemaMode,
  command: string,
  options: LedgerOptions & { onStep?: (step: MigrationStep) => void } = {},
): Promise<CheckedLedger> {
  let ledger: Ledger;
  try {
    ledger = openLedger(database, options);
  } catch (error) {
    throw new CommandError(describeDatabaseFailure(database.url, error));
  }
  try {
    let state: MigrationState;
    try {
      state = await readMigrationState(ledger.db);
    } catch (error) {
      throw new CommandError(describeDatabaseFailure(database.url, error));
    }
    const verdict = judgeSchema(state, mode, command);
    if (verdict.refuse) throw new CommandError(verdict.refuse);
    let applied: string[] = [];
    if (verdict.migrate) {
      try {
        applied = await migrateToLatest(ledger.db, { onStep: options.onStep, layout: database.layout });
      } catch (error) {
        throw new CommandError(`${command}: ${(error as Error).message}`);
      }
    }
    // After the migrations' transaction, each table in a short one of its own: the check that lets a day's table be
    // made without scanning the old one is validated here, and the coming days' tables made before anything is sent.
    const partitions = mode === 'job' ? undefined : await ensureDayPartitions(ledger.db, Date.now());
    const made = applied.includes(Object.keys(migrations)[0]!);
    const layout = ledger.flags.partitionsByDay ? 'by_day' : 'flat';
    return {
      ledger,
      applied,
      ...(partitions ? { partitions } : {}),
      ...(verdict.notice ? { notice: verdict.notice } : {}),
      ...(ledger.flags.kind === 'postgres' ? (made ? { madeLayout: layout } : { keptLayout: layout }) : {}),
    };
  } catch (error) {
    await ledger.close().catch(() => {});
    throw error;
  }
}
