/**
 * The one place an SMS consent change the gateway learns of itself is written: a STOP or START keyword
 * (src/consents/inbound.ts) or a provider's opt-out error (src/consents/opt-outs.ts). Callers pass their
 * transaction, so the change, a User Consents event for the CRM (events outbox, src/ledger/events.ts) and whatever
 * caused the change commit together: the CRM never misses a change, and never hears of one that was rolled back.
 */
import type { Transaction } from 'kysely';
import { userConsentsEvent, originOfRecord } from '../events/user-events.js';
import { writeSmsConsentChanges, type SmsConsentChange } from './consents.js';
import { enqueueEvents } from './events.js';
import type { Database } from './schema.js';

export type { SmsConsentChange };

/** Writes the changes of players that exist and queues one event each; answers the user_ids changed. */
export async function recordSmsConsentChanges(trx: Transaction<Database>, changes: readonly SmsConsentChange[]): Promise<string[]> {
  if (changes.length === 0) return [];
  const users = await trx.selectFrom('operator_users').select(['user_id', 'record_json']).where('user_id', 'in', [...new Set(changes.map((c) => c.userId))]).execute();
  const origins = new Map(users.map((u) => [u.user_id, originOfRecord(u.record_json)]));
  const known = changes.filter((c) => origins.has(c.userId));
  await writeSmsConsentChanges(trx, known);
  const latest = [...new Map(known.map((c) => [c.userId, c])).values()];
  await enqueueEvents(trx, latest.map((c) => userConsentsEvent(c.userId, origins.get(c.userId)!, c.at)), latest[0]?.at);
  return latest.map((c) => c.userId);
}
