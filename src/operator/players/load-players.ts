/**
 * Loading player data into the sql backend: shared by the admin API (one user per request) and `import users`
 * (thousands per transaction), so both store exactly the same thing.
 */
import type { Kysely } from 'kysely';
import { decideUserChange } from '../../events/user-changes.js';
import { originOfRecord, thinUserEvent } from '../../crm/user-events.js';
import { enqueueEvents, type NewEvent } from '../../ledger/events.js';
import { findConsentsOfUsers, findUsersByIds, upsertUsers, writeConsents, type ConsentRow, type OperatorUserRow } from '../../ledger/operator-data.js';
import type { Database } from '../../ledger/schema.js';
import { userRecordSchema } from '../../crm/shapes.js';
import { playerE164 } from './player-phone.js';
import { consentRowOf } from './consent-rows.js';
import type { AdminUser } from '../requests.js';
import { findHeldSmsOptOuts, keepHeldSmsOptOut, restoreHeldSmsOptOuts } from './sms-opt-out-holds.js';
import { inTransaction } from '../../ledger/engine/db.js';

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
    consents: consents && [...new Map(consents.map((c) => [c.type, consentRowOf(record.user_id, c)])).values()],
    ...(consents_updated_at !== undefined ? { consentsAsOf: consents_updated_at } : {}),
  };
}

/**
 * Writes users (and their consents where given) in one transaction, with the events the changes cause
 * (src/events/user-changes.ts) in the same transaction, so a change is never without its event. Rows that did not
 * change are neither written nor announced: loading the same million users again sends nothing. A player's own sms
 * opt-out holds against a record that would undo it (sms-opt-out-holds.ts).
 */
export async function saveLoadedUsers(db: Kysely<Database>, loaded: LoadedUser[], at: number): Promise<{ written: number; events: number }> {
  // A user listed twice keeps its last version, as a sequence of PUTs would.
  const byId = new Map(loaded.map((l) => [l.user.user_id, l]));
  const unique = [...byId.values()];
  const ids = [...byId.keys()];
  return inTransaction(db, async (trx) => {
    const before = new Map((await findUsersByIds(trx, ids)).map((u) => [u.user_id, u]));
    const withConsents = unique.filter((l) => l.consents);
    const consentsBefore = new Map<string, ConsentRow[]>();
    for (const c of await findConsentsOfUsers(
      trx,
      withConsents.map((l) => l.user.user_id),
    )) {
      consentsBefore.set(c.user_id, [...(consentsBefore.get(c.user_id) ?? []), c]);
    }
    const held = await findHeldSmsOptOuts(
      trx,
      withConsents.map((l) => ({ userId: l.user.user_id, asOf: l.consentsAsOf })),
    );
    const users: OperatorUserRow[] = [];
    const consentUsers: LoadedUser[] = [];
    const events: NewEvent[] = [];
    for (const l of unique) {
      const id = l.user.user_id;
      const consents = l.consents && keepHeldSmsOptOut(id, l.consents, held);
      const change = decideUserChange(before.get(id), l.user, consentsBefore.get(id) ?? [], consents);
      if (change.writeUser) users.push(l.user);
      if (change.writeConsents) consentUsers.push({ ...l, consents });
      const origin = originOfRecord(l.user.record_json);
      for (const kind of change.events) events.push(thinUserEvent(kind, id, origin, at));
    }
    await upsertUsers(trx, users);
    await writeConsents(
      trx,
      consentUsers.flatMap((l) => l.consents!),
      at,
      consentUsers.map((l) => l.user.user_id),
    );
    await restoreHeldSmsOptOuts(
      trx,
      consentUsers.map((l) => l.user.user_id),
      held,
    );
    await enqueueEvents(trx, events, at);
    return { written: users.length + consentUsers.length, events: events.length };
  });
}
