/**
 * The CRM's real-time event catalogue (docs/crm-interface.md §7 and §B):
 * for each event, the Integration API method and path and the queue type a RabbitMQ connector puts in the message
 * property `type`. The device link/unlink queue types are not documented (docs/crm-interface.md §B: "their queue details are
 * not documented"); USER_DEVICE_LINK / USER_DEVICE_UNLINK are our names for them.
 */
export type EventKind =
  | 'registration'
  | 'login'
  | 'user_update'
  | 'user_consents'
  | 'user_blocks'
  | 'custom'
  | 'balance'
  | 'bonus'
  | 'device_link'
  | 'device_unlink';

export interface EventRoute {
  kind: EventKind;
  method: 'POST' | 'PUT';
  path: string;
  type: string;
}

export const eventCatalogue: readonly EventRoute[] = [
  { kind: 'bonus', method: 'POST', path: '/v1/integration/bonus', type: 'BONUS' },
  { kind: 'registration', method: 'POST', path: '/v2/integration/user', type: 'USER_CREATE_V2' },
  { kind: 'login', method: 'POST', path: '/v2/integration/login', type: 'LOGIN_V2' },
  { kind: 'user_update', method: 'PUT', path: '/v2/integration/user', type: 'USER_UPDATE_V2' },
  { kind: 'user_consents', method: 'PUT', path: '/v2/integration/user/consents', type: 'USER_CONSENTS_V2' },
  { kind: 'user_blocks', method: 'PUT', path: '/v2/integration/user/blocks', type: 'USER_BLOCK_V2' },
  { kind: 'custom', method: 'POST', path: '/v1/integration/custom', type: 'CUSTOM' },
  { kind: 'balance', method: 'POST', path: '/v1/integration/user/balances', type: 'USER_BALANCES_UPDATE' },
  { kind: 'device_link', method: 'POST', path: '/v1/integration/user/device/link', type: 'USER_DEVICE_LINK' },
  { kind: 'device_unlink', method: 'POST', path: '/v1/integration/user/device/unlink', type: 'USER_DEVICE_UNLINK' },
];

const byKind = new Map(eventCatalogue.map((r) => [r.kind, r]));

export function eventRoute(kind: EventKind): EventRoute {
  return byKind.get(kind)!;
}
