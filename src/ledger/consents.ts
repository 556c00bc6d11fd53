/**
 * Repository for consent-aware sending (src/consents/suppression.ts) and opt-outs by SMS (src/consents/): what the send
 * path reads about a player, the SMS consent changes a STOP, START or a provider's opt-out error make, and the
 * inbound messages kept. Functions take `db` (or a transaction) first.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { createQueryTemplate } from './query-template.js';
import type { ConsentSource, Database, InboundMessagesTable } from './schema.js';
import { ROWS_PER_STATEMENT, IDS_PER_STATEMENT, idChunks } from './chunks.js';
import { recordKey, type PlayerCountryRow } from './operator-data.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * What the send path needs about a player; `sms_opted_in` is null when the player's sms consent was never set. The
 * record's place (PlayerCountryRow) comes in the same read: the claim reads the recipient with it.
 */
export interface SmsStandingRow extends PlayerCountryRow {
  is_blocked: number;
  is_excluded: number;
  sms_opted_in: number | null;
}

/** Primary-key reads of both tables: one statement for a whole claim flush. */
const standingsTemplate = createQueryTemplate((db: Kysely<Database>, ids: string[]) =>
  db
    .selectFrom('operator_users as u')
    .leftJoin('operator_consents as c', (join) => join.onRef('c.user_id', '=', 'u.user_id').on('c.type', '=', sql.lit('sms')))
    .select([
      'u.user_id',
      'u.is_blocked',
      'u.is_excluded',
      'c.opted_in as sms_opted_in',
      'u.mobile_e164',
      recordKey(db, 'country').as('country'),
      recordKey(db, 'mobile_prefix').as('mobile_prefix'),
    ])
    .where('u.user_id', 'in', ids),
);

/** The standing of each listed player that the operator data knows; unknown players are absent from the map. */
export async function findSmsStandings(db: Db, userIds: readonly string[]): Promise<Map<string, SmsStandingRow>> {
  const found = new Map<string, SmsStandingRow>();
  const unique = [...new Set(userIds)];
  for (const chunk of idChunks(unique, ROWS_PER_STATEMENT)) {
    const result = await standingsTemplate(db as Kysely<Database>, chunk);
    for (const row of result.rows as SmsStandingRow[]) found.set(row.user_id, row);
  }
  return found;
}

export interface SmsConsentChange {
  userId: string;
  optedIn: boolean;
  source: ConsentSource;
  at: number;
  /** The message whose send reported the opt-out (a provider's error), recorded on the User Consents event. */
  smsId?: string;
}

/** Sets the sms consent of each player (who must exist), remembering who changed it and when. */
export async function writeSmsConsentChanges(trx: Transaction<Database>, changes: readonly SmsConsentChange[]): Promise<void> {
  // One row per player (PostgreSQL refuses an upsert touching a row twice): the last change wins.
  const rows = [...new Map(changes.map((c) => [c.userId, c])).values()].map((c) => ({
    user_id: c.userId,
    type: 'sms',
    opted_in: c.optedIn ? 1 : 0,
    updated_at: c.at,
    source: c.source,
  }));
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    await trx
      .insertInto('operator_consents')
      .values(rows.slice(i, i + ROWS_PER_STATEMENT))
      .onConflict((oc) =>
        oc.columns(['user_id', 'type']).doUpdateSet((eb) => ({
          opted_in: eb.ref('excluded.opted_in'),
          updated_at: eb.ref('excluded.updated_at'),
          source: eb.ref('excluded.source'),
        })),
      )
      .execute();
  }
}

/**
 * Opt-outs the players made themselves (by SMS or through a provider's STOP list): user_id → when. An operator
 * load does not opt these players back in with a record older than that (src/operator/players/load-players.ts).
 */
export async function findPlayerSmsOptOuts(db: Db, userIds: readonly string[]): Promise<Map<string, { at: number; source: ConsentSource }>> {
  const found = new Map<string, { at: number; source: ConsentSource }>();
  for (let i = 0; i < userIds.length; i += IDS_PER_STATEMENT) {
    const rows = await db
      .selectFrom('operator_consents')
      .select(['user_id', 'updated_at', 'source'])
      .where('user_id', 'in', userIds.slice(i, i + IDS_PER_STATEMENT))
      .where('type', '=', 'sms')
      .where('opted_in', '=', 0)
      .where('source', 'is not', null)
      .execute();
    for (const r of rows) found.set(r.user_id, { at: Number(r.updated_at), source: r.source! });
  }
  return found;
}

/** The listed players that exist, with their record (for the event's origin) and current sms consent (null: never set). */
export async function findUsersWithSmsConsent(trx: Transaction<Database>, userIds: readonly string[]) {
  const found = new Map<string, { record_json: string; sms_opted_in: number | null }>();
  for (let i = 0; i < userIds.length; i += IDS_PER_STATEMENT) {
    const rows = await trx
      .selectFrom('operator_users as u')
      .leftJoin('operator_consents as c', (join) => join.onRef('c.user_id', '=', 'u.user_id').on('c.type', '=', 'sms'))
      .select(['u.user_id', 'u.record_json', 'c.opted_in as sms_opted_in'])
      .where('u.user_id', 'in', userIds.slice(i, i + IDS_PER_STATEMENT))
      .execute();
    for (const r of rows) found.set(r.user_id, { record_json: r.record_json, sms_opted_in: r.sms_opted_in });
  }
  return found;
}

/** Players whose mobile is this E.164 number (several accounts may share one phone). */
export async function findUserIdsByMobile(db: Db, e164: string, limit = 100): Promise<string[]> {
  const rows = await db.selectFrom('operator_users').select('user_id').where('mobile_e164', '=', e164).orderBy('user_id').limit(limit).execute();
  return rows.map((r) => r.user_id);
}

export type NewInboundMessage = Omit<InboundMessagesTable, 'id'>;

/** Stores an inbound message once per provider message id; false when it was already stored (a provider retry). */
export async function insertInboundMessage(trx: Transaction<Database>, row: NewInboundMessage): Promise<boolean> {
  const inserted = await trx
    .insertInto('inbound_messages')
    .values(row)
    .onConflict((oc) => oc.columns(['provider', 'provider_message_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function findInboundMessagesFrom(db: Db, e164: string, limit = 100) {
  return db
    .selectFrom('inbound_messages')
    .selectAll()
    .where('from_number', '=', e164)
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}
