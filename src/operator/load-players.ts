/**
 * Loading player data into the sql backend: shared by the admin API (one user per request) and `import users`
 * (thousands per transaction), so both store exactly the same thing.
 */
import type { Kysely, Transaction } from 'kysely';
import { findPlayerSmsOptOuts, writeSmsConsentChanges } from '../ledger/consents.js';
import { upsertUsers, writeConsents, type ConsentRow, type OperatorUserRow } from '../ledger/operator-data.js';
import type { Database } from '../ledger/schema.js';
import { userRecordSchema } from './crm-shapes.js';
import { playerE164 } from './player-phone.js';
import type { AdminUser } from './requests.js';

export interface LoadedUser {
  user: OperatorUserRow;
  /** Present when the input carried consents: they replace the user's stored consents. */
  consents?: ConsentRow[];
  /** consents_updated_at (epoch ms): when the operator's consents were last changed, if the input said. */
  consentsAsOf?: number;
}

/** The stored record is what GET /userdetails answers, in the docs' key order, without the admin-only keys. */
export function toLoadedUser(input: AdminUser & { user_id: string }, at: number): LoadedUser {
  const { block_note, exclusion_note, consents, consents_updated_at, ...fields } = input;
  const record = userRecordSchema.parse(fields);
  return {
    user: {
      user_id: record.user_id,
      record_json: JSON.stringify(record),
      is_blocked: record.is_blocked ? 1 : 0,
      is_excluded: record.is_excluded ? 1 : 0,
      block_note: block_note ?? '',
      exclusion_note: exclusion_note ?? '',
      updated_at: at,
      mobile_e164: playerE164(record.mobile_prefix, record.mobile),
    },
    // A type listed twice keeps its last value (PostgreSQL refuses one upsert touching a row twice).
    consents: consents && [...new Map(consents.map((c) => [c.type, { user_id: record.user_id, type: c.type, opted_in: c.opted_in ? 1 : 0 }])).values()],
    ...(consents_updated_at !== undefined ? { consentsAsOf: consents_updated_at } : {}),
  };
}

/**
 * Replaces the consents of the loaded users, except that an sms opt-out a player made themselves (by SMS, or
 * through a provider's STOP list: operator_consents.source) after the record's consents_updated_at, or with a record
 * that does not say when, is kept: the newest change wins, and the player's own word is newer than data that
 * cannot say it is not (README: Consents and opt-outs).
 */
export async function replaceOperatorConsents(trx: Transaction<Database>, sets: readonly ConsentSet[], at: number): Promise<void> {
  const users = sets.map((s) => s.userId);
  const optOuts = await findPlayerSmsOptOuts(trx, users);
  const held = new Map(
    sets.flatMap((s) => {
      const optOut = optOuts.get(s.userId);
      return optOut !== undefined && smsOptOutHolds(optOut.at, s.asOf) ? [[s.userId, optOut] as const] : [];
    }),
  );
  const rows = sets.flatMap((s) => s.rows.filter((c) => !(c.type === 'sms' && held.has(s.userId))));
  await writeConsents(trx, rows, at, users);
  await writeSmsConsentChanges(trx, [...held].map(([userId, optOut]) => ({ userId, optedIn: false, ...optOut })));
}

/** Newest wins: the player's own opt-out stays unless the record says its consents are at least as recent. */
export function smsOptOutHolds(optOutAt: number, recordAsOf: number | undefined): boolean {
  return recordAsOf === undefined || recordAsOf < optOutAt;
}

/** One user's consents as an operator load replaces them; `asOf` is the record's consents_updated_at. */
export interface ConsentSet {
  userId: string;
  rows: ConsentRow[];
  asOf?: number;
}

/** Writes users (and their consents where given) in one transaction. */
export async function saveLoadedUsers(db: Kysely<Database>, loaded: LoadedUser[], at: number): Promise<void> {
  // A user listed twice keeps its last version, as a sequence of PUTs would.
  const byId = new Map(loaded.map((l) => [l.user.user_id, l]));
  const unique = [...byId.values()];
  await db.transaction().execute(async (trx) => {
    await upsertUsers(trx, unique.map((l) => l.user));
    const sets = unique.flatMap((l) => (l.consents ? [{ userId: l.user.user_id, rows: l.consents, asOf: l.consentsAsOf }] : []));
    await replaceOperatorConsents(trx, sets, at);
  });
}
