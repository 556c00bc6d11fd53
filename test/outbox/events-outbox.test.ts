/**
 * The event outbox's queries on a real ledger (SQLite file, or PostgreSQL under TEST_DATABASE_URL): enqueue in the
 * caller's transaction, once-only keys, and the claim that hands out only each user's oldest unsent event.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userConsentsEvent } from '../../src/crm/user-events.js';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import {
  claimDueEvents,
  countEventBacklog,
  countNotRoutedEvents,
  NOT_ROUTED_ERROR_PREFIX,
  enqueueEvent,
  enqueueEventOnce,
  findEventById,
  markEventsFailed,
  markEventsSent,
  oldestUnsentEvent,
  replayDeadEvents,
} from '../../src/ledger/events.js';
import { dropTestDatabase, testDatabaseUrl } from '../helpers/database.js';

let dir: string;
let ledger: Ledger;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'events-outbox-'));
  ledger = openLedger({ url: testDatabaseUrl(dir), sqlite_synchronous: 'normal', pool_size: 4 });
  await migrateToLatest(ledger.db);
});

afterAll(async () => {
  await ledger.close();
  await dropTestDatabase(dir);
  rmSync(dir, { recursive: true, force: true });
});

describe('event outbox', () => {
  it('stores a User Consents event written in the transaction of the change, and nothing when it rolls back', async () => {
    const kept = await ledger.db.transaction().execute((trx) => enqueueEvent(trx, userConsentsEvent('oc-1', 'brand-1', Date.UTC(2026, 10, 24)), 1_000));
    await expect(
      ledger.db.transaction().execute(async (trx) => {
        await enqueueEvent(trx, userConsentsEvent('oc-2', 'brand-1', 0), 1_000);
        throw new Error('the consent change failed');
      }),
    ).rejects.toThrow('the consent change failed');
    const row = await findEventById(ledger.db, kept);
    expect(row).toMatchObject({ type: 'USER_CONSENTS_V2', method: 'PUT', path: '/v2/integration/user/consents', user_id: 'oc-1', source: 'gateway' });
    expect(JSON.parse(row!.payload_json)).toEqual({ user_id: 'oc-1', timestamp: '2026-11-24T00:00:00.000Z', origin: 'brand-1' });
    const rolledBack = await ledger.db.selectFrom('crm_events').select('id').where('user_id', '=', 'oc-2').execute();
    expect(rolledBack).toEqual([]);
  });

  it('queues nothing for a repeated once-only key and answers the first event_id with the fingerprint kept beside it', async () => {
    const event = {
      type: 'BONUS',
      method: 'POST' as const,
      path: '/v1/integration/bonus',
      userId: 'ob-1',
      payload: { status: 'Created' },
      source: 'relay' as const,
    };
    const first = await enqueueEventOnce(ledger.db, event, 'ub-1|Created', 'fingerprint-1', 1_000);
    const again = await enqueueEventOnce(ledger.db, event, 'ub-1|Created', 'fingerprint-2', 2_000);
    expect(first.queued).toBe(true);
    expect(again).toEqual({ queued: false, first: { eventId: first.queued ? first.eventId : '', fingerprint: 'fingerprint-1' } });
    const rows = await ledger.db.selectFrom('crm_events').select('id').where('user_id', '=', 'ob-1').execute();
    expect(rows).toHaveLength(1);
  });

  it("claims only each user's oldest unsent event, and the next one after it was sent", async () => {
    const ev = (user: string, n: number) => ({ type: 'CUSTOM', method: 'POST' as const, path: '/v1/integration/custom', userId: user, payload: { n } });
    await ledger.db.deleteFrom('crm_events').execute();
    for (let n = 1; n <= 3; n++) {
      await enqueueEvent(ledger.db, ev('a', n), 10);
      await enqueueEvent(ledger.db, ev('b', n), 10);
    }
    const first = await claimDueEvents(ledger.db, ledger.flags, 100, 20, 60_000, 't1');
    expect(first.map((e) => [e.user_id, JSON.parse(e.payload_json).n])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    // While a's head is claimed (or backing off), nobody may take a's second event.
    expect(await claimDueEvents(ledger.db, ledger.flags, 100, 21, 60_000, 't2')).toEqual([]);
    await markEventsSent(ledger.db, [first[0]!.id], 't1', 22, 200);
    await markEventsFailed(ledger.db, [{ id: first[1]!.id, nextAttemptAt: 1_000, dead: false, httpStatus: 503, error: 'HTTP 503' }], 't1', 22);
    const second = await claimDueEvents(ledger.db, ledger.flags, 100, 23, 60_000, 't3');
    expect(second.map((e) => [e.user_id, JSON.parse(e.payload_json).n])).toEqual([['a', 2]]);
    expect(await countEventBacklog(ledger.db)).toEqual({ unsent: 5, retrying: 1, dead: 0 });
    expect(await countNotRoutedEvents(ledger.db)).toBe(0);
    expect(await oldestUnsentEvent(ledger.db)).toBe(10);
    // A broker that routed the event nowhere: still owed and retrying, and counted apart by its error's prefix.
    await markEventsFailed(
      ledger.db,
      [{ id: second[0]!.id, nextAttemptAt: 1_000, dead: false, httpStatus: null, error: `${NOT_ROUTED_ERROR_PREFIX}RabbitMQ returned it` }],
      't3',
      24,
    );
    expect(await countEventBacklog(ledger.db)).toEqual({ unsent: 5, retrying: 2, dead: 0 });
    expect(await countNotRoutedEvents(ledger.db)).toBe(1);
  });

  it('replays a dead event, and a dead event no longer holds back its user', async () => {
    await ledger.db.deleteFrom('crm_events').execute();
    const ev = (n: number) => ({ type: 'CUSTOM', method: 'POST' as const, path: '/v1/integration/custom', userId: 'd', payload: { n } });
    const deadId = await enqueueEvent(ledger.db, ev(1), 10);
    await enqueueEvent(ledger.db, ev(2), 10);
    const [head] = await claimDueEvents(ledger.db, ledger.flags, 10, 20, 60_000, 'd1');
    await markEventsFailed(ledger.db, [{ id: head!.id, nextAttemptAt: 30, dead: true, httpStatus: null, error: 'refused' }], 'd1', 30);
    const next = await claimDueEvents(ledger.db, ledger.flags, 10, 40, 60_000, 'd2');
    expect(next.map((e) => JSON.parse(e.payload_json).n)).toEqual([2]);
    expect(await replayDeadEvents(ledger.db, 50, [deadId])).toBe(1);
    expect(await findEventById(ledger.db, deadId)).toMatchObject({ dead: 0, attempts: 0, next_attempt_at: 50 });
  });
});
