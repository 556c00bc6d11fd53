/**
 * The bonus event's two rules (docs/crm-interface.md, "Bonus event record"): exactly one event per status change
 * except Ongoing, and `crm_references` carried back from the credit the CRM asked for. Pure functions.
 * A status change is a player's: the platform numbers `user_bonus_id` as it likes, so two players may share one.
 */
import type { CreditRow } from '../ledger/credits.js';
import { crmReferencesObject } from '../crm/references.js';
import { RawJson } from '../http/exact-json.js';
import { editTopLevelMembers } from '../http/json-member-edits.js';

/**
 * The once-only key of a bonus event: the player (`user_id` as the outbox orders by it), `user_bonus_id` and
 * `status`; null for Ongoing, which may be sent any number of times. Written as a JSON list, so no value can run
 * into the next; migration 2026-11-28-40-bonus-once-per-player wrote the keys stored before in this form.
 */
export function bonusOnceKey(userId: string, userBonusId: string, status: string): string | null {
  return status === 'Ongoing' ? null : JSON.stringify(['bonus', userId, userBonusId, status]);
}

/** The event that took a once-only key first: its id and its body's fingerprint (null if accepted before they were kept). */
export interface FirstEvent {
  eventId: string;
  fingerprint: string | null;
}

export type BonusRepeatDecision = { action: 'replay'; eventId: string } | { action: 'conflict'; eventId: string; error: string };

/**
 * A bonus event whose key was taken (docs/relay.md): the same body again is a retry, answered with the first
 * event_id and sent no more; another body is refused naming the first event, as an idempotency key reused with
 * other parameters is, because the CRM takes one event per status change and dropping the second quietly would
 * leave the platform believing it was sent. A first event whose body was not kept cannot be matched: refused too.
 */
export function decideBonusRepeat(first: FirstEvent, fingerprint: string, key: { userId: string; userBonusId: string; status: string }): BonusRepeatDecision {
  if (first.fingerprint === fingerprint) return { action: 'replay', eventId: first.eventId };
  const which = `user_id ${JSON.stringify(key.userId)}, user_bonus_id ${JSON.stringify(key.userBonusId)} and status ${JSON.stringify(key.status)}`;
  const error =
    first.fingerprint === null
      ? `body: event ${first.eventId} was accepted first for ${which} before the relay kept bodies to compare, so this one cannot be told a repeat of it; it is not sent (one event per bonus status)`
      : `body: differs from event ${first.eventId}, accepted first for ${which}; this one is not sent (one event per bonus status)`;
  return { action: 'conflict', eventId: first.eventId, error };
}

/**
 * A credit's stored X-Crm-* values as the CRM's example types them (id and trigger_hash strings, other ids integers,
 * of any size: one beyond 2^53 is written as its digits, never rounded).
 */
export function referencesOfCredit(
  credit: Pick<
    CreditRow,
    'crm_id' | 'crm_action_id' | 'crm_action_group_id' | 'crm_action_communication_profile_id' | 'crm_activity_id' | 'crm_trigger_hash' | 'crm_player_origin_id'
  >,
): Record<string, string | number | RawJson> {
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
