/**
 * The event outbox's heads (src/ledger/events.ts): each owed event says whether it is its player's oldest owed one,
 * and the claim reads only those. Over generated histories of enqueues, claims, sends, back-offs, dead letters and
 * replays, a claim hands out only a player's oldest owed event, and never leaves out a player whose oldest owed event
 * is due and unclaimed (a missed head would hold that player's events for ever). On PostgreSQL, several connections
 * enqueue and send at once, and every event still leaves, each player's in order.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueEvents, enqueueEvent, markEventsFailed, markEventsSent, replayDeadEvents, type ClaimedEvent } from '../../src/ledger/events.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
const LEASE = 60_000;

let opened: TestLedger;
let ledger: Ledger;

beforeAll(async () => {
  opened = await openTestLedger('event-heads', 8);
  ledger = opened.ledger;
});

afterAll(() => opened.close());

const event = (userId: string, n: number) => ({ type: 'CUSTOM', method: 'POST' as const, path: '/v1/integration/custom', userId, payload: { n } });

/** Each player's oldest owed event, whether it is claimed, and when it is due. */
async function oldestOwed(): Promise<Map<string, { id: number; due: number; claimedUntil: number }>> {
  const rows = await sql<{ user_id: string; id: number; next_attempt_at: number; claimed_until: number }>`
    select user_id, id, next_attempt_at, claimed_until from crm_events e
    where sent_at is null and dead = 0 and id = (select min(p.id) from crm_events p where p.user_id = e.user_id and p.sent_at is null and p.dead = 0)`.execute(
    ledger.db,
  );
  return new Map(rows.rows.map((r) => [r.user_id, { id: Number(r.id), due: Number(r.next_attempt_at), claimedUntil: Number(r.claimed_until) }]));
}

type Step =
  | { op: 'enqueue'; user: string }
  | { op: 'claim'; limit: number }
  | { op: 'settle'; outcomes: Array<'sent' | 'retry' | 'dead' | 'lost'> }
  | { op: 'replay'; user: string | undefined }
  | { op: 'wait'; ms: number };

const user = fc.constantFrom('a', 'b', 'c', 'd');
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('enqueue' as const), user }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('claim' as const), limit: fc.integer({ min: 1, max: 4 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('settle' as const), outcomes: fc.array(fc.constantFrom('sent', 'retry', 'dead', 'lost'), { maxLength: 4 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('replay' as const), user: fc.option(user, { nil: undefined }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('wait' as const), ms: fc.constantFrom(1, 500, LEASE + 1) }) },
);

describe('the event heads', () => {
  it('a claim takes only players’ oldest owed events, and every one that is due and free, over any history', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        await ledger.db.deleteFrom('crm_events').execute();
        let now = 1_000;
        let n = 0;
        // The claims not settled yet, each with its token, as a relay's rounds hold them until it marks.
        let held: Array<{ token: string; row: ClaimedEvent }> = [];
        for (const s of steps) {
          now += 1;
          if (s.op === 'enqueue') await ledger.db.transaction().execute((trx) => enqueueEvent(trx, event(s.user, ++n), now));
          if (s.op === 'wait') now += s.ms;
          if (s.op === 'replay') await replayDeadEvents(ledger.db, now, s.user === undefined ? {} : { userId: s.user });
          if (s.op === 'settle') {
            // 'lost': the claimer died; nothing is marked and the lease runs out.
            const outcome = (i: number) => s.outcomes[i] ?? 'lost';
            for (const [i, { token, row }] of held.entries()) {
              const failed = { id: row.id, nextAttemptAt: now + 300, dead: outcome(i) === 'dead', httpStatus: 503, error: 'HTTP 503' };
              await ledger.db.transaction().execute(async (trx) => {
                if (outcome(i) === 'sent') await markEventsSent(trx, [row.id], token, now, 200);
                if (outcome(i) === 'retry' || outcome(i) === 'dead') await markEventsFailed(trx, [failed], token, now);
              });
            }
            held = [];
          }
          if (s.op === 'claim') {
            const before = await oldestOwed();
            const token = `t${now}`;
            const claimed = await claimDueEvents(ledger.db, ledger.flags, s.limit, now, LEASE, token);
            for (const row of claimed) expect(before.get(row.user_id)?.id, `event ${row.id} of ${row.user_id}`).toBe(row.id);
            if (claimed.length < s.limit) {
              const free = [...before].filter(([, o]) => o.due <= now && o.claimedUntil <= now).map(([u]) => u);
              expect(claimed.map((r) => r.user_id).sort()).toEqual(free.sort());
            }
            held.push(...claimed.map((row) => ({ token, row })));
          }
        }
      }),
      {
        numRuns: RUNS,
        examples: [
          // A dead head gives way to the next event; replayed, it goes first again.
          [
            [
              { op: 'enqueue', user: 'd' },
              { op: 'enqueue', user: 'd' },
              { op: 'claim', limit: 1 },
              // Nothing to claim: the round decides that the second event waits behind the first.
              { op: 'claim', limit: 1 },
              { op: 'settle', outcomes: ['dead'] },
              { op: 'claim', limit: 2 },
              { op: 'settle', outcomes: ['retry'] },
              { op: 'replay', user: 'd' },
              { op: 'claim', limit: 2 },
              { op: 'settle', outcomes: ['sent'] },
              { op: 'wait', ms: 500 },
              { op: 'claim', limit: 2 },
            ],
          ],
          // A claim lost with its process: the head is claimed again once the lease is over, and only then.
          [
            [
              { op: 'enqueue', user: 'a' },
              { op: 'enqueue', user: 'a' },
              { op: 'claim', limit: 1 },
              { op: 'settle', outcomes: ['lost'] },
              { op: 'claim', limit: 1 },
              { op: 'wait', ms: LEASE + 1 },
              { op: 'claim', limit: 2 },
            ],
          ],
        ],
      },
    );
  });

  it('a claim waits for no row another transaction holds: it takes the others and leaves that one for later', async (ctx) => {
    // SQLite has one writer: no other transaction can hold a row while a claim runs.
    if (!ledger.flags.skipLocked) return ctx.skip();
    await ledger.db.deleteFrom('crm_events').execute();
    for (const u of ['held', 'free']) await ledger.db.transaction().execute((trx) => enqueueEvent(trx, event(u, 1), 1_000));
    const held = await ledger.db.selectFrom('crm_events').select('id').where('user_id', '=', 'held').executeTakeFirstOrThrow();
    // A settling round's UPDATE holds the row it changed until it commits; a claim that waited for it could close a
    // deadlock (the claim's own changed rows being what that round waits for next).
    let release!: () => void;
    let holding!: () => void;
    const isHolding = new Promise<void>((resolve) => (holding = resolve));
    const holder = ledger.db.transaction().execute(async (trx) => {
      await trx.updateTable('crm_events').set({ attempts: 0 }).where('id', '=', held.id).execute();
      holding();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await isHolding;
    try {
      const claim = claimDueEvents(ledger.db, ledger.flags, 10, 2_000, LEASE, 'while-held');
      const waited = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5_000));
      const claimed = await Promise.race([claim, waited]);
      expect(claimed === 'waited' ? claimed : claimed.map((r) => r.user_id)).toEqual(['free']);
    } finally {
      release();
      await holder;
    }
    const after = await claimDueEvents(ledger.db, ledger.flags, 10, 2_000, LEASE, 'after');
    expect(after.map((r) => r.user_id)).toEqual(['held']);
  });

  it('several connections enqueueing and sending at once leave no player behind, each player’s events in order', async () => {
    await ledger.db.deleteFrom('crm_events').execute();
    const users = ['p1', 'p2', 'p3'];
    const producers = [0, 1, 2];
    /** Per player, what went out: which producer queued it, and its place in that producer's sequence. */
    const delivered = new Map<string, Array<{ producer: number; k: number }>>(users.map((u) => [u, []]));
    let accepting = true;
    const producer = async (p: number) => {
      for (let k = 0; k < 99; k++)
        await ledger.db.transaction().execute((trx) => enqueueEvent(trx, { ...event(users[k % users.length]!, k), payload: { p, k } }, 1_000));
    };
    const relay = async (name: string) => {
      for (let round = 0; ; round++) {
        const claimed = await claimDueEvents(ledger.db, ledger.flags, 10, 2_000, LEASE, `${name}-${round}`);
        if (claimed.length === 0) {
          if (!accepting) return;
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        for (const row of claimed) {
          const { p, k } = JSON.parse(row.payload_json) as { p: number; k: number };
          delivered.get(row.user_id)!.push({ producer: p, k });
        }
        await ledger.db.transaction().execute((trx) =>
          markEventsSent(
            trx,
            claimed.map((r) => r.id),
            `${name}-${round}`,
            2_000,
            200,
          ),
        );
      }
    };
    const relays = [relay('r1'), relay('r2')];
    await Promise.all(producers.map(producer));
    accepting = false;
    await Promise.all(relays);
    // What the last rounds could not see yet: a relay run after every enqueue has committed.
    await relay('r3');
    const owed = await ledger.db.selectFrom('crm_events').select('id').where('sent_at', 'is', null).execute();
    expect(owed).toEqual([]);
    for (const u of users) {
      const sent = delivered.get(u)!;
      expect(sent).toHaveLength(99);
      // The order accepted: each producer's events were committed one after another, so they leave in its order. Two
      // producers' events accepted at the same moment have no order between them (ids are drawn before the commits).
      for (const p of producers) {
        const ks = sent.filter((e) => e.producer === p).map((e) => e.k);
        expect(ks).toEqual([...ks].sort((x, y) => x - y));
      }
    }
  });
});
