/**
 * The one place an SMS consent change the gateway learns of itself is written: a STOP or START keyword
 * (src/consents/inbound.ts) or a provider's opt-out error (src/consents/opt-outs.ts). Callers pass their
 * transaction, so the change, a User Consents event for the CRM (events outbox, src/ledger/events.ts) and whatever
 * caused the change commit together: the CRM never misses a change, and never hears of one that was rolled back.
 * Which event a change causes is the caller's decision (`eventFor`); storage only writes it.
 */
import type { Transaction } from 'kysely';
import { findUsersWithSmsConsent, writeSmsConsentChanges, type SmsConsentChange } from './consents.js';
import { enqueueEvents, type NewEvent } from './events.js';
import type { Database } from './schema.js';

export type { SmsConsentChange };

/**
 * Writes the changes of players that exist (a repeated STOP still records who opted out and when, which keeps the
 * opt-out against older operator data) and queues an event for each player whose sms consent, as GET /userconsents
 * answers it, changed. Answers the user_ids written.
 */
export async function recordSmsConsentChanges(
  trx: Transaction<Database>,
  changes: readonly SmsConsentChange[],
  eventFor: (userId: string, recordJson: string, at: number) => NewEvent,
): Promise<string[]> {
  if (changes.length === 0) return [];
  const latest = [...new Map(changes.map((c) => [c.userId, c])).values()];
  const users = await findUsersWithSmsConsent(
    trx,
    latest.map((c) => c.userId),
  );
  const known = latest.filter((c) => users.has(c.userId));
  await writeSmsConsentChanges(trx, known);
  // A consent never set reads as opted out (sql-backend.ts), so opting such a player out changes nothing the CRM sees.
  const changed = known.filter((c) => c.optedIn !== (users.get(c.userId)!.sms_opted_in === 1));
  await enqueueEvents(
    trx,
    changed.map((c) => ({ ...eventFor(c.userId, users.get(c.userId)!.record_json, c.at), ...(c.smsId ? { smsId: c.smsId } : {}) })),
    changed[0]?.at,
  );
  return known.map((c) => c.userId);
}
