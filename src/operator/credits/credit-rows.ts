/** The ledger row of a credit request, shared by both backends so every credit carries its CRM references. */
import type { NewCredit } from '../../ledger/credits.js';
import type { CreditRequest } from '../backend.js';
import { parseExact, RawJson, stringifyExact } from '../../http/exact-json.js';

export function newCreditRow(request: CreditRequest, dedupKey: string | null, state: 'pending' | 'done', at: number): NewCredit {
  const { refs } = request;
  return {
    dedup_key: dedupKey,
    kind: request.kind,
    user_id: request.userId,
    bonus_code: request.bonusCode,
    amount: request.amount,
    currency: request.currency,
    request_json: stringifyExact(request.body),
    crm_id: refs.id,
    crm_action_id: refs.action_id,
    crm_action_group_id: refs.action_group_id,
    crm_action_communication_profile_id: refs.action_communication_profile_id,
    crm_activity_id: refs.activity_id,
    crm_trigger_hash: refs.trigger_hash,
    crm_player_origin_id: refs.player_origin_id,
    state,
    http_status: null,
    answer_json: null,
    created_at: at,
    updated_at: at,
    // The sql backend's credits (done at once) are owed to the operator's bonus engine or wallet; the http backend's
    // reached the platform when forwarded (docs/operator-api.md "What success means").
    delivery: state === 'done' ? 'due' : null,
    next_delivery_at: state === 'done' ? at : null,
    delivery_claim_token: null,
    delivered_at: null,
    delivery_error: null,
  };
}

/**
 * A credit's amount as the CRM wrote it: the ledger keeps the nearest double (`amount`, double precision), which
 * changes an amount of more than 15 significant digits, while `request_json` keeps the text (stringifyExact). The
 * request's number is taken when it rounds to the stored double, so an http backend retry that sent another amount
 * (reclaimCredit stores its body, not its amount) never shows an amount the ledger does not hold.
 */
export function exactAmount(credit: { amount: number | null; request_json: string }): number | RawJson | null {
  if (credit.amount === null) return null;
  const sent = (parseExact(credit.request_json) as { amount?: unknown } | null)?.amount;
  return sent instanceof RawJson && Number(sent.text) === credit.amount ? sent : credit.amount;
}
