/**
 * Migration 2026-11-30-20-event-heads on a ledger holding events of the version before it (SQLite, or PostgreSQL under
 * TEST_DATABASE_URL): the owed events are left undecided, and the relay's first round makes each player's oldest owed
 * event its head, the player's other owed events waiting behind it (sent and dead ones stay undecided); the relay then
 * sends each player's owed events in order, and a dead event replayed goes before them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { claimDueEvents, markEventsSent, replayDeadEvents } from '../../src/ledger/events.js';
import { openTestLedgerBefore, type TestLedger } from '../helpers/database.js';

const MIGRATION = '2026-11-30-20-event-heads';
const NOW = 10_000;
/** Each player's events in the order accepted: s sent, o owed, d dead. */
const HISTORIES: Record<string, string> = { p1: 'sooo', p2: 'dooso', p3: 'ss', p4: 'o', p5: 'dd' };

let opened: TestLedger;
let ledger: Ledger;

beforeAll(async () => {
  opened = await openTestLedgerBefore(MIGRATION, 'event-heads-migration');
  ledger = opened.ledger;
  // Accepted interleaved across players, as a relay's traffic is: the k-th event of every player, then the k+1-th.
  let n = 0;
  for (let k = 0; k < 5; k++)
    for (const [player, history] of Object.entries(HISTORIES)) {
      const state = history[k];
      if (state === undefined) continue;
      n++;
      await ledger.db
        .insertInto('crm_events')
        .values({
          event_id: `${player}-${k}`,
          type: 'CUSTOM',
          method: 'POST',
          path: '/v1/integration/custom',
          user_id: player,
          payload_json: '{}',
          source: 'relay',
          attempts: state === 'o' ? 0 : 1,
          next_attempt_at: 1_000 + n,
          claimed_until: 0,
          sent_at: state === 's' ? 2_000 + n : null,
          dead: state === 'd' ? 1 : 0,
          created_at: 1_000 + n,
        } as never)
        .execute();
    }
  await migrateToLatest(ledger.db);
});

afterAll(() => opened.close());

describe(`migration ${MIGRATION}`, () => {
  it('leaves every event undecided; the first round makes each player’s oldest owed event its head and the others wait', async () => {
    const undecided = await ledger.db.selectFrom('crm_events').select('head').distinct().execute();
    expect(undecided).toEqual([{ head: null }]);
    // A round at a time before any is due: it decides, and claims nothing.
    expect(await claimDueEvents(ledger.db, ledger.flags, 100, 0, 60_000, 'early')).toEqual([]);
    const rows = await ledger.db.selectFrom('crm_events').select(['event_id', 'head']).orderBy('id').execute();
    expect(Object.fromEntries(rows.map((r) => [r.event_id, r.head]))).toEqual({
      'p1-0': null,
      'p1-1': 1,
      'p1-2': 0,
      'p1-3': 0,
      'p2-0': null,
      'p2-1': 1,
      'p2-2': 0,
      'p2-3': null,
      'p2-4': 0,
      'p3-0': null,
      'p3-1': null,
      'p4-0': 1,
      'p5-0': null,
      'p5-1': null,
    });
  });

  it('then sends each player’s owed events in order, a replayed dead one first', async () => {
    expect(await replayDeadEvents(ledger.db, NOW, ['p2-0'])).toBe(1);
    const sent: string[] = [];
    for (let round = 0; round < 10; round++) {
      const claimed = await claimDueEvents(ledger.db, ledger.flags, 100, NOW, 60_000, `t${round}`);
      if (claimed.length === 0) break;
      sent.push(...claimed.map((e) => e.event_id));
      await markEventsSent(
        ledger.db,
        claimed.map((e) => e.id),
        `t${round}`,
        NOW,
        200,
      );
    }
    const order = (player: string) => sent.filter((id) => id.startsWith(`${player}-`));
    expect(order('p1')).toEqual(['p1-1', 'p1-2', 'p1-3']);
    expect(order('p2')).toEqual(['p2-0', 'p2-1', 'p2-2', 'p2-4']);
    expect(order('p4')).toEqual(['p4-0']);
    expect(sent).toHaveLength(8);
  });
});
