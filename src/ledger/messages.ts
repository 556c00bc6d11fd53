/** Repository for the `messages` table: functions that take `db` (or a transaction) first. */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { StatsTally } from './delivery-stats.js';
import { ROWS_PER_STATEMENT, statementChunks } from './chunks.js';
import { dialectFlagsOf } from './engine/flags.js';
import { createQueryTemplate } from './query-template.js';
import type {
  Database,
  MessageKeysTable,
  MessagesTable,
  RecentMessageUserRecipientsTable,
  RecentRecipientMessagesTable,
  SendOutcome,
  SendState,
} from './schema.js';
import { hourAt } from './time-buckets.js';

type Db = Kysely<Database> | Transaction<Database>;
export type MessageRow = MessagesTable;
export type NewMessage = Omit<
  MessagesTable,
  | 'provider_message_id'
  | 'error'
  | 'error_code'
  | 'provider_status'
  | 'delivery_status'
  | 'delivery_source'
  | 'submitted_at'
  | 'completed_at'
  | 'attempts'
  | 'state'
  | 'lookup_result'
  | 'status_queried_at'
  | 'held_until'
>;

type MessageInsert = NewMessage & Pick<MessagesTable, 'state' | 'attempts'> & Partial<Pick<MessagesTable, 'held_until' | 'error' | 'error_code'>>;

const insertMessagesTemplate = createQueryTemplate((db: Kysely<Database>, rows: Array<NewMessage & Pick<MessagesTable, 'state' | 'attempts'>>) =>
  db
    .insertInto('messages')
    .values(rows)
    .onConflict((oc) => oc.column('activity_key').doNothing())
    .returning('activity_key'),
);

/**
 * PostgreSQL: messages is partitioned by day (DialectFlags.partitionsByDay) and holds no unique key on activity_key;
 * the rows given here are the ones whose key claimMessageKeys just took. No conflict target: the legacy partition
 * still has its unique key on activity_key, and a conflict on it changes nothing here either.
 */
const insertClaimedMessagesTemplate = createQueryTemplate((db: Kysely<Database>, rows: Array<NewMessage & Pick<MessagesTable, 'state' | 'attempts'>>) =>
  db
    .insertInto('messages')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .returning('activity_key'),
);

const claimKeysTemplate = createQueryTemplate((db: Kysely<Database>, rows: MessageKeysTable[]) =>
  db
    .insertInto('message_keys')
    .values(rows)
    .onConflict((oc) => oc.column('activity_key').doNothing())
    .returning(['activity_key', 'sms_id']),
);

/**
 * PostgreSQL: takes each row's activity key in message_keys, and returns the rows that took theirs (a key stored
 * already, or a second row of the same key in the batch, is a repeat). Run in the transaction that inserts the rows.
 */
async function claimMessageKeys<T extends Pick<NewMessage, 'activity_key' | 'sms_id'>>(db: Db, rows: T[]): Promise<T[]> {
  const result = await claimKeysTemplate(
    db,
    rows.map((r) => ({ activity_key: r.activity_key, sms_id: r.sms_id })),
  );
  const taken = new Set(result.rows.map((r) => `${r.activity_key}\u0000${r.sms_id}`));
  return rows.filter((r) => taken.has(`${r.activity_key}\u0000${r.sms_id}`));
}

/**
 * Inserts one statement's rows whose activity key is new; returns the keys inserted. SQLite: the unique key on
 * activity_key decides; PostgreSQL: message_keys does (claimMessageKeys).
 */
async function insertMessageRows(db: Db, rows: MessageInsert[]): Promise<string[]> {
  // A template knows its input's shape by the number of values, not by their names: only the sends' rows (all of one
  // set of columns, the hot path) go through one; held and refused rows have columns of their own.
  const sends = rows.every((r) => r.held_until === undefined && r.error === undefined);
  if (!dialectFlagsOf(db).partitionsByDay) {
    if (sends) return (await insertMessagesTemplate(db, rows)).rows.map((r) => r.activity_key);
    const result = await db
      .insertInto('messages')
      .values(rows)
      .onConflict((oc) => oc.column('activity_key').doNothing())
      .returning('activity_key')
      .execute();
    return result.map((r) => r.activity_key);
  }
  const claimed = await claimMessageKeys(db, rows);
  if (claimed.length === 0) return [];
  const inserted = sends
    ? (await insertClaimedMessagesTemplate(db, claimed)).rows.map((r) => r.activity_key)
    : (
        await db
          .insertInto('messages')
          .values(claimed)
          .onConflict((oc) => oc.doNothing())
          .returning('activity_key')
          .execute()
      ).map((r) => r.activity_key);
  if (inserted.length < claimed.length) {
    // A key taken for a message that the legacy partition's own unique key then refused (a message of that activity
    // without its key: none is stored so by this version) would name a message that does not exist: it is given back.
    const stored = new Set(inserted);
    const refused = claimed.filter((r) => !stored.has(r.activity_key));
    await db
      .deleteFrom('message_keys')
      .where(
        'activity_key',
        'in',
        refused.map((r) => r.activity_key),
      )
      .where(
        'sms_id',
        'in',
        refused.map((r) => r.sms_id),
      )
      .execute();
  }
  return inserted;
}

const insertRecentPairsTemplate = createQueryTemplate((db: Kysely<Database>, rows: RecentMessageUserRecipientsTable[]) =>
  db
    .insertInto('message_user_recipients_recent')
    .values(rows)
    .onConflict((oc) => oc.columns(['hour', 'user_id', 'recipient']).doNothing()),
);

/**
 * Records each inserted message's (player, number) for the search by player (message-search.ts), in the transaction
 * that stores the messages: into the current hour's part of message_user_recipients_recent, moved by the day
 * (src/ledger/number-messages.ts). message_user_recipients is random by player, and checking a known pair there read
 * a page of its own for every message, on both databases (bench/README.md "The players' numbers by the hour"). A
 * repeat records nothing: its message recorded its pair when it was stored.
 */
async function recordUserRecipients(
  db: Db,
  rows: ReadonlyArray<Pick<NewMessage, 'activity_key' | 'user_id' | 'recipient' | 'created_at'>>,
  inserted: Set<string>,
): Promise<void> {
  const seen = new Set<string>();
  const pairs: RecentMessageUserRecipientsTable[] = [];
  for (const { activity_key, user_id, recipient, created_at } of rows) {
    if (user_id === null || !inserted.has(activity_key)) continue;
    // A batch often holds one player's number more than once: one row per hour and statement (PostgreSQL refuses
    // the same key twice in one INSERT … ON CONFLICT), at the hour where blanking the message forgets it
    // (forgetSearchPairs, retention.ts).
    const hour = hourAt(created_at);
    const key = `${hour}\u0000${user_id}\u0000${recipient}`;
    if (seen.has(key)) continue;
    seen.add(key);
    pairs.push({ hour, user_id, recipient });
  }
  for (const part of statementChunks(pairs, ROWS_PER_STATEMENT)) await insertRecentPairsTemplate(db, part);
}

const insertRecipientMessagesTemplate = createQueryTemplate((db: Kysely<Database>, rows: RecentRecipientMessagesTable[]) =>
  db
    .insertInto('recipient_messages_recent')
    .values(rows)
    .onConflict((oc) => oc.columns(['hour', 'recipient', 'created_at', 'sms_id']).doNothing()),
);

/**
 * Each inserted message's number by its hour, in the transaction that stores the messages: into
 * recipient_messages_recent, whose current hour's pages the entries of a batch share, and moved from there into
 * recipient_messages once the day is over (src/ledger/number-messages.ts).
 */
async function recordRecipientMessages(
  db: Db,
  rows: ReadonlyArray<Pick<NewMessage, 'activity_key' | 'sms_id' | 'recipient' | 'created_at'>>,
  inserted: Set<string>,
): Promise<void> {
  if (!dialectFlagsOf(db).writesNumberEntries) return;
  const entries: RecentRecipientMessagesTable[] = [];
  for (const r of rows)
    if (inserted.has(r.activity_key)) entries.push({ hour: hourAt(r.created_at), recipient: r.recipient, created_at: r.created_at, sms_id: r.sms_id });
  for (const part of statementChunks(entries, ROWS_PER_STATEMENT)) await insertRecipientMessagesTemplate(db, part);
}

/** Inserts the rows whose activity_key is new; returns the keys that were inserted. */
export async function insertNewMessages(db: Db, rows: NewMessage[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) {
    const chunk = part.map((r) => ({ ...r, state: 'dispatching' as const, attempts: 1 }));
    for (const key of await insertMessageRows(db, chunk)) inserted.add(key);
  }
  await recordUserRecipients(db, rows, inserted);
  await recordRecipientMessages(db, rows, inserted);
  return inserted;
}

/** Inserts messages accepted inside their quiet hours, `held` until `held_until` (held-sends.ts); returns the keys that were new. */
export async function insertHeldMessageRows(db: Db, rows: Array<NewMessage & Pick<MessagesTable, 'held_until'>>): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) {
    for (const key of await insertMessageRows(
      db,
      part.map((r) => ({ ...r, state: 'held' as const, attempts: 0 })),
    ))
      inserted.add(key);
  }
  await recordUserRecipients(db, rows, inserted);
  await recordRecipientMessages(db, rows, inserted);
  return inserted;
}

/** Inserts messages refused before any provider call (suppression.ts); returns the keys that were new. */
export async function insertRefusedMessages(db: Db, rows: Array<NewMessage & Pick<MessagesTable, 'error' | 'error_code'>>): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(i, i + ROWS_PER_STATEMENT).map((r) => ({ ...r, state: 'rejected' as const, attempts: 0 }));
    for (const key of await insertMessageRows(db, chunk)) inserted.add(key);
  }
  await recordUserRecipients(db, rows, inserted);
  await recordRecipientMessages(db, rows, inserted);
  return inserted;
}

/** A message just reclaimed for a retry that is refused instead (suppression.ts): rejected, nothing sent. */
export async function markMessageRefused(db: Db, smsId: string, refusal: Pick<MessagesTable, 'error' | 'error_code'>, now: number): Promise<void> {
  await db
    .updateTable('messages')
    // A refused message costs nothing: its cost, if it was counted, is taken back by the caller (src/sms/claim.ts).
    .set({
      state: 'rejected',
      error: refusal.error,
      error_code: refusal.error_code,
      updated_at: now,
      cost_micros: null,
      cost_currency: null,
      cost_source: null,
    })
    .where('sms_id', '=', smsId)
    .execute();
}

/**
 * PostgreSQL: the messages of these activity keys by their sms_ids (message_keys), so each is read from its own day's
 * table; messages has no index on activity_key (DialectFlags.partitionsByDay). SQLite: undefined (read by the key).
 */
async function smsIdsOfKeys(db: Db, keys: string[]): Promise<string[] | undefined> {
  if (!dialectFlagsOf(db).partitionsByDay) return undefined;
  const rows = await db.selectFrom('message_keys').select('sms_id').where('activity_key', 'in', keys).execute();
  return rows.map((r) => r.sms_id);
}

export async function findMessagesByActivityKeys(db: Db, keys: string[]): Promise<MessageRow[]> {
  if (keys.length === 0) return [];
  const smsIds = await smsIdsOfKeys(db, keys);
  if (smsIds === undefined) return db.selectFrom('messages').selectAll().where('activity_key', 'in', keys).execute();
  if (smsIds.length === 0) return [];
  return db.selectFrom('messages').selectAll().where('sms_id', 'in', smsIds).execute();
}

export async function findMessageBySmsId(db: Db, smsId: string): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirst();
}

export async function findMessageByActivityKey(db: Db, key: string): Promise<MessageRow | undefined> {
  const smsIds = await smsIdsOfKeys(db, [key]);
  if (smsIds === undefined) return db.selectFrom('messages').selectAll().where('activity_key', '=', key).executeTakeFirst();
  if (smsIds.length === 0) return undefined;
  return db.selectFrom('messages').selectAll().where('sms_id', '=', smsIds[0]!).executeTakeFirst();
}

/** The sms_id an activity key was stored under on PostgreSQL (message_keys); undefined on SQLite or for an unknown key. */
export async function findSmsIdOfActivityKey(db: Db, key: string): Promise<string | null | undefined> {
  const smsIds = await smsIdsOfKeys(db, [key]);
  return smsIds === undefined ? undefined : (smsIds[0] ?? null);
}

/**
 * Takes over a message for another send attempt: only when its last attempt was transient (and, if that attempt
 * may have sent it, no later than `uncertainCutoff`, and not while its provider is still to be asked). A send whose
 * process died is never taken over from `dispatching`: it is resolved first (expireDispatchLeases, then
 * src/delivery/lookups.ts). The WHERE clause makes the take-over atomic, so of two concurrent retries only one
 * reaches the provider.
 */
export async function reclaimMessageForRetry(
  db: Db,
  smsId: string,
  changes: Pick<
    MessagesTable,
    | 'provider'
    | 'receipts_name_sms_id'
    | 'recipient'
    | 'sender'
    | 'encoding'
    | 'segments'
    | 'content'
    | 'country'
    | 'cost_micros'
    | 'cost_currency'
    | 'cost_source'
    | 'route'
    | 'route_rule'
    | 'route_rule_name'
  >,
  now: number,
  cutoffs: { uncertainCutoff: number },
): Promise<boolean> {
  const result = await db
    .updateTable('messages')
    .set((eb) => ({
      provider: changes.provider,
      receipts_name_sms_id: changes.receipts_name_sms_id,
      recipient: changes.recipient,
      sender: changes.sender,
      encoding: changes.encoding,
      segments: changes.segments,
      content: changes.content,
      country: changes.country,
      cost_micros: changes.cost_micros,
      cost_currency: changes.cost_currency,
      cost_source: changes.cost_source,
      route: changes.route,
      route_rule: changes.route_rule,
      route_rule_name: changes.route_rule_name,
      state: 'dispatching',
      dispatched_at: now,
      updated_at: now,
      attempts: eb('attempts', '+', 1),
      lookup_result: null,
      status_queried_at: null,
    }))
    .where('sms_id', '=', smsId)
    .where((eb) =>
      eb.or([
        eb('state', '=', 'retryable'),
        // Not while its provider is still to be asked whether it has it (lookup_result `pending`).
        eb.and([
          eb('state', '=', 'uncertain'),
          eb('updated_at', '<=', cutoffs.uncertainCutoff),
          eb.or([eb('lookup_result', 'is', null), eb('lookup_result', '<>', 'pending')]),
        ]),
      ]),
    )
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return false;
  // A retry may carry another number: it gets its (player, number) pair, and on SQLite its entry, too (readers skip
  // the old ones, which no longer match the message's number).
  await sql`insert into message_user_recipients_recent (hour, user_id, recipient)
    select created_at / 3600000, user_id, recipient from messages where sms_id = ${smsId} and user_id is not null
    on conflict do nothing`.execute(db);
  if (!dialectFlagsOf(db).writesNumberEntries) return true;
  await sql`insert into recipient_messages_recent (hour, recipient, created_at, sms_id)
    select created_at / 3600000, recipient, created_at, sms_id from messages where sms_id = ${smsId}
    on conflict do nothing`.execute(db);
  return true;
}

export interface SendOutcomeRecord {
  smsId: string;
  /** The provider that carried it: a route's member (src/provider-wrappers/failover-route.ts), else the one it was claimed for. */
  provider: string;
  /**
   * A route's member carried it, so the row's provider changes from the route's name to the member's. Only then is
   * the column written: an UPDATE that sets an indexed column rewrites that column's index entries even when the
   * value stays the same, which doubled the cost of recording an answer.
   */
  rerouted: boolean;
  /** Written with the member's name when rerouted (the claim wrote the claimed provider's): MessagesTable.receipts_name_sms_id. */
  receiptsNameSmsId: boolean;
  state: SendOutcome;
  providerMessageIds: string[];
  providerStatus: string | null;
  error: string | null;
  errorCode: string | null;
}

/**
 * One UPDATE for many answers that differ only in the provider's message id: the ids arrive as a VALUES list joined
 * on sms_id. (A `CASE sms_id WHEN … THEN …` over the same rows costs a comparison per row and branch: quadratic in
 * the group, and the most expensive statement of a batch before this.) PostgreSQL prunes a table partitioned by day
 * (DialectFlags.partitionsByDay) only by values it can see beside the column, not through the join, so the statement
 * names the ids again as an IN list, which is also what the plan looks them up by. Two bounds of their days prune
 * with fewer planning steps (0.5 ms against 2.1 for a batch's 500 ids), but they are a range of the primary key, and
 * a day table whose statistics lag behind its rows (analysed while it was small, or never, without autovacuum) had
 * its whole day read by that range for each update: on a new ledger, batches sent at 62% of the flat tables' rate
 * (bench/README.md "A new ledger by day").
 */
const recordOutcomeTemplate = createQueryTemplate(
  (
    db: Kysely<Database>,
    {
      rows,
      set,
    }: {
      rows: Array<{ smsId: string; providerMessageId: string | null }>;
      set: {
        carrier: [{ name: string; receiptsNameSmsId: boolean }] | [];
        state: SendState;
        providerStatus: string | null;
        error: string | null;
        errorCode: string | null;
        now: number;
        submittedAt: number | null;
      };
    },
  ) => {
    const answers = sql.join(rows.map((r) => sql`(${r.smsId}, ${r.providerMessageId})`));
    // A template decides nothing from values; whether the provider is written is part of the input's shape.
    const carrier = set.carrier.map((c) => sql`provider = ${c.name}, receipts_name_sms_id = ${c.receiptsNameSmsId ? 1 : 0}, `);
    const statement = sql`with answers (sms_id, provider_message_id) as (values ${answers})
      update messages set ${sql.join(carrier, sql``)}state = ${set.state}, provider_message_id = answers.provider_message_id,
        provider_status = ${set.providerStatus}, error = ${set.error}, error_code = ${set.errorCode}, updated_at = ${set.now},
        submitted_at = ${set.submittedAt}
      from answers where messages.sms_id = answers.sms_id and messages.sms_id in (${sql.join(rows.map((r) => sql`${r.smsId}`))})`;
    return { compile: () => statement.compile(db) };
  },
);

/** The fields an UPDATE of recordSendOutcomes shares: equal in both, the two records go in one statement. */
function sameAnswer(a: SendOutcomeRecord, b: SendOutcomeRecord): boolean {
  return (
    a.provider === b.provider &&
    a.rerouted === b.rerouted &&
    a.receiptsNameSmsId === b.receiptsNameSmsId &&
    a.state === b.state &&
    a.providerStatus === b.providerStatus &&
    a.error === b.error &&
    a.errorCode === b.errorCode
  );
}

/**
 * Writes the provider's answers and counts them in delivery_stats; never touches delivery_status, which a fast
 * receipt may already have set.
 * Answers that differ only in the provider's message id share one UPDATE, so a flush of many sends costs a few
 * statements, not one each.
 */
export async function recordSendOutcomes(db: Db, tally: StatsTally, records: SendOutcomeRecord[], now: number): Promise<void> {
  // Nearly every record of a flush says what the one before it said (`submitted`, `accepted`): comparing the fields
  // with the last group's first record finds its group without building a key for each record.
  const groups: SendOutcomeRecord[][] = [];
  let keyed: Map<string, SendOutcomeRecord[]> | undefined;
  let last: SendOutcomeRecord[] | undefined;
  for (const r of records) {
    if (last !== undefined && sameAnswer(last[0]!, r)) {
      last.push(r);
      continue;
    }
    keyed ??= new Map();
    const key = JSON.stringify([r.provider, r.rerouted, r.receiptsNameSmsId, r.state, r.providerStatus, r.error, r.errorCode]);
    last = keyed.get(key);
    if (last) last.push(r);
    else {
      keyed.set(key, (last = [r]));
      groups.push(last);
    }
  }
  for (const group of groups) {
    const { provider, rerouted, receiptsNameSmsId, state, providerStatus, error, errorCode } = group[0]!;
    for (const part of statementChunks(group, ROWS_PER_STATEMENT)) {
      const rows = part.map((r) => ({ smsId: r.smsId, providerMessageId: r.providerMessageIds[0] ?? null }));
      await recordOutcomeTemplate(db, {
        rows,
        set: {
          carrier: rerouted ? [{ name: provider, receiptsNameSmsId }] : [],
          state,
          providerStatus,
          error,
          errorCode,
          now,
          submittedAt: state === 'submitted' ? now : null,
        },
      });
    }
  }
  const parts = records.flatMap((r) =>
    r.providerMessageIds.length > 1
      ? r.providerMessageIds.map((id, part_index) => ({ provider: r.provider, provider_message_id: id, sms_id: r.smsId, part_index, status: null }))
      : [],
  );
  for (let i = 0; i < parts.length; i += ROWS_PER_STATEMENT) {
    await db
      .insertInto('message_parts')
      .values(parts.slice(i, i + ROWS_PER_STATEMENT))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
  // In the same transaction, so the console's counts never disagree with the messages they count. The console
  // counts an uncertain send among the send errors (`retryable`); a receipt moves it to `submitted` (src/delivery/apply-receipts.ts).
  tally.push(...records.map((r) => ({ at: now, provider: r.provider, outcome: r.state === 'uncertain' ? ('retryable' as const) : r.state })));
}

/**
 * Sends still `dispatching` since before `leaseCutoff`: their process died, or the provider never answered before
 * a shutdown, so the call may have reached the provider. They become `uncertain` (a receipt still confirms them,
 * its provider is asked whether it has them before anything sends them again: src/delivery/lookups.ts), or
 * `submitted` when a receipt has already reported them:
 * the provider took them (the process died after the answer, before its record was written: src/sms/record.ts).
 * The sweep takes up to `limit` rows at a time; a claim (src/sms/claim.ts) names the rows it found past their lease,
 * so a retry and the sweep make the one same change. Returns the rows changed with the state each got.
 */
export async function expireDispatchLeases(db: Db, leaseCutoff: number, now: number, scope: { limit: number } | { smsIds: string[] } = { limit: 1_000 }) {
  if ('smsIds' in scope && scope.smsIds.length === 0) return [];
  const rows =
    'smsIds' in scope
      ? sql`${sql.join(scope.smsIds.map((id) => sql`${id}`))}`
      : sql`select sms_id from messages where state in ('dispatching', 'uncertain') and state = 'dispatching' and dispatched_at < ${leaseCutoff} limit ${scope.limit}`;
  const result = await sql<{ sms_id: string; provider: string; state: 'uncertain' | 'submitted' }>`
    update messages
    set state = case when delivery_source = 'receipt' then 'submitted' else 'uncertain' end,
        submitted_at = case when delivery_source = 'receipt' then ${now} else submitted_at end,
        lookup_result = case when delivery_source = 'receipt' then lookup_result else 'pending' end,
        updated_at = ${now}
    where sms_id in (${rows}) and state = 'dispatching' and dispatched_at < ${leaseCutoff}
    returning sms_id, provider, state`.execute(db);
  return result.rows;
}

/**
 * Messages with no delivery status since before `cutoff`, up to `limit`, marked `delivery_unknown` (source
 * `timeout`) and returned: those submitted (the provider took them; no terminal receipt came), those whose
 * send was left uncertain or dispatching (no answer, no receipt, no retry by the CRM), and lost sends their provider
 * did not have that the CRM never retried (src/delivery/lookups.ts). The UPDATE re-checks its
 * condition, so two sweeps cannot both mark one message.
 */
export async function markUnreportedAsUnknown(db: Db, cutoff: number, now: number, limit = 1_000) {
  const result = await sql<{ sms_id: string; activity_key: string; provider: string }>`
    update messages
    set delivery_status = 'delivery_unknown', delivery_source = 'timeout', completed_at = ${now}, updated_at = ${now}
    where sms_id in (
      select sms_id from messages where delivery_status is null and submitted_at <= ${cutoff}
      union all
      select sms_id from messages where state in ('dispatching', 'uncertain') and dispatched_at <= ${cutoff} and delivery_status is null
      union all
      select sms_id from messages where lookup_result = 'absent' and state = 'retryable' and dispatched_at <= ${cutoff} and delivery_status is null
      limit ${limit}
    )
      and delivery_status is null
    returning sms_id, activity_key, provider`.execute(db);
  return result.rows;
}
