/** Repository for the sql operator backend's player data: users, consents, bonuses. Functions take `db` first. */
import { sql, type Kysely, type Transaction } from 'kysely';
import { dialectFlagsOf } from './engine/flags.js';
import { IDS_PER_STATEMENT, idChunks } from './chunks.js';
import { createQueryTemplate } from './query-template.js';
import type { Database, OperatorBonusesTable, OperatorUsersTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;
export type OperatorUserRow = OperatorUsersTable;
export interface ConsentRow {
  user_id: string;
  type: string;
  opted_in: number;
  /** UK product-level consents: a JSON array of product names; null or absent for no product split. */
  products?: string | null;
}

/** Rows per INSERT statement: far below SQLite's bound-parameter limit for these narrow rows. */
const CHUNK = 500;

/**
 * Inserts or replaces users. It writes first and reads nothing before: a SQLite transaction that read before writing
 * fails (SQLITE_BUSY_SNAPSHOT) instead of waiting when another process wrote in between.
 */
export async function upsertUsers(db: Db, rows: OperatorUserRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto('operator_users')
      .values(rows.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc.column('user_id').doUpdateSet((eb) => ({
          record_json: eb.ref('excluded.record_json'),
          is_blocked: eb.ref('excluded.is_blocked'),
          is_excluded: eb.ref('excluded.is_excluded'),
          block_note: eb.ref('excluded.block_note'),
          exclusion_note: eb.ref('excluded.exclusion_note'),
          updated_at: eb.ref('excluded.updated_at'),
          mobile_e164: eb.ref('excluded.mobile_e164'),
        })),
      )
      .execute();
  }
}

export async function findUser(db: Db, userId: string): Promise<OperatorUserRow | undefined> {
  return db.selectFrom('operator_users').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

export async function userExists(db: Db, userId: string): Promise<boolean> {
  return (await db.selectFrom('operator_users').select('user_id').where('user_id', '=', userId).executeTakeFirst()) !== undefined;
}

/** Sets the given consent types; with `replaceUsers` the listed users' other types are removed first. */
export async function writeConsents(db: Db, rows: ConsentRow[], at: number, replaceUsers: string[] = []): Promise<void> {
  for (let i = 0; i < replaceUsers.length; i += CHUNK) {
    await db
      .deleteFrom('operator_consents')
      .where('user_id', 'in', replaceUsers.slice(i, i + CHUNK))
      .execute();
  }
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto('operator_consents')
      .values(rows.slice(i, i + CHUNK).map((r) => ({ ...r, products: r.products ?? null, updated_at: at })))
      .onConflict((oc) =>
        // The operator's (or the CRM's) word now: no longer a change the player made by SMS.
        oc.columns(['user_id', 'type']).doUpdateSet((eb) => ({
          opted_in: eb.ref('excluded.opted_in'),
          products: eb.ref('excluded.products'),
          updated_at: eb.ref('excluded.updated_at'),
          source: null,
        })),
      )
      .execute();
  }
}

export async function findConsents(db: Db, userId: string): Promise<ConsentRow[]> {
  return db.selectFrom('operator_consents').select(['user_id', 'type', 'opted_in', 'products']).where('user_id', '=', userId).execute();
}

export async function replaceBonuses(db: Db, bonuses: Array<Omit<OperatorBonusesTable, 'position'>>): Promise<void> {
  await db.deleteFrom('operator_bonuses').execute();
  const rows = bonuses.map((b, position) => ({ ...b, position }));
  for (let i = 0; i < rows.length; i += CHUNK)
    await db
      .insertInto('operator_bonuses')
      .values(rows.slice(i, i + CHUNK))
      .execute();
}

export async function listBonuses(db: Db): Promise<Array<{ text: string; value: string }>> {
  return db.selectFrom('operator_bonuses').select(['text', 'value']).orderBy('position').execute();
}

export async function bonusExists(db: Db, value: string): Promise<boolean> {
  return (await db.selectFrom('operator_bonuses').select('value').where('value', '=', value).executeTakeFirst()) !== undefined;
}

/** A page of reconciliation ids, already encoded: `"id1","id2",…` (count ids; last = the keyset cursor). */
export interface EncodedIdPage {
  json: string;
  count: number;
  last: string;
}

/**
 * The ids of a page joined as JSON strings by the database itself: building a JS object per row cost more than the
 * query (measured on SQLite: ~2.5 µs a row against ~0.6 µs). No ORDER BY inside the aggregate: it made SQLite sort
 * every page again (3.5× slower), the CRM needs no order within the list, and the keyset cursor is max(user_id),
 * which does not depend on it. The two dialects spell this aggregate differently.
 */
function jsonIdList(db: Db) {
  return dialectFlagsOf(db).kind === 'postgres'
    ? sql<string | null>`string_agg(to_json(user_id)::text, ',')`
    : sql<string | null>`group_concat(json_quote(user_id), ',')`;
}

/**
 * Opted in for `product`: no product split (in for every product), or the product in the stored list. The list is
 * read as JSON by the database, so a product name is matched whole, whatever characters it holds.
 */
function hasProduct(db: Db, product: string) {
  return dialectFlagsOf(db).kind === 'postgres'
    ? sql<boolean>`(products is null or products::jsonb ? ${product})`
    : sql<boolean>`(products is null or exists (select 1 from json_each(products) where value = ${product}))`;
}

/**
 * One keyset page of reconciliation ids: users with a flag set, or with a consent type opted in, after `after` in
 * user_id order. The predicates repeat the partial indexes' conditions word for word so both dialects use them
 * (a literal 1, not a bound parameter: SQLite uses a partial index only when the WHERE clause visibly implies it).
 */
export async function findReconciliationPage(
  db: Db,
  selector: { flag: 'is_blocked' | 'is_excluded' } | { consent: string; product?: string },
  after: string | null,
  limit: number,
): Promise<EncodedIdPage> {
  const page =
    'flag' in selector
      ? db
          .selectFrom('operator_users')
          .select('user_id')
          .where(selector.flag, '=', sql.lit(1))
          .$if(after !== null, (q) => q.where('user_id', '>', after!))
          .orderBy('user_id')
          .limit(limit)
          .as('page')
      : db
          .selectFrom('operator_consents')
          .select('user_id')
          .where('type', '=', selector.consent)
          .where('opted_in', '=', sql.lit(1))
          .$if('product' in selector && selector.product !== undefined, (q) => q.where(hasProduct(db, (selector as { product: string }).product)))
          .$if(after !== null, (q) => q.where('user_id', '>', after!))
          .orderBy('user_id')
          .limit(limit)
          .as('page');
  const row = await db
    .selectFrom(page)
    .select([jsonIdList(db).as('json'), sql<string | null>`max(user_id)`.as('last'), sql<number>`count(*)`.as('count')])
    .executeTakeFirstOrThrow();
  return { json: row.json ?? '', count: Number(row.count), last: row.last ?? '' };
}

/** The stored rows of the given users (absent ones are simply missing), read in chunks. */
export async function findUsersByIds(db: Db, userIds: string[]): Promise<OperatorUserRow[]> {
  const rows: OperatorUserRow[] = [];
  for (let i = 0; i < userIds.length; i += CHUNK) {
    rows.push(
      ...(await db
        .selectFrom('operator_users')
        .selectAll()
        .where('user_id', 'in', userIds.slice(i, i + CHUNK))
        .execute()),
    );
  }
  return rows;
}

/** The stored consents of the given users, read in chunks. */
export async function findConsentsOfUsers(db: Db, userIds: string[]): Promise<ConsentRow[]> {
  const rows: ConsentRow[] = [];
  for (let i = 0; i < userIds.length; i += CHUNK) {
    rows.push(
      ...(await db
        .selectFrom('operator_consents')
        .select(['user_id', 'type', 'opted_in', 'products'])
        .where('user_id', 'in', userIds.slice(i, i + CHUNK))
        .execute()),
    );
  }
  return rows;
}

/** Where a player is, as their record says (src/sms/recipient-reading.ts): "" where the record has nothing. */
export interface PlayerCountryRow {
  user_id: string;
  country: string | null;
  mobile_prefix: string | null;
  mobile_e164: string | null;
}

/** The two keys read out of the stored record by the database itself, which spells it per dialect. */
export function recordKey(db: Kysely<any>, key: 'country' | 'mobile_prefix') {
  return dialectFlagsOf(db).kind === 'postgres'
    ? sql<string | null>`(record_json::json ->> ${sql.lit(key)})`
    : sql<string | null>`json_extract(record_json, ${sql.lit(`$.${key}`)})`;
}

/** Primary-key reads: one statement for up to IDS_PER_STATEMENT players, so one for a whole batch request. */
const playerCountriesTemplate = createQueryTemplate((db: Kysely<Database>, ids: string[]) =>
  db
    .selectFrom('operator_users')
    .select(['user_id', 'mobile_e164', recordKey(db, 'country').as('country'), recordKey(db, 'mobile_prefix').as('mobile_prefix')])
    .where('user_id', 'in', ids),
);

/** The country, mobile_prefix and number of each listed player the data knows; unknown players are absent from the map. */
export async function findPlayerCountries(db: Db, userIds: readonly string[]): Promise<Map<string, PlayerCountryRow>> {
  const found = new Map<string, PlayerCountryRow>();
  for (const chunk of idChunks([...new Set(userIds)], IDS_PER_STATEMENT)) {
    const result = await playerCountriesTemplate(db as Kysely<Database>, chunk);
    for (const row of result.rows as PlayerCountryRow[]) found.set(row.user_id, row);
  }
  return found;
}
