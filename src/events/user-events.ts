/**
 * The thin events the gateway's own data changes cause (docs/crm-interface.md §7: "deliberately thin: user_id, timestamp
 * and origin"; the CRM then reads /userdetails, /userconsents or /userblocks). Pure builders: the caller passes
 * the result to enqueueEvent (src/ledger/events.ts) inside the transaction of the change.
 */
import type { NewEvent } from '../ledger/events.js';
import { eventRoute, type EventKind } from './catalogue.js';

export type ThinEventKind = Extract<EventKind, 'registration' | 'user_update' | 'user_consents' | 'user_blocks'>;

/** RFC 3339 in UTC with milliseconds, as the CRM's examples write timestamps. */
export function eventTimestamp(at: number): string {
  return new Date(at).toISOString();
}

export function thinUserEvent(kind: ThinEventKind, userId: string, origin: string, at: number): NewEvent {
  const route = eventRoute(kind);
  return {
    type: route.storedType,
    method: route.method,
    path: route.path,
    userId,
    payload: { user_id: userId, timestamp: eventTimestamp(at), origin },
    source: 'gateway',
  };
}

/** The User Consents event (PUT /v2/integration/user/consents, USER_CONSENTS_V2) after a consent change. */
export function userConsentsEvent(userId: string, origin: string, at: number): NewEvent {
  return thinUserEvent('user_consents', userId, origin, at);
}

/**
 * `origin` of a user record as GET /userdetails answers it (operator_users.record_json), or '' when the record has
 * none: the CRM requires the field, and an empty string is how its older docs say unknown values are sent.
 */
export function originOfRecord(recordJson: string): string {
  try {
    const record: unknown = JSON.parse(recordJson);
    if (record && typeof record === 'object' && Object.hasOwn(record, 'origin')) {
      const origin = (record as { origin: unknown }).origin;
      if (typeof origin === 'string') return origin;
    }
  } catch {
    // A record we stored ourselves is JSON; if not, the event still goes out, with an empty origin.
  }
  return '';
}
