/**
 * PostgreSQL's day partitions (DialectFlags.partitionsByDay), the layout a new ledger is made with (layOutNewLedger) and
 * `crm-sms-gateway partition` converts a flat one to (partitionByDay): messages and receipts are each partitioned by
 * range of sms_id, one table per UTC day, with the table from before the conversion as the default partition. The
 * conversion outbox and its attempts are not: their claim reads the due rows of every day.
 * A UUIDv7 starts with its Unix milliseconds, so a day's sms_ids lie between two fixed strings (dayBound). The default
 * partition holds the sms_ids before the day its check constraint names (`<t>_legacy_before`); from that day on every
 * row needs its day's table, so the tables are made a week ahead, and retention drops them (src/ledger/retention.ts).
 */
import { sql, type Kysely } from 'kysely';
import { dialectFlagsOf } from './flags.js';
import type { Database } from '../schema.js';

export const DAY_MS = 86_400_000;

/** The partitioned tables, dependents first: the order a day's tables are dropped in. */
export const PARTITIONED_TABLES = ['receipts', 'messages'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** Days made ahead of today: a week of sends never waits for a table, whatever happens to the process making them. */
export const DAYS_AHEAD = 7;

/** The lowest sms_id of UTC day `day` (days since the epoch): its 48-bit milliseconds in hex, the rest zero. */
export function dayBound(day: number): string {
  const hex = (day * DAY_MS).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The UTC day an sms_id bound (or any sms_id) falls in. */
export function dayOfSmsId(smsId: string): number {
  return Math.floor(Number.parseInt(smsId.slice(0, 8) + smsId.slice(9, 13), 16) / DAY_MS);
}

/**
 * The whole days, as [from, to) bounds, from the first to the last of these sms_ids' days. A predicate on them prunes
 * to those days' tables (or to the default partition, for days before the conversion) with two values, where an IN
 * list of the ids costs the planner a step for each. Undefined when an id is not of the shape a day is read from
 * (lowercase hex up to its second dash, as every sms_id this gateway makes), or when there is none: then only the ids
 * themselves say where they are.
 */
export function dayRangeOf(smsIds: readonly string[]): [string, string] | undefined {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const id of smsIds) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-/.test(id)) return undefined;
    const day = dayOfSmsId(id);
    first = Math.min(first, day);
    last = Math.max(last, day);
  }
  return smsIds.length === 0 ? undefined : [dayBound(first), dayBound(last + 1)];
}

/** `<table>_dYYYYMMDD`. */
export function partitionName(table: PartitionedTable, day: number): string {
  return `${table}_d${new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The table and day of a day partition's name; undefined for any other name (the default partition's, say). */
export function parsePartitionName(name: string): { table: PartitionedTable; day: number } | undefined {
  const match = /^(.+)_d(\d{4})(\d{2})(\d{2})$/.exec(name);
  if (!match) return undefined;
  const table = PARTITIONED_TABLES.find((t) => t === match[1]);
  if (table === undefined) return undefined;
  const time = Date.UTC(Number(match[2]), Number(match[3]) - 1, Number(match[4]));
  return Number.isNaN(time) ? undefined : { table, day: time / DAY_MS };
}

export interface PartitionPlan {
  /** Tables to make, each day's in PARTITIONED_TABLES order reversed (messages first). */
  create: Array<{ table: PartitionedTable; day: number }>;
  /** Days whose tables may go (each still checked for messages not final: dropOldDay), oldest first. */
  drop: number[];
}

/**
 * Which day tables to make and which days may go. `legacyEnd`: the first day the default partition does not hold. Days
 * are made from today (or legacyEnd, if later) to today + `ahead`, never before: a day dropped by retention is not made
 * again, nor one the default partitions hold (from `legacyFrom` on). A day may go once it ended before `cutoff` (epoch ms; undefined: none goes). Pure.
 */
export function planDayPartitions(input: {
  existing: readonly string[];
  legacyEnd: number;
  legacyFrom?: number;
  today: number;
  ahead: number;
  cutoff?: number;
  /** The first day to make even inside the default partition's days (a prefill's empty ledger: bench/prefill.ts). */
  since?: number;
}): PartitionPlan {
  const have = new Set(input.existing);
  const create: PartitionPlan['create'] = [];
  const last = Math.min(input.today + input.ahead, (input.legacyFrom ?? Number.POSITIVE_INFINITY) - 1);
  for (let day = input.since ?? Math.max(input.legacyEnd, input.today); day <= last; day++) {
    for (const table of [...PARTITIONED_TABLES].reverse()) if (!have.has(partitionName(table, day))) create.push({ table, day });
  }
  const days = new Set<number>();
  if (input.cutoff !== undefined) {
    for (const name of input.existing) {
      const parsed = parsePartitionName(name);
      if (parsed && (parsed.day + 1) * DAY_MS <= input.cutoff) days.add(parsed.day);
    }
  }
  return { create, drop: [...days].sort((a, b) => a - b) };
}

/**
 * The first day, from today (or from `legacyEnd`, the first day the default partition does not hold, if later), that
 * has no `table` day table: sends into that day fail, so the layout's tables reach up to it. Pure.
 */
export function firstDayWithout(existing: readonly string[], table: PartitionedTable, legacyEnd: number, today: number): number {
  const have = new Set(existing);
  let day = Math.max(today, legacyEnd);
  while (have.has(partitionName(table, day))) day++;
  return day;
}

export interface PartitionState {
  /** The names of the two tables' day partitions. */
  existing: string[];
  /** The first day the default partitions do not hold (their check constraints' first bound). */
  legacyEnd: number;
  /** The first day the default partitions hold again (ten years after legacyEnd): no table is made from it on. */
  legacyFrom: number;
  /** Whether every legacy check constraint is validated (then a new day's table is made without scanning the default). */
  validated: boolean;
}

/** The day partitions and the legacy bound; undefined where the tables are not partitioned (SQLite, or not migrated yet). */
export async function readPartitionState(db: Kysely<Database>): Promise<PartitionState | undefined> {
  if (!dialectFlagsOf(db).partitionsByDay) return undefined;
  const checks = await sql<{ conname: string; def: string; convalidated: boolean }>`
    select conname, pg_get_constraintdef(oid) as def, convalidated from pg_constraint
    where conname in ('messages_legacy_before', 'receipts_legacy_before')`.execute(db);
  const bound = checks.rows.find((r) => r.conname === 'messages_legacy_before');
  if (!bound) return undefined;
  const literals = [...bound.def.matchAll(/'([0-9a-f-]{36})'/g)].map((m) => m[1]!);
  if (literals.length !== 2) throw new Error(`messages_legacy_before: not two sms_id bounds in ${bound.def}`);
  const children = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname in ('messages', 'receipts') and p.relkind = 'p'`.execute(db);
  return {
    existing: children.rows.map((r) => r.name).filter((name) => parsePartitionName(name) !== undefined),
    legacyEnd: dayOfSmsId(literals[0]!),
    legacyFrom: dayOfSmsId(literals[1]!),
    validated: checks.rows.length === PARTITIONED_TABLES.length && checks.rows.every((r) => r.convalidated),
  };
}

/**
 * How far each table's day tables reach (epoch ms: the start of the first day without one, firstDayWithout), for the
 * gauge an alert watches (src/observability/metrics.ts); undefined where the ledger is not partitioned by day.
 */
export async function readDayTablesEnd(db: Kysely<Database>, now: number): Promise<Record<PartitionedTable, number> | undefined> {
  const state = await readPartitionState(db);
  if (!state) return undefined;
  const today = Math.floor(now / DAY_MS);
  const end = (table: PartitionedTable) => firstDayWithout(state.existing, table, state.legacyEnd, today) * DAY_MS;
  return { messages: end('messages'), receipts: end('receipts') };
}

/**
 * Runs `ddl` in a transaction of its own that waits at most `lock_timeout` for its locks: a DDL statement on a parent
 * waits for every transaction using it, and every send that comes after queues behind it while it waits. Answers false
 * when the lock was not granted in time (nothing changed); other errors are thrown.
 */
export async function withShortLock(db: Kysely<Database>, ddl: (trx: Kysely<Database>) => Promise<void>, lockTimeout = '2s'): Promise<boolean> {
  try {
    await db.transaction().execute(async (trx) => {
      await sql`select set_config('lock_timeout', ${lockTimeout}, true)`.execute(trx);
      await ddl(trx);
    });
    return true;
  } catch (error) {
    // 55P03 lock_not_available: the lock timeout.
    if ((error as { code?: string }).code === '55P03') return false;
    throw error;
  }
}

/**
 * The day's indexes led by the day keep no statistics on it, as the parent's (migration 2026-11-29-70-time-keys): a
 * partition's index does not inherit the setting.
 */
async function dropDayStatistics(trx: Kysely<Database>, table: string): Promise<void> {
  const indexes = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_index x on x.indexrelid = c.oid
    where i.inhparent in ('messages_recipient_time'::regclass, 'messages_provider_id_only'::regclass) and x.indrelid = ${table}::regclass`.execute(trx);
  for (const { name } of indexes.rows) await sql`alter index ${sql.table(name)} alter column 1 set statistics 0`.execute(trx);
}

export interface EnsureResult {
  created: string[];
  /** Set when a lock was not granted or a validation did not finish: a later call does the rest. */
  gaveUp?: string;
}

/**
 * Validates the legacy check constraints once (a scan of each default partition that takes only SHARE UPDATE
 * EXCLUSIVE, so sends go on), then makes the day tables missing from the legacy bound (or today) up to today + `ahead`.
 * Each statement runs in its own short transaction (withShortLock); on a lock not granted it stops and says so. Called
 * after migrating, when `serve` starts, and by every retention pass. Does nothing on SQLite or before the migration.
 */
export async function ensureDayPartitions(db: Kysely<Database>, now: number, ahead = DAYS_AHEAD, since?: number): Promise<EnsureResult> {
  const state = await readPartitionState(db);
  if (!state) return { created: [] };
  if (!state.validated) {
    for (const table of PARTITIONED_TABLES) {
      const done = await withShortLock(db, async (trx) => {
        // Only a scan: a validated constraint is one PostgreSQL can use to know the default holds none of a new day's rows.
        await sql`alter table ${sql.table(`${table}_legacy`)} validate constraint ${sql.id(`${table}_legacy_before`)}`.execute(trx);
      });
      if (!done) return { created: [], gaveUp: `${table}_legacy: validating ${table}_legacy_before` };
    }
  }
  const plan = planDayPartitions({ ...state, today: Math.floor(now / DAY_MS), ahead, since });
  const created: string[] = [];
  for (const { table, day } of plan.create) {
    const name = partitionName(table, day);
    const done = await withShortLock(db, (trx) => createDayTable(trx, table, day));
    if (!done) return { created, gaveUp: `${name}: lock on ${table} not granted` };
    created.push(name);
  }
  return { created };
}

async function createDayTable(trx: Kysely<Database>, table: PartitionedTable, day: number): Promise<void> {
  const name = partitionName(table, day);
  await sql`create table ${sql.table(name)} partition of ${sql.table(table)}
    for values from (${sql.lit(dayBound(day))}) to (${sql.lit(dayBound(day + 1))})`.execute(trx);
  if (table === 'messages') await dropDayStatistics(trx, name);
}

/**
 * `crm-sms-gateway partition` (src/commands/partition.ts), PostgreSQL: makes messages and receipts partitioned by UTC
 * day of their sms_id, so retention drops a day's tables instead of deleting their rows one by one (docs/retention.md
 * "Day partitions"). The outbox of conversions and its attempts stay whole: its claim reads the due rows of every day,
 * and planned over every day's table it cost more than it saved (bench/README.md "Day partitions on PostgreSQL").
 *
 * One transaction, holding both tables for its length: every instance is stopped first (the command checks), and an
 * older version cannot run on the result (its `on conflict (activity_key)` names a key the parent cannot hold). The
 * default partitions keep the sms_ids before the day after tomorrow, so the messages of the hours until
 * ensureDayPartitions makes the day tables still have a table; their check is added NOT VALID, not scanning the old
 * rows in this transaction, and ensureDayPartitions validates it outside it.
 */
export async function partitionByDay(db: Kysely<Database>, now: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // Waits at most 5 s for each lock: one not granted means something still uses the tables (the command refuses first
    // while another connection is open, but a session may open between that check and this).
    await sql`select set_config('lock_timeout', '5s', true)`.execute(trx);
    await convertTables(trx, Math.floor(now / DAY_MS) + 2, false);
  });
  // This ledger's statements take the new layout from now on (another process reads it when it first connects).
  dialectFlagsOf(db).partitionsByDay = true;
}

/**
 * A new ledger's layout by day, in the transaction of its first migrations (migrateToLatest, db.ts): the tables are
 * converted as `partition` converts them, empty, with the default partitions holding only the sms_ids before today (a
 * clock behind, a receipt's foreign text), their checks valid at once, and the week's day tables made here, so the
 * first message has its day's table whatever runs after. The caller reads the flag again once this commits.
 */
export async function layOutNewLedger(trx: Kysely<Database>, now: number): Promise<void> {
  const today = Math.floor(now / DAY_MS);
  await convertTables(trx, today, true);
  const plan = planDayPartitions({ existing: [], legacyEnd: today, today, ahead: DAYS_AHEAD });
  for (const { table, day } of plan.create) await createDayTable(trx, table, day);
}

/**
 * Each table is renamed to <t>_legacy, a partitioned parent of the same columns takes its name, and the old table
 * becomes the parent's default partition, holding the sms_ids before `firstDay` (checked at once where `validated`,
 * else NOT VALID): no message row is copied; message_keys is filled with every activity's key. The indexes below are the
 * flat tables' as the migrations leave them: test/ledger/day-partitions.test.ts compares the two layouts, so a migration
 * that changes one of these tables changes this too.
 */
async function convertTables(trx: Kysely<Database>, firstDay: number, validated: boolean): Promise<void> {
  // The default partitions keep every sms_id outside the days that get tables: before the first, and from ten years on,
  // where an sms_id that is no UUIDv7 of ours sorts too (a receipt may name any text: 'sms-1' sorts after every hex
  // digit). Only a text that sorts like an sms_id of the coming ten years needs its day's table.
  const [bound, end] = [dayBound(firstDay), dayBound(firstDay + 3650)];
  const run = (statement: string) => sql.raw(statement).execute(trx);
  // A view follows its table through a rename: recreated over the parent below.
  await run('drop view recipient_messages');
  // Every index and constraint of the old tables is renamed: the parents' indexes take the names the queries and
  // docs know. An index of the parent that matches one of the old table's is attached instead of built.
  const renamed: Record<string, string[]> = {
    messages: [
      'messages_pkey',
      'messages_activity_key_key',
      'messages_awaiting_receipt',
      'messages_unresolved_sends',
      'messages_provider_created',
      'messages_status',
      'messages_lookups',
      'messages_created_sms_id',
      'messages_recipient_time',
      'messages_provider_id_only',
    ],
    receipts: ['receipts_pkey', 'receipts_dedup_key_key', 'receipts_sms_id', 'receipts_unmatched', 'receipts_received'],
  };
  for (const [table, indexes] of Object.entries(renamed)) {
    await run(`alter table ${table} rename to ${table}_legacy`);
    for (const index of indexes) await run(`alter index ${index} rename to ${index}_legacy`);
    await run(`create table ${table} (like ${table}_legacy including defaults) partition by range (sms_id)`);
  }
  // The serial column's sequence goes on with the parent's ids (its default names it already).
  await run('alter sequence receipts_id_seq owned by receipts.id');

  // A key of a partitioned table holds the partition key: an activity's one message is kept by message_keys, whose
  // rows the send path claims first (src/ledger/messages.ts).
  await run('alter table messages add constraint messages_pkey primary key (sms_id)');
  await run('create index messages_awaiting_receipt on messages (submitted_at) where delivery_status is null');
  await run(`create index messages_unresolved_sends on messages (dispatched_at) where state in ('dispatching', 'uncertain')`);
  await run('create index messages_provider_created on messages (provider, created_at)');
  await run('create index messages_status on messages (coalesce(delivery_status, state), created_at)');
  await run('create index messages_lookups on messages (dispatched_at) where lookup_result is not null');
  await run('create index messages_created_sms_id on messages (created_at, sms_id)');
  await run('create index messages_recipient_time on messages ((created_at / 86400000), recipient, created_at)');
  await run('create index messages_provider_id_only on messages ((created_at / 86400000), provider, provider_message_id) where receipts_name_sms_id = 0');
  // No statistics on the day, as before (2026-11-29-70-time-keys); a day's table does not inherit this, and is given
  // it when made (createDayTable).
  await run('alter index messages_recipient_time alter column 1 set statistics 0');
  await run('alter index messages_provider_id_only alter column 1 set statistics 0');
  // A parked receipt has no sms_id: nulls not distinct keeps one parked copy of a key, as the old key did.
  await run('alter table receipts add constraint receipts_dedup_key_sms_id unique nulls not distinct (dedup_key, sms_id)');
  // Receipts are paged, matched and deleted by id; the old unique index is not taken for a plain one, so this one is built.
  await run('create index receipts_id on receipts (id)');
  await run('create index receipts_sms_id on receipts (sms_id)');
  await run('create index receipts_unmatched on receipts (provider, provider_message_id) where matched = 0');
  await run('create index receipts_received on receipts (received_at)');

  for (const table of Object.keys(renamed)) {
    const nullable = table === 'receipts';
    await run(
      `alter table ${table}_legacy add constraint ${table}_legacy_before check (${nullable ? 'sms_id is null or ' : ''}sms_id < '${bound}' or sms_id >= '${end}')${validated ? '' : ' not valid'}`,
    );
    await run(`alter table ${table} attach partition ${table}_legacy default`);
  }

  // Text compared byte by byte, as every text column of the ledger (migration 2026-11-30-30-byte-order-text); the
  // parents took their tables' collations over with their columns.
  await run('create table message_keys (activity_key text collate "C" primary key, sms_id text collate "C" not null)');
  await run('insert into message_keys (activity_key, sms_id) select activity_key, sms_id from messages_legacy');
  await run('create view recipient_messages as select created_at / 86400000 as day, recipient, created_at, sms_id from messages');
}

/**
 * The other sessions on this database (`partition` refuses while there are any): each one's application name, or
 * its client address, or 'local'.
 */
export async function otherSessions(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ who: string }>`
    select coalesce(nullif(application_name, ''), host(client_addr), 'local') as who from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`.execute(db);
  return rows.map((r) => r.who);
}
