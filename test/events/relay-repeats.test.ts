/**
 * Repeated bonus events through the real gateway (HTTP server, ledger, event outbox) in front of a fake Integration
 * API: each player's status change is their own, a retry is answered with the first event_id and sent once, and
 * another body under a taken (user_id, user_bonus_id, status) is refused with 409 naming the first event, never
 * swallowed (docs/relay.md, "One bonus event per status change").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { bonusEvent, relay, startRelayToFakeCrm, type RelayToFakeCrm } from '../helpers/events.js';
import { waitFor, type TestGateway } from '../helpers/gateway.js';

const BONUS = '/v1/integration/bonus';
let relayed: RelayToFakeCrm;
let gw: TestGateway;
let crm: FakeIntegrationApi;

beforeAll(async () => {
  relayed = await startRelayToFakeCrm();
  ({ gw, crm } = relayed);
});

afterAll(() => relayed.close());

/** Every event the CRM took for a user_bonus_id, as [user_id, status, amount]. */
const atCrm = (userBonusId: string) =>
  crm.accepted.filter((r) => r.body.user_bonus_id === userBonusId).map((r) => [r.body.user_id, r.body.status, r.body.amount]);

/**
 * A bonus body as text, with `meta.psp_ref` a 64-bit id written out in full (JSON.stringify cannot write one).
 * `indent` writes it re-spaced with its keys in reverse order.
 */
function bonusText(userId: string, userBonusId: string, status: string, change: Record<string, unknown> = {}, indent = false): string {
  const body = bonusEvent(userId, userBonusId, status, { meta: { psp_ref: 0 }, ...change });
  const text = indent ? JSON.stringify(Object.fromEntries(Object.entries(body).reverse()), null, 2) : JSON.stringify(body);
  return text.replace(/"psp_ref": ?0/, (zero) => zero.replace('0', '9007199254740993'));
}

/** How the repeat differs from the first body, or how it is written. */
type Repeat = { userId?: string; status?: string; change?: Record<string, unknown>; indent?: boolean; text?: (first: string) => string };

describe('a repeated bonus event', () => {
  it.each<[string, Repeat, 'retry' | 'conflict' | 'own event']>([
    ['the same player with the same body is a retry: the first event_id, sent once', {}, 'retry'],
    ['the same player with the same body re-spaced and its keys in another order is a retry', { indent: true }, 'retry'],
    ['the same player with another body (amount 10 → 20) is refused with 409 naming the first event', { change: { amount: 20 } }, 'conflict'],
    [
      'the same player with an id above 2^53 one apart, which a double cannot tell, is refused with 409',
      { text: (first) => first.replace('9007199254740993', '9007199254740992') },
      'conflict',
    ],
    ['another player with the same user_bonus_id and status is that player’s own event, sent', { userId: 'other' }, 'own event'],
    ['the same player with another status is its own event, sent', { status: 'Completed' }, 'own event'],
    ['Ongoing again is its own event every time, sent', { status: 'Ongoing' }, 'own event'],
  ])('%s', async (label, repeat, expected) => {
    const userBonusId = `ub-${label.slice(0, 40)}`;
    const firstStatus = repeat.status === 'Ongoing' ? 'Ongoing' : 'Created';
    const firstText = bonusText('player-a', userBonusId, firstStatus);
    const first = await relay(gw, 'POST', BONUS, firstText);
    expect(first.status, JSON.stringify(first.json)).toBe(202);
    const body = repeat.text
      ? repeat.text(firstText)
      : bonusText(repeat.userId ?? 'player-a', userBonusId, repeat.status ?? firstStatus, repeat.change, repeat.indent);
    const again = await relay(gw, 'POST', BONUS, body);
    const expectedAtCrm = [['player-a', firstStatus, 10]];
    if (expected === 'retry') {
      expect(again.status).toBe(202);
      expect(again.json).toEqual({ event_id: first.json.event_id });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    } else if (expected === 'conflict') {
      expect(again.status).toBe(409);
      expect(again.json).toEqual({
        error: `body: differs from event ${first.json.event_id}, accepted first for user_id "player-a", user_bonus_id ${JSON.stringify(userBonusId)} and status "Created"; this one is not sent (one event per bonus status)`,
        code: 409,
        event_id: first.json.event_id,
      });
    } else {
      expect(again.status).toBe(202);
      expect(again.json.event_id).not.toBe(first.json.event_id);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expectedAtCrm.push([repeat.userId ?? 'player-a', repeat.status ?? firstStatus, 10]);
      await waitFor(() => crm.accepted.some((r) => r.eventId === again.json.event_id), 10_000, 'the second event at the CRM');
    }
    await waitFor(() => crm.accepted.some((r) => r.eventId === first.json.event_id), 10_000, 'the first event at the CRM');
    // A later event of the same player, sent after anything the repeat could have queued, shows nothing else went.
    const marker = await relay(gw, 'POST', BONUS, bonusEvent('player-a', `${userBonusId}-marker`, 'Created'));
    await waitFor(() => crm.accepted.some((r) => r.eventId === marker.json.event_id), 10_000, 'the marker at the CRM');
    expect(atCrm(userBonusId)).toEqual(expectedAtCrm);
  });

  it('a repeat with a "__proto__" key is refused with 400 naming it, before the repeat check, and nothing is queued', async () => {
    const first = await relay(gw, 'POST', BONUS, bonusText('player-p', 'ub-proto', 'Created'));
    expect(first.status).toBe(202);
    const repeat = await relay(gw, 'POST', BONUS, bonusText('player-p', 'ub-proto', 'Created').replace('"meta":{', '"meta":{"__proto__":{"x":2},'));
    expect(repeat.json).toEqual({ error: 'meta.__proto__: key name not allowed', code: 400 });
    await waitFor(() => crm.accepted.some((r) => r.eventId === first.json.event_id), 10_000, 'the first event at the CRM');
    const marker = await relay(gw, 'POST', BONUS, bonusEvent('player-p', 'ub-proto-marker', 'Created'));
    await waitFor(() => crm.accepted.some((r) => r.eventId === marker.json.event_id), 10_000, 'the marker at the CRM');
    expect(atCrm('ub-proto')).toHaveLength(1);
  });

  it('a repeat nested 5,000 deep is refused with 400 naming the depth key, before any repeat check, and nothing is queued', async () => {
    const first = await relay(gw, 'POST', BONUS, bonusText('player-d', 'ub-deep', 'Created'));
    expect(first.status).toBe(202);
    const deep = bonusText('player-d', 'ub-deep', 'Created').replace('"meta":{', `"meta":{"deep":${'['.repeat(5000)}${']'.repeat(5000)},`);
    const answer = await relay(gw, 'POST', BONUS, deep);
    expect(answer.status).toBe(400);
    expect(answer.json.code).toBe(400);
    expect(answer.json.error).toMatch(/max_depth|max_json_depth/);
    await waitFor(() => crm.accepted.some((r) => r.eventId === first.json.event_id), 10_000, 'the first event at the CRM');
    expect(atCrm('ub-deep')).toHaveLength(1);
  });

  it('sent by the platform twenty times at once is queued once; two bodies at once: one queued, the other 409 naming it', async () => {
    const body = bonusEvent('player-c', 'ub-concurrent', 'Created');
    const answers = await Promise.all(Array.from({ length: 20 }, () => relay(gw, 'POST', BONUS, body)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(202));
    expect(new Set(answers.map((a) => a.json.event_id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);

    const [ten, twenty] = await Promise.all([
      relay(gw, 'POST', BONUS, bonusEvent('player-c', 'ub-concurrent-2', 'Created', { amount: 10 })),
      relay(gw, 'POST', BONUS, bonusEvent('player-c', 'ub-concurrent-2', 'Created', { amount: 20 })),
    ]);
    const taken = ten!.status === 202 ? ten! : twenty!;
    const refused = ten!.status === 202 ? twenty! : ten!;
    expect([taken.status, refused.status]).toEqual([202, 409]);
    expect(refused.json.event_id).toBe(taken.json.event_id);
    await waitFor(() => crm.accepted.some((r) => r.eventId === taken.json.event_id), 10_000, 'the taken event at the CRM');
    const marker = await relay(gw, 'POST', BONUS, bonusEvent('player-c', 'ub-concurrent-marker', 'Created'));
    await waitFor(() => crm.accepted.some((r) => r.eventId === marker.json.event_id), 10_000, 'the marker at the CRM');
    expect(atCrm('ub-concurrent')).toHaveLength(1);
    expect(atCrm('ub-concurrent-2')).toEqual([['player-c', 'Created', taken === ten ? 10 : 20]]);
  });
});
