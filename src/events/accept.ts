/**
 * Accepting a relayed event: find the credit a bonus event refers to, apply the one-per-status rule (a player's, a
 * retry answered, another body refused: decideBonusRepeat), and commit the body to the outbox. Runs inside the caller's transaction; answers a value, never throws for a bad event, so a
 * refused event never fails the others sharing the commit (src/ledger/engine/transaction-queue.ts).
 */
import type { Transaction } from 'kysely';
import { findCreditById, findLatestCreditForBonus, type CreditRow } from '../ledger/credits.js';
import { enqueueEvent, enqueueEventOnce, type NewEvent } from '../ledger/events.js';
import type { Database } from '../ledger/schema.js';
import { bonusBodyForCrm, bonusOnceKey, decideBonusRepeat } from './bonus-event.js';
import { bodyFingerprint } from './body-fingerprint.js';
import type { EventRoute } from '../crm/event-catalogue.js';

/** Refused: 400 for a bad reference, 409 (with the first event's id) for another body under a taken bonus key. */
export type AcceptResult =
  | { ok: true; eventId: string; replayed: boolean }
  | { ok: false; status: 400; error: string }
  | { ok: false; status: 409; error: string; eventId: string };

export interface AcceptInput {
  route: EventRoute;
  /** The body's text as received (already checked by guardPayload and the event's schema): what is sent on. */
  received: string;
  /** user_id as validated (trimmed), or the kind's own order key (src/crm/event-catalogue.ts): the key of per-user order. */
  userId: string;
  /**
   * For bonus events: the validated credit_id, bonus_code, user_bonus_id and status, and the body's text as received
   * (its fingerprint tells a retry from another body under the same key).
   */
  bonus?: { creditId?: string; bonusCode?: string; userBonusId: string; status: string; text: string };
  /** The relay request's span when tracing is on: the event is sent to the CRM with it. */
  traceparent?: string;
}

export async function acceptEvent(trx: Transaction<Database>, input: AcceptInput, now: number, referenceWindowMs: number): Promise<AcceptResult> {
  const { route, received, userId, bonus } = input;
  let body = received;
  let onceKey: string | null = null;
  if (bonus) {
    let credit: CreditRow | undefined;
    if (bonus.creditId !== undefined) {
      const id = /^\d{1,15}$/.test(bonus.creditId) ? Number(bonus.creditId) : NaN;
      credit = Number.isSafeInteger(id) ? await findCreditById(trx, id) : undefined;
      if (!credit || credit.user_id !== userId) return { ok: false, status: 400, error: `credit_id: no credit "${bonus.creditId}" for user_id "${userId}"` };
    } else if (bonus.bonusCode !== undefined) {
      credit = await findLatestCreditForBonus(trx, userId, bonus.bonusCode, now - referenceWindowMs);
    }
    body = bonusBodyForCrm(received, credit);
    onceKey = bonusOnceKey(userId, bonus.userBonusId, bonus.status);
  }
  const event: NewEvent = {
    type: route.storedKind,
    method: route.method,
    path: route.path,
    userId,
    payload: body,
    source: 'relay',
    traceparent: input.traceparent,
  };
  if (bonus && onceKey !== null) {
    const fingerprint = bodyFingerprint(bonus.text);
    const once = await enqueueEventOnce(trx, event, onceKey, fingerprint, now);
    if (once.queued) return { ok: true, eventId: once.eventId, replayed: false };
    const repeat = decideBonusRepeat(once.first, fingerprint, { userId, userBonusId: bonus.userBonusId, status: bonus.status });
    if (repeat.action === 'replay') return { ok: true, eventId: repeat.eventId, replayed: true };
    return { ok: false, status: 409, error: repeat.error, eventId: repeat.eventId };
  }
  return { ok: true, eventId: await enqueueEvent(trx, event, now), replayed: false };
}
