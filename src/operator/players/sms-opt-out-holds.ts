/**
 * Opt-outs hold against the operator's data (docs/consents.md). An sms opt-out the player
 * made themselves (a STOP by SMS, or a provider's STOP list: operator_consents.source) stays in place when an
 * operator load would opt them back in with consents older than the opt-out, or that do not say when they were
 * set (consents_updated_at): the newest change wins, and the player's own word is newer than data that cannot say
 * it is not. A record whose consents_updated_at is at or after the opt-out is the deliberate override.
 */
import type { Transaction } from 'kysely';
import { findPlayerSmsOptOuts, writeSmsConsentChanges } from '../../ledger/consents.js';
import type { ConsentRow } from '../../ledger/operator-data.js';
import type { ConsentSource, Database } from '../../ledger/schema.js';

export type HeldOptOuts = ReadonlyMap<string, { at: number; source: ConsentSource }>;

/** Newest wins: the player's own opt-out stays unless the record says its consents are at least as recent. */
export function smsOptOutHolds(optOutAt: number, recordAsOf: number | undefined): boolean {
  return recordAsOf === undefined || recordAsOf < optOutAt;
}

/** The players' own sms opt-outs that these records (user_id, consents_updated_at) do not override. */
export async function findHeldSmsOptOuts(trx: Transaction<Database>, records: ReadonlyArray<{ userId: string; asOf?: number }>): Promise<HeldOptOuts> {
  const optOuts = await findPlayerSmsOptOuts(
    trx,
    records.map((r) => r.userId),
  );
  const held = new Map<string, { at: number; source: ConsentSource }>();
  for (const r of records) {
    const optOut = optOuts.get(r.userId);
    if (optOut && smsOptOutHolds(optOut.at, r.asOf)) held.set(r.userId, optOut);
  }
  return held;
}

/** A user's consents to store: the record's, with sms opted out when the player's own opt-out holds. */
export function keepHeldSmsOptOut(userId: string, rows: ConsentRow[], held: HeldOptOuts): ConsentRow[] {
  if (!held.has(userId)) return rows;
  return [...rows.filter((r) => r.type !== 'sms'), { user_id: userId, type: 'sms', opted_in: 0 }];
}

/** After the consents of these users were replaced, their held opt-outs get back who made them and when. */
export async function restoreHeldSmsOptOuts(trx: Transaction<Database>, userIds: readonly string[], held: HeldOptOuts): Promise<void> {
  const changes = userIds.flatMap((userId) => {
    const optOut = held.get(userId);
    return optOut ? [{ userId, optedIn: false, at: optOut.at, source: optOut.source }] : [];
  });
  await writeSmsConsentChanges(trx, changes);
}
