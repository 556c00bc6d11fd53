/**
 * Reads the ledger the way an outsider would: a separate read-only connection to the SQLite file, so a row seen
 * here was committed, not merely held in the gateway's memory. Under TEST_DATABASE_URL (PostgreSQL) it reads
 * through the gateway's own Kysely instance instead, which still sees only committed rows.
 */
import BetterSqlite3 from 'better-sqlite3';
import type { Insertable, Kysely, QueryId, Transaction } from 'kysely';
import { inTransaction } from '../../src/ledger/engine/db.js';
import type { MoveChunk } from '../../src/ledger/number-messages.js';
import type { Database, MessagesTable } from '../../src/ledger/schema.js';
import type { TestGateway } from './gateway.js';

export type LedgerMessage = Pick<
  MessagesTable,
  'sms_id' | 'activity_key' | 'activity_json' | 'provider' | 'provider_message_id' | 'recipient' | 'state' | 'error' | 'attempts' | 'encoding'
>;

const COLUMNS = ['sms_id', 'activity_key', 'activity_json', 'provider', 'provider_message_id', 'recipient', 'state', 'error', 'attempts', 'encoding'] as const;

function sqliteFile(gw: TestGateway): string | undefined {
  const url = gw.config.database.url;
  return url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : undefined;
}

/** Every message row whose activity_key is one of `keys`, ordered by activity_key. */
export async function readMessages(gw: TestGateway, keys: readonly string[]): Promise<LedgerMessage[]> {
  if (keys.length === 0) return [];
  const file = sqliteFile(gw);
  if (!file) {
    return gw.gateway.ledger.db
      .selectFrom('messages')
      .select(COLUMNS)
      .where('activity_key', 'in', [...keys])
      .orderBy('activity_key')
      .execute();
  }
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    const placeholders = keys.map(() => '?').join(', ');
    const sql = `select ${COLUMNS.join(', ')} from messages where activity_key in (${placeholders}) order by activity_key`;
    return db.prepare(sql).all(...keys) as LedgerMessage[];
  } finally {
    db.close();
  }
}

/** The one row for an activity key; fails the test when there is none or more than one. */
export async function readMessage(gw: TestGateway, key: string): Promise<LedgerMessage> {
  const rows = await readMessages(gw, [key]);
  if (rows.length !== 1) throw new Error(`expected one ledger row for activity key ${key}, found ${rows.length}`);
  return rows[0]!;
}

/** How many message rows the ledger holds in all. */
export async function countMessages(gw: TestGateway): Promise<number> {
  const file = sqliteFile(gw);
  if (!file) {
    const row = await gw.gateway.ledger.db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('select count(*) as n from messages').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * A message row as a send leaves it: submitted to `provider` at `at`, waiting for its receipt; `fields` changes any
 * column. For tests that fill the ledger directly.
 */
export function submittedMessageRow(id: string, provider: string, at: number, fields: Partial<Insertable<MessagesTable>> = {}): Insertable<MessagesTable> {
  return {
    sms_id: id,
    activity_key: `act-${id}`,
    activity_json: JSON.stringify({ id: `act-${id}` }),
    user_id: null,
    request_id: null,
    provider,
    provider_message_id: `pm-${id}`,
    // Found by its provider id too, as a message of a provider whose receipts may lack the sms_id.
    receipts_name_sms_id: 0,
    recipient: '+447700900123',
    sender: null,
    encoding: 'gsm7',
    segments: 1,
    content: null,
    state: 'submitted',
    error: null,
    error_code: null,
    attempts: 1,
    provider_status: null,
    delivery_status: null,
    delivery_source: null,
    created_at: at,
    updated_at: at,
    dispatched_at: at,
    submitted_at: at,
    completed_at: null,
    ...fields,
  };
}

/** Moves `day`'s rows of one recent table as serve does (src/delivery/number-entries.ts), in chunks of about `limit`; returns each chunk's count. */
export async function moveDayInChunks(
  db: Kysely<Database>,
  moveChunk: (trx: Transaction<Database>, day: number, after: string | undefined, limit: number) => Promise<MoveChunk>,
  day: number,
  limit: number,
): Promise<number[]> {
  const chunks: number[] = [];
  for (let after: string | undefined; ; ) {
    const chunk = await inTransaction(db, (trx) => moveChunk(trx, day, after, limit));
    chunks.push(chunk.moved);
    if (chunk.last === undefined) return chunks;
    after = chunk.last;
  }
}

/**
 * `db` with `between` run once, right after the first select from `table` has its rows and before the caller's next
 * statement: a day's move landing between two reads of a search, where nothing else can place it.
 */
export function runningAfterFirstRead(db: Kysely<Database>, table: string, between: () => Promise<unknown>): Kysely<Database> {
  const reads = new WeakSet<QueryId>();
  let ran = false;
  return db.withPlugin({
    transformQuery({ node, queryId }) {
      if (node.kind === 'SelectQueryNode' && JSON.stringify(node.from).includes(`"${table}"`)) reads.add(queryId);
      return node;
    },
    async transformResult({ result, queryId }) {
      if (!ran && reads.has(queryId)) {
        ran = true;
        await between();
      }
      return result;
    },
  });
}
