/** Repository for the `messages` table: functions that take `db` (or a transaction) first. */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { StatsTally } from './delivery-stats.js';
import { ROWS_PER_STATEMENT, statementChunks } from './chunks.js';
import { dialectFlagsOf } from './engine/db.js';
import { createQueryTemplate } from './query-template.js';
import type { Database, MessagesTable, MessageUserRecipientsTable, RecipientMessagesTable, SendOutcome, SendState } from './schema.js';
import { bucketAt, dayOf } from './time-buckets.js';

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

const insertMessagesTemplate = createQueryTemplate((db: Kysely<Database>, rows: Array<NewMessage & Pick<MessagesTable, 'state' | 'attempts'>>) =>
  db
    .insertInto('messages')
    .values(rows)
    .onConflict((oc) => oc.column('activity_key').doNothing())
    .returning('activity_key'),
);

const insertPairsTemplate = createQueryTemplate((db: Kysely<Database>, rows: MessageUserRecipientsTable[]) =>
  db
    .insertInto('message_user_recipients')
    .values(rows)
    .onConflict((oc) => oc.columns(['user_id', 'recipient']).doNothing()),
);

/**
 * Records each row's (player, number) for the search by player (message-search.ts), in the transaction that stores
 * the messages. Pairs of rows that turn out to be repeats are recorded too: a pair with no message of its own is
 * harmless, a missing one would hide messages.
 */
async function recordUserRecipients(db: Db, rows: ReadonlyArray<Pick<NewMessage, 'user_id' | 'recipient'>>): Promise<void> {
  const seen = new Set<string>();
  const pairs: MessageUserRecipientsTable[] = [];
  for (const { user_id, recipient } of rows) {
    if (user_id === null) continue;
    // A batch often holds one player's number more than once; one row per statement is enough (PostgreSQL refuses
    // the same key twice in one INSERT … ON CONFLICT).
    const key = `${user_id}\u0000${recipient}`;
    if (seen.has(key)) continue;
    seen.add(key);
    pairs.push({ user_id, recipient });
  }
  for (const part of statementChunks(pairs, ROWS_PER_STATEMENT)) await insertPairsTemplate(db, part);
}

const insertRecipientMessagesTemplate = createQueryTemplate((db: Kysely<Database>, rows: RecipientMessagesTable[]) =>
  db
    .insertInto('recipient_messages')
    .values(rows)
    .onConflict((oc) => oc.columns(['day', 'recipient', 'created_at', 'sms_id']).doNothing()),
);

/** Each inserted message's number by its day (recipient_messages), in the transaction that stores the messages. */
async function recordRecipientMessages(
  db: Db,
  rows: ReadonlyArray<Pick<NewMessage, 'activity_key' | 'sms_id' | 'recipient' | 'created_at'>>,
  inserted: Set<string>,
): Promise<void> {
  if (!dialectFlagsOf(db).writesNumberEntries) return;
  const entries: RecipientMessagesTable[] = [];
  for (const r of rows)
    if (inserted.has(r.activity_key)) entries.push({ day: bucketAt(r.created_at), recipient: r.recipient, created_at: r.created_at, sms_id: r.sms_id });
  for (const part of statementChunks(entries, ROWS_PER_STATEMENT)) await insertRecipientMessagesTemplate(db, part);
}

/** Inserts the rows whose activity_key is new; returns the keys that were inserted. */
export async function insertNewMessages(db: Db, rows: NewMessage[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) {
    const chunk = part.map((r) => ({ ...r, state: 'dispatching' as const, attempts: 1 }));
    const result = await insertMessagesTemplate(db, chunk);
    for (const r of result.rows) inserted.add(r.activity_key);
  }
  await recordUserRecipients(db, rows);
  await recordRecipientMessages(db, rows, inserted);
  return inserted;
}

/** Inserts messages accepted inside their quiet hours, `held` until `held_until` (held-sends.ts); returns the keys that were new. */
export async function insertHeldMessageRows(db: Db, rows: Array<NewMessage & Pick<MessagesTable, 'held_until'>>): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const part of statementChunks(rows, ROWS_PER_STATEMENT)) {
    const result = await db
      .insertInto('messages')
      .values(part.map((r) => ({ ...r, state: 'held' as const, attempts: 0 })))
      .onConflict((oc) => oc.column('activity_key').doNothing())
      .returning('activity_key')
      .execute();
    for (const r of result) inserted.add(r.activity_key);
  }
  await recordUserRecipients(db, rows);
  await recordRecipientMessages(db, rows, inserted);
  return inserted;
}

/** Inserts messages refused before any provider call (suppression.ts); returns the keys that were new. */
export async function insertRefusedMessages(db: Db, rows: Array<NewMessage & Pick<MessagesTable, 'error' | 'error_code'>>): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(i, i + ROWS_PER_STATEMENT).map((r) => ({ ...r, state: 'rejected' as const, attempts: 0 }));
    const result = await db
      .insertInto('messages')
      .values(chunk)
      .onConflict((oc) => oc.column('activity_key').doNothing())
      .returning('activity_key')
      .execute();
    for (const r of result) inserted.add(r.activity_key);
  }
  await recordUserRecipients(db, rows);
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

export async function findMessagesByActivityKeys(db: Db, keys: string[]): Promise<MessageRow[]> {
  if (keys.length === 0) return [];
  return db.selectFrom('messages').selectAll().where('activity_key', 'in', keys).execute();
}

export async function findMessageBySmsId(db: Db, smsId: string): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirst();
}

export async function findMessageByActivityKey(db: Db, key: string): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('activity_key', '=', key).executeTakeFirst();
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
  if (!dialectFlagsOf(db).writesNumberEntries) return true;
  // A retry may carry another number: it gets its entry too (readers skip the old one, which no longer matches the
  // message's number).
  await sql`insert into recipient_messages (day, recipient, created_at, sms_id)
    select ${dayOf()}, recipient, created_at, sms_id from messages where sms_id = ${smsId}
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
 * the group, and the most expensive statement of a batch before this.)
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
      from answers where messages.sms_id = answers.sms_id`;
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
