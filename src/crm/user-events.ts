/**
 * The thin events the gateway's own data changes cause (docs/crm-interface.md §7: "deliberately thin: user_id, timestamp
 * and origin"; the CRM then reads /userdetails, /userconsents or /userblocks). Pure builders: the caller passes
 * the result to enqueueEvent (src/ledger/events.ts) inside the transaction of the change.
 */
import { eventRoute, type EventKind } from './event-catalogue.js';

/** An event to queue for the CRM. `type` is the CRM's queue type; `path` the Integration API path. */
export interface NewEvent {
  type: string;
  method: 'POST' | 'PUT';
  path: string;
  userId: string;
  /** The body as it will be sent: an object (serialised here) or JSON text already serialised. */
  payload: object | string;
  /** `gateway` (default) for events the gateway's own changes cause, `relay` for events received on /relay. */
  source?: 'relay' | 'gateway';
  /** The message whose send caused it (a provider's opt-out error), shown on that message's timeline. */
  smsId?: string;
  /** W3C traceparent to send the event with (docs/tracing.md), when tracing is on. */
  traceparent?: string;
}

export type ThinEventKind = Extract<EventKind, 'registration' | 'user_update' | 'user_consents' | 'user_blocks'>;

/** RFC 3339 in UTC with milliseconds, as the CRM's examples write timestamps. */
export function eventTimestamp(at: number): string {
  return new Date(at).toISOString();
}

export function thinUserEvent(kind: ThinEventKind, userId: string, origin: string, at: number): NewEvent {
  const route = eventRoute(kind);
  return {
    type: route.storedKind,
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

/** The User Consents event after a consent change of a player whose stored record is `recordJson`. */
export function consentChangeEvent(userId: string, recordJson: string, at: number): NewEvent {
  return userConsentsEvent(userId, originOfRecord(recordJson), at);
}
