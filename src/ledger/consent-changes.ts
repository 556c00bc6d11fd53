/**
 * The one place an SMS consent change is written: by a STOP or START keyword (src/consents/inbound.ts) or a
 * provider's opt-out error (src/consents/opt-outs.ts). Callers pass their transaction, so the change commits
 * together with whatever caused it, and so does anything else the change must produce (issue 14 item 4: a User
 * Consents event in the events outbox, which the events branch adds here).
 */
import type { Transaction } from 'kysely';
import { writeSmsConsentChanges, type SmsConsentChange } from './consents.js';
import type { Database } from './schema.js';

export type { SmsConsentChange };

export async function recordSmsConsentChanges(trx: Transaction<Database>, changes: readonly SmsConsentChange[]): Promise<void> {
  if (changes.length === 0) return;
  await writeSmsConsentChanges(trx, changes);
}
