/**
 * PostgreSQL's day partitions (DialectFlags.partitionsByDay), the layout a new ledger is made with (layOutNewLedger) and
 * `crm-sms-gateway partition` converts a flat one to (partitionByDay): messages and receipts are each partitioned by
 * range of sms_id, one table per UTC day, with the table from before the conversion as the default partition. The
 * conversion outbox and its attempts are not: their claim reads the due rows of every day.
 * A UUIDv7 starts with its Unix milliseconds, so a day's sms_ids lie between two fixed strings (dayBound). The default
 * partition holds the sms_ids before the day its check constraint names (`<t>_legacy_before`); from that day on every
 * row needs its day's table, so the tables are made a week ahead, and retention drops them (src/ledger/retention.ts).
 */
import { setTimeout } from 'node:timers/promises';
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

/** Whether the server can hold the layout by day: its receipts' key is `unique nulls not distinct`, new in PostgreSQL 15. */
export async function serverHoldsLayoutByDay(db: Kysely<Database>): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`select current_setting('server_version_num')::int as n`.execute(db);
  return rows[0]!.n >= 150_000;
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

/** What the conversion did that `partition --prepare` could have done before: none of it on a prepared ledger. */
export interface PreparedUse {
  /** Activities' keys copied into message_keys. */
  copiedKeys: number;
  /** Receipts' indexes built on the old table as it was attached. */
  builtIndexes: number;
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
export async function partitionByDay(db: Kysely<Database>, now: number): Promise<PreparedUse> {
  const used = await db.transaction().execute(async (trx) => {
    // Waits at most 5 s for each lock: one not granted means something still uses the tables (the command refuses first
    // while another connection is open, but a session may open between that check and this).
    await sql`select set_config('lock_timeout', '5s', true)`.execute(trx);
    return convertTables(trx, Math.floor(now / DAY_MS) + 2, false);
  });
  // This ledger's statements take the new layout from now on (another process reads it when it first connects).
  dialectFlagsOf(db).partitionsByDay = true;
  return used;
}

/**
 * What `partition --prepare` builds while the instances serve the flat tables, so that the conversion, with them
 * stopped, does not build it: without it, the conversion's two receipts' indexes and its copy of every activity's key
 * took about 4 s a million messages (bench/README.md "The conversion prepared while sends go on").
 * - The indexes the default partition of receipts needs, built concurrently under the names attaching gives them.
 * - message_keys, filled from every message in pages of sms_ids, and kept to the messages by two triggers meanwhile:
 *   an insert takes its activity's key; a delete gives it back and is noted in message_keys_gone, because a page read
 *   before the delete may write the key after it. The conversion drops the triggers and the keys noted there.
 */
const PREPARED_INDEXES = [
  { name: 'receipts_legacy_id_idx', on: 'receipts (id)', unique: false },
  { name: 'receipts_legacy_dedup_key_sms_id_key', on: 'receipts (dedup_key, sms_id) nulls not distinct', unique: true },
] as const;
/**
 * An activity's one message on a ledger by day (DialectFlags.partitionsByDay), its text compared byte by byte as every
 * text column of the ledger (migration 2026-11-30-30-byte-order-text).
 */
const CREATE_MESSAGE_KEYS = 'create table if not exists message_keys (activity_key text collate "C" primary key, sms_id text collate "C" not null)';
/** message_keys' comment once every message's key is in it. */
const KEYS_FILLED = 'filled by partition --prepare';
/** Messages whose keys one statement of the fill copies. */
const FILL_PAGE = 20_000;
/**
 * The share of the time the fill copies: it waits three times as long as each page took, since it cannot tell whether
 * sends wait (another process serves them), as retention can. So paced, a bench's batches kept their rate while it ran
 * (bench/README.md "The conversion prepared while sends go on").
 */
const FILL_SHARE = 0.25;

export interface PreparedState {
  /** The prepared indexes that are valid (a concurrent build that was cut off leaves one invalid). */
  indexes: string[];
  /** message_keys: absent, partly filled (a fill cut off: the triggers keep it to the messages), or filled. */
  keys: 'none' | 'partial' | 'filled';
}

/** What of `partition --prepare` a flat ledger holds. */
export async function readPreparedState(db: Kysely<Database>): Promise<PreparedState> {
  const { rows } = await sql<{ name: string; valid: boolean }>`
    select c.relname as name, x.indisvalid as valid from pg_class c join pg_index x on x.indexrelid = c.oid
    where c.relname in (${sql.join(PREPARED_INDEXES.map((i) => i.name))})`.execute(db);
  const keys = await sql<{ note: string | null }>`select obj_description(to_regclass('message_keys'), 'pg_class') as note
    where to_regclass('message_keys') is not null`.execute(db);
  return {
    indexes: rows
      .filter((r) => r.valid)
      .map((r) => r.name)
      .sort(),
    keys: keys.rows.length === 0 ? 'none' : keys.rows[0]!.note === KEYS_FILLED ? 'filled' : 'partial',
  };
}

/**
 * `partition --prepare`, on the flat tables while instances serve them: builds what PREPARED_INDEXES' comment says, each
 * step skipped when done before, so a run cut off is run again. Takes no lock that stops sends but the triggers'
 * creation, a moment's (withShortLock, tried again). `progress` hears each step as it ends, with the milliseconds it took.
 */
export async function preparePartitionByDay(
  db: Kysely<Database>,
  progress: (done: string, ms: number) => void,
  share = FILL_SHARE,
): Promise<{ keys: number } | { gaveUp: string }> {
  return whilePreparing(db, (one) => prepare(one, progress, share));
}

/** The key of the session lock `partition --prepare` and `--unprepare` hold while they run: "crmp" as four bytes. */
const PREPARING_LOCK = 0x63726d70;

/**
 * Runs `work` on one connection of `db` that holds PREPARING_LOCK, or names the server process that holds it: two runs
 * at once would each take the other's index still being built for one a cut-off build left invalid, and build it again.
 */
async function whilePreparing<T extends object>(db: Kysely<Database>, work: (one: Kysely<Database>) => Promise<T>): Promise<T | { gaveUp: string }> {
  return db.connection().execute(async (one) => {
    const { rows } = await sql<{ got: boolean }>`select pg_try_advisory_lock(${sql.lit(PREPARING_LOCK)}) as got`.execute(one);
    if (!rows[0]!.got) {
      // An advisory lock is the database's own: another database of the cluster may hold the same key.
      const holder = await sql<{ pid: number }>`select pid from pg_locks
        where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())
          and classid = 0 and objid = ${sql.lit(PREPARING_LOCK)} and objsubid = 1 and granted`.execute(one);
      return { gaveUp: `another partition --prepare or --unprepare is running (server process ${holder.rows[0]?.pid ?? 'gone since'})` };
    }
    try {
      return await work(one);
    } finally {
      await sql`select pg_advisory_unlock(${sql.lit(PREPARING_LOCK)})`.execute(one);
    }
  });
}

async function prepare(db: Kysely<Database>, progress: (done: string, ms: number) => void, share: number): Promise<{ keys: number } | { gaveUp: string }> {
  for (const index of PREPARED_INDEXES) {
    const started = performance.now();
    const state = await readPreparedState(db);
    if (state.indexes.includes(index.name)) continue;
    // An index a cut-off build left invalid is dropped and built again.
    await sql.raw(`drop index concurrently if exists ${index.name}`).execute(db);
    await sql.raw(`create ${index.unique ? 'unique ' : ''}index concurrently ${index.name} on ${index.on}`).execute(db);
    progress(`built ${index.name}`, performance.now() - started);
  }
  const started = performance.now();
  let followed = false;
  for (let attempt = 0; attempt < 10 && !followed; attempt++) followed = await withShortLock(db, followMessageKeys);
  if (!followed) return { gaveUp: 'the lock on messages was not granted in ten tries of 2 s' };
  if ((await readPreparedState(db)).keys === 'filled') return { keys: 0 };
  let after = '';
  let keys = 0;
  for (;;) {
    const page = performance.now();
    const { rows } = await sql<{ last: string | null; n: string }>`
      with page as (select activity_key, sms_id from messages where sms_id > ${after} order by sms_id limit ${FILL_PAGE}),
      copied as (insert into message_keys (activity_key, sms_id) select activity_key, sms_id from page on conflict (activity_key) do nothing)
      select max(sms_id) as last, count(*) as n from page`.execute(db);
    if (rows[0]!.last === null) break;
    after = rows[0]!.last;
    keys += Number(rows[0]!.n);
    await setTimeout(((performance.now() - page) * (1 - share)) / share);
  }
  await sql.raw(`comment on table message_keys is '${KEYS_FILLED}'`).execute(db);
  progress(`filled message_keys with ${keys} activities' keys`, performance.now() - started);
  return { keys };
}

/** message_keys and message_keys_gone, and the triggers that keep the keys to the flat messages (PREPARED_INDEXES). */
async function followMessageKeys(trx: Kysely<Database>): Promise<void> {
  const run = (statement: string) => sql.raw(statement).execute(trx);
  await run(CREATE_MESSAGE_KEYS);
  await run('create table if not exists message_keys_gone (activity_key text collate "C" not null, sms_id text collate "C" not null)');
  // A statement's rows at once (transition tables): a batch's 500 keys in one insert. The flat messages' activity_key is
  // unique, so a key stored again is one whose message went and came back: the newer message holds it.
  await run(`create or replace function message_keys_taken() returns trigger language plpgsql as $$ begin
    insert into message_keys (activity_key, sms_id) select activity_key, sms_id from taken
      on conflict (activity_key) do update set sms_id = excluded.sms_id;
    return null; end $$`);
  await run(`create or replace function message_keys_given_back() returns trigger language plpgsql as $$ begin
    delete from message_keys k using given_back g where k.activity_key = g.activity_key and k.sms_id = g.sms_id;
    insert into message_keys_gone (activity_key, sms_id) select activity_key, sms_id from given_back;
    return null; end $$`);
  await run(`create or replace trigger message_keys_taken after insert on messages referencing new table as taken
    for each statement execute function message_keys_taken()`);
  await run(`create or replace trigger message_keys_given_back after delete on messages referencing old table as given_back
    for each statement execute function message_keys_given_back()`);
}

/** Takes the triggers off and the keys of the messages deleted meanwhile out; drops message_keys_gone. */
async function stopFollowingMessageKeys(trx: Kysely<Database>): Promise<void> {
  const run = (statement: string) => sql.raw(statement).execute(trx);
  await run('drop trigger if exists message_keys_taken on messages');
  await run('drop trigger if exists message_keys_given_back on messages');
  await run('drop function if exists message_keys_taken()');
  await run('drop function if exists message_keys_given_back()');
  if ((await sql<{ t: string | null }>`select to_regclass('message_keys_gone')::text as t`.execute(trx)).rows[0]!.t === null) return;
  await run('delete from message_keys k using message_keys_gone g where k.activity_key = g.activity_key and k.sms_id = g.sms_id');
  await run('drop table message_keys_gone');
}

/** `partition --unprepare`: what `--prepare` built goes, and the flat tables are as before it. */
export async function unpreparePartitionByDay(db: Kysely<Database>): Promise<{ gaveUp?: string }> {
  return whilePreparing(db, unprepare);
}

async function unprepare(db: Kysely<Database>): Promise<{ gaveUp?: string }> {
  let done = false;
  for (let attempt = 0; attempt < 10 && !done; attempt++) {
    done = await withShortLock(db, async (trx) => {
      await stopFollowingMessageKeys(trx);
      await sql`drop table if exists message_keys`.execute(trx);
    });
  }
  if (!done) return { gaveUp: 'the lock on messages was not granted in ten tries of 2 s' };
  for (const index of PREPARED_INDEXES) await sql.raw(`drop index concurrently if exists ${index.name}`).execute(db);
  return {};
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
async function convertTables(trx: Kysely<Database>, firstDay: number, validated: boolean): Promise<PreparedUse> {
  const prepared = await readPreparedState(trx);
  // What a cut-off `--prepare` left unfinished is built here as without it: an invalid index goes, the keys are copied.
  for (const { name } of PREPARED_INDEXES) if (!prepared.indexes.includes(name)) await sql.raw(`drop index if exists ${name}`).execute(trx);
  await stopFollowingMessageKeys(trx);
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

  // A prepared unique index is attached only as a constraint's: it becomes the one attaching would have added.
  const uniqueIndex = PREPARED_INDEXES.find((index) => index.unique)!.name;
  if (prepared.indexes.includes(uniqueIndex)) await run(`alter table receipts_legacy add constraint ${uniqueIndex} unique using index ${uniqueIndex}`);
  for (const table of Object.keys(renamed)) {
    const nullable = table === 'receipts';
    await run(
      `alter table ${table}_legacy add constraint ${table}_legacy_before check (${nullable ? 'sms_id is null or ' : ''}sms_id < '${bound}' or sms_id >= '${end}')${validated ? '' : ' not valid'}`,
    );
    await run(`alter table ${table} attach partition ${table}_legacy default`);
  }

  // Made here unless `--prepare` made it (the parents took their tables' collations over with their columns).
  await run(CREATE_MESSAGE_KEYS);
  let copiedKeys = 0;
  if (prepared.keys !== 'filled') {
    const copied = await sql`insert into message_keys (activity_key, sms_id) select activity_key, sms_id from messages_legacy
      on conflict (activity_key) do nothing`.execute(trx);
    copiedKeys = Number(copied.numAffectedRows ?? 0);
  }
  await run('comment on table message_keys is null');
  await run('create view recipient_messages as select created_at / 86400000 as day, recipient, created_at, sms_id from messages');
  return { copiedKeys, builtIndexes: PREPARED_INDEXES.length - prepared.indexes.length };
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
