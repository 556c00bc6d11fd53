/** Event bodies as the operator's platform sends them, and a relay client with its key. */
import type { TestGateway } from './gateway.js';

export const RELAY_KEY = 'test-relay-key';

export function bonusEvent(userId: string, userBonusId: string, status: string, overrides: Record<string, unknown> = {}) {
  return {
    amount: 10,
    bonus_code: 'B10',
    bonus_id: 'bonus-1',
    currency: 'EUR',
    exchange_rate: 1,
    origin: 'sub.example.com',
    product: 'Casino',
    status,
    timestamp: '2026-11-24T10:00:00+01:00',
    type: 'WelcomeBonus',
    user_bonus_id: userBonusId,
    user_id: userId,
    ...overrides,
  };
}

export function thinEvent(userId: string, overrides: Record<string, unknown> = {}) {
  return { user_id: userId, timestamp: '2026-11-24T09:00:00Z', origin: 'sub.example.com', ...overrides };
}

export function relay(gw: TestGateway, method: 'POST' | 'PUT', path: string, body: unknown, key = RELAY_KEY, headers: Record<string, string> = {}) {
  return method === 'POST' ? gw.post(`/relay${path}`, body, { 'x-api-key': key, ...headers }) : gw.put(`/relay${path}`, body, { 'x-api-key': key, ...headers });
}
