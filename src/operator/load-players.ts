/**
 * Loading player data into the sql backend: shared by the admin API (one user per request) and `import users`
 * (thousands per transaction), so both store exactly the same thing.
 */
import type { Kysely } from 'kysely';
import { upsertUsers, writeConsents, type ConsentRow, type OperatorUserRow } from '../ledger/operator-data.js';
import type { Database } from '../ledger/schema.js';
import { userRecordSchema } from './crm-shapes.js';
import { playerE164 } from './player-phone.js';
import type { AdminUser } from './requests.js';

export interface LoadedUser {
  user: OperatorUserRow;
  /** Present when the input carried consents: they replace the user's stored consents. */
  consents?: ConsentRow[];
}

/** The stored record is what GET /userdetails answers, in the docs' key order, without the admin-only keys. */
export function toLoadedUser(input: AdminUser & { user_id: string }, at: number): LoadedUser {
  const { block_note, exclusion_note, consents, ...fields } = input;
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
  };
}

/** Writes users (and their consents where given) in one transaction. */
export async function saveLoadedUsers(db: Kysely<Database>, loaded: LoadedUser[], at: number): Promise<void> {
  // A user listed twice keeps its last version, as a sequence of PUTs would.
  const byId = new Map(loaded.map((l) => [l.user.user_id, l]));
  const unique = [...byId.values()];
  await db.transaction().execute(async (trx) => {
    await upsertUsers(trx, unique.map((l) => l.user));
    const withConsents = unique.filter((l) => l.consents);
    await writeConsents(trx, withConsents.flatMap((l) => l.consents!), at, withConsents.map((l) => l.user.user_id));
  });
}
