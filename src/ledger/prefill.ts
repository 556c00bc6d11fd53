/**
 * Fills a migrated, empty ledger with messages as the send path leaves them (prefill-rows.ts), at millions of rows a
 * minute, so benchmarks and tests can run against a ledger of production size (bench/README.md "Prefilled
 * ledgers"). Rows go in large transactions of prepared multi-row statements: on SQLite through better-sqlite3
 * directly, on PostgreSQL as one `insert … select from unnest(arrays)` per table and chunk (one statement of a
 * few parameters whatever the rows, since `pg` has no COPY of its own).
 *
 * Indexes stay in place while rows go in by default, as on a ledger grown by sends: pages split as they fill (on
 * SQLite at a million messages about 87–90% full, bench/README.md). `indexes: 'after'` drops the secondary indexes of
 * the filled tables and builds them again at the end, which packs their pages full, so a ledger made that way is
 * smaller and flatters the figures measured on it.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import type PgModule from 'pg';
import { migrateToLatest, openLedger } from './engine/db.js';
import { DAY_MS, DAYS_AHEAD, ensureDayPartitions } from './engine/partitions.js';
import { PREFILL_TABLES, prefillRows, type PrefillBatch, type PrefillRowOptions, type PrefillTable } from './prefill-rows.js';

export interface PrefillOptions extends Omit<PrefillRowOptions, 'from' | 'to'> {
  /** Messages are spread evenly over the `days` before `now`. */
  days: number;
  now: number;
  indexes?: 'in-place' | 'after';
  /** PostgreSQL: lay the ledger out as `crm-sms-gateway partition` does, with the day tables of the whole span, first. */
  partitionByDay?: boolean;
  /** Told after each transaction: messages written so far. */
  onProgress?: (written: number) => void;
}

export interface PrefillResult {
  messages: number;
  /** Rows written in every table together. */
  rows: number;
  seconds: number;
}

/** Messages per transaction. */
const MESSAGES_PER_TRANSACTION = 50_000;
/**
 * Messages generated at a time: rows written soon after they are made die young, where batches of 20,000 outlived
 * the young generation and the garbage collector took half the generator's time.
 */
const MESSAGES_PER_BATCH = 2_500;
/** Rows per SQLite statement: within its 32,766 bound variables for the widest table (messages, 21 columns). */
const SQLITE_ROWS_PER_STATEMENT = 500;
const ALL_TABLES = Object.values(PREFILL_TABLES) as PrefillTable[];
const TABLES = ALL_TABLES.filter((t) => !t.partitionsOnly);
const POSTGRES_TABLES = ALL_TABLES.filter((t) => !t.sqliteOnly && !t.partitionsOnly);
const DAY_PARTITIONED_TABLES = ALL_TABLES.filter((t) => !t.sqliteOnly);

/** Writes generated batches, several to a transaction; `finish` makes the ledger ready to serve. */
interface BatchWriter {
  begin(): Promise<void>;
  write(batch: PrefillBatch): Promise<void>;
  commit(): Promise<void>;
  dropIndexes(): Promise<void>;
  finish(): Promise<void>;
  close(): Promise<void>;
}

/** Prefills the ledger at `url` (`sqlite:FILE` or a PostgreSQL URL), migrating it first; refuses one that holds messages. */
export async function prefillLedger(url: string, options: PrefillOptions): Promise<PrefillResult> {
  const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
  try {
    // A ledger made new here takes the layout asked for; one that exists keeps its own, checked below.
    await migrateToLatest(ledger.db, { layout: options.partitionByDay ? 'by_day' : 'flat', now: options.now });
    const any = await ledger.db.selectFrom('messages').select('sms_id').limit(1).executeTakeFirst();
    if (any) throw new Error(`${url.split('@').pop()} already holds messages: prefill writes only into an empty ledger`);
    if ((options.partitionByDay ?? false) !== ledger.flags.partitionsByDay) {
      throw new Error(
        options.partitionByDay
          ? 'day partitions are for a new PostgreSQL ledger, on PostgreSQL 15 or later'
          : 'this ledger is laid out by day: ask for day partitions, or give a new database',
      );
    }
    if (options.partitionByDay) {
      // The days' tables of the whole span, as a ledger that grew day by day on this layout has them (the default
      // partition is empty, so each is made without a scan).
      const made = await ensureDayPartitions(ledger.db, options.now, DAYS_AHEAD, Math.floor((options.now - options.days * DAY_MS) / DAY_MS));
      if (made.gaveUp || made.created.length === 0) throw new Error(`day partitions: ${made.gaveUp ?? 'none made'}`);
    }
  } finally {
    await ledger.close();
  }
  const started = performance.now();
  const sqlite = url.startsWith('sqlite:');
  const tables = sqlite ? TABLES : options.partitionByDay ? DAY_PARTITIONED_TABLES : POSTGRES_TABLES;
  const writer = sqlite ? sqliteWriter(url.slice('sqlite:'.length)) : await postgresWriter(url, tables);
  let rows = 0;
  try {
    if (options.indexes === 'after') await writer.dropIndexes();
    const rowOptions = { ...options, from: options.now - options.days * 86_400_000, to: options.now - 60_000 };
    for (let start = 0; start < options.messages; start += MESSAGES_PER_TRANSACTION) {
      const end = Math.min(options.messages, start + MESSAGES_PER_TRANSACTION);
      await writer.begin();
      for (let from = start; from < end; from += MESSAGES_PER_BATCH) {
        const batch = prefillRows(rowOptions, from, Math.min(end, from + MESSAGES_PER_BATCH));
        for (const table of tables) rows += batch[table.name as keyof PrefillBatch].length;
        await writer.write(batch);
      }
      await writer.commit();
      options.onProgress?.(end);
    }
    await writer.finish();
  } finally {
    await writer.close();
  }
  return { messages: options.messages, rows, seconds: (performance.now() - started) / 1000 };
}

const insertHead = (table: PrefillTable) => `insert into ${table.name} (${table.columns.map((c) => c.name).join(', ')})`;
function conflictTail(table: PrefillTable): string {
  if (table.ignoreConflicts) return ' on conflict do nothing';
  const add = table.addOnConflict;
  return add ? ` on conflict (${add.key.join(', ')}) do update set ${add.column} = ${table.name}.${add.column} + excluded.${add.column}` : '';
}

function sqliteWriter(file: string): BatchWriter {
  const sqlite = new (createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3)(file);
  // A file being filled is no ledger yet: no journal, no fsync, and a page cache large enough for the random inserts
  // into the indexes of numbers and provider ids. The served gateway sets its own (engine/sqlite.ts).
  sqlite.pragma('journal_mode = OFF');
  sqlite.pragma('synchronous = OFF');
  sqlite.pragma('cache_size = -1000000');
  sqlite.pragma('temp_store = memory');
  const statements = new Map<string, BetterSqlite3.Statement>();
  const statement = (table: PrefillTable, rows: number) => {
    const key = `${table.name}:${rows}`;
    let s = statements.get(key);
    if (!s) {
      const tuple = `(${table.columns.map(() => '?').join(', ')})`;
      s = sqlite.prepare(`${insertHead(table)} values ${Array.from({ length: rows }, () => tuple).join(', ')}${conflictTail(table)}`);
      statements.set(key, s);
    }
    return s;
  };
  let dropped: Array<{ sql: string }> = [];
  return {
    begin: async () => {
      sqlite.exec('begin');
    },
    async write(batch) {
      for (const table of TABLES) {
        const rows = batch[table.name as keyof PrefillBatch];
        for (let i = 0; i < rows.length; i += SQLITE_ROWS_PER_STATEMENT) {
          const part = rows.slice(i, i + SQLITE_ROWS_PER_STATEMENT);
          statement(table, part.length).run(part.flat());
        }
      }
    },
    commit: async () => {
      sqlite.exec('commit');
    },
    async dropIndexes() {
      const names = TABLES.map((t) => `'${t.name}'`).join(', ');
      dropped = sqlite.prepare(`select name, sql from sqlite_master where type = 'index' and sql is not null and tbl_name in (${names})`).all() as Array<{
        name: string;
        sql: string;
      }>;
      for (const index of dropped as Array<{ name: string; sql: string }>) sqlite.exec(`drop index ${index.name}`);
    },
    async finish() {
      for (const index of dropped) sqlite.exec(index.sql);
      sqlite.exec('analyze');
      // The gateway opens its ledger in WAL mode (engine/sqlite.ts); a file left in it needs no change at the first open.
      sqlite.pragma('journal_mode = WAL');
    },
    close: async () => {
      sqlite.close();
    },
  };
}

/** Rows per PostgreSQL statement: one array per column, so the count is bounded by memory only. */
const POSTGRES_ROWS_PER_STATEMENT = 5_000;

async function postgresWriter(url: string, tables: PrefillTable[]): Promise<BatchWriter> {
  const pg = createRequire(import.meta.url)('pg') as typeof PgModule;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // Nothing reads the database until the fill is done: a crash loses only a fill that is started again.
  await client.query('set synchronous_commit = off');
  const text = (table: PrefillTable) =>
    `${insertHead(table)} select * from unnest(${table.columns.map((c, k) => `$${k + 1}::${c.type}[]`).join(', ')})${conflictTail(table)}`;
  let dropped: Array<{ indexdef: string }> = [];
  return {
    begin: async () => {
      await client.query('begin');
    },
    async write(batch) {
      for (const table of tables) {
        const rows = batch[table.name as keyof PrefillBatch];
        for (let i = 0; i < rows.length; i += POSTGRES_ROWS_PER_STATEMENT) {
          const part = rows.slice(i, i + POSTGRES_ROWS_PER_STATEMENT);
          const columns = table.columns.map((_, k) => part.map((row) => row[k]));
          await client.query({ name: `prefill_${table.name}`, text: text(table), values: columns });
        }
      }
    },
    commit: async () => {
      await client.query('commit');
    },
    async dropIndexes() {
      // Secondary indexes only: those behind a primary key or unique constraint share its name and stay. A partitioned
      // table's (DialectFlags.partitionsByDay) are read with its partitions' (named as partitionByDay named them), and
      // dropped with the parent's.
      const { rows } = await client.query<{ indexname: string; indexdef: string; partition: boolean }>(
        `select indexname, indexdef, exists (select 1 from pg_inherits where inhrelid = (quote_ident(indexname))::regclass) as partition
           from pg_indexes where schemaname = current_schema()
           and (tablename = any($1) or tablename in (select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
             join pg_class p on p.oid = i.inhparent where p.relname = any($1)))
           and indexname not in (select conname from pg_constraint)`,
        [tables.map((t) => t.name)],
      );
      // The partitions' indexes first when made again, so that the parent's takes them (and their names) instead of
      // building its own.
      dropped = [...rows.filter((r) => r.partition), ...rows.filter((r) => !r.partition)];
      for (const index of rows.filter((r) => !r.partition)) await client.query(`drop index if exists ${index.indexname}`);
      for (const index of rows.filter((r) => r.partition)) await client.query(`drop index if exists ${index.indexname}`);
    },
    async finish() {
      // A partitioned table's index reads back as `ON ONLY` the parent: made so, it would index no partition; made on
      // the parent, it takes each partition's matching index.
      for (const index of dropped) await client.query(index.indexdef.replace(' ON ONLY ', ' ON '));
      // Ids were written as given: the sequences go on after them, as they would after the sends.
      for (const table of ['receipts', 'conversions', 'conversion_attempts'])
        await client.query(`select setval(pg_get_serial_sequence('${table}', 'id'), coalesce((select max(id) from ${table}), 1))`);
      await client.query('analyze');
    },
    close: () => client.end(),
  };
}
