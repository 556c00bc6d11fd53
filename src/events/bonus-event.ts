/**
 * The bonus event's two rules (docs/crm-interface.md, "Bonus event record"): exactly one event per status change
 * except Ongoing, and `crm_references` carried back from the credit the CRM asked for. Pure functions.
 */
import type { CreditRow } from '../ledger/credits.js';
import { crmReferencesObject } from '../crm/references.js';
import { RawJson } from '../http/exact-json.js';
import { editTopLevelMembers } from '../http/json-member-edits.js';

/** The once-only key of a bonus event, or null for Ongoing, which may be sent any number of times. */
export function bonusOnceKey(userBonusId: string, status: string): string | null {
  return status === 'Ongoing' ? null : JSON.stringify(['bonus', userBonusId, status]);
}

/**
 * A credit's stored X-Crm-* values as the CRM's example types them (id and trigger_hash strings, other ids integers,
 * of any size: one beyond 2^53 is written as its digits, never rounded).
 */
export function referencesOfCredit(credit: CreditRow): Record<string, string | number | RawJson> {
  return crmReferencesObject(
    {
      id: credit.crm_id,
      action_id: credit.crm_action_id,
      action_group_id: credit.crm_action_group_id,
      action_communication_profile_id: credit.crm_action_communication_profile_id,
      activity_id: credit.crm_activity_id,
      trigger_hash: credit.crm_trigger_hash,
      player_origin_id: credit.crm_player_origin_id,
    },
    (digits) => new RawJson(digits),
  );
}

/**
 * The body sent to the CRM: the received text without our `credit_id`, plus `crm_references` from the matched
 * credit, every other byte as received (a 64-bit id keeps every digit; src/http/json-member-edits.ts edits those
 * members only). References the platform sent itself are kept; a credit without any X-Crm-* header (not triggered by the
 * CRM) adds none, and neither does no credit.
 */
export function bonusBodyForCrm(received: string, credit: CreditRow | undefined): string {
  const refs = credit ? referencesOfCredit(credit) : {};
  const addIfAbsent = Object.keys(refs).length > 0 ? { key: 'crm_references', value: refs } : undefined;
  return editTopLevelMembers(received, { remove: 'credit_id', addIfAbsent });
}
