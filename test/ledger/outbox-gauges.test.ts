/**
 * What a /metrics scrape and the console read of the conversion, event and held sends outboxes
 * (src/ledger/conversions.ts, src/ledger/events.ts, src/ledger/held-sends.ts): the backlog by state and the oldest
 * owed row's age. Runs on SQLite, and on PostgreSQL when
 * TEST_DATABASE_URL is set. The ages are each the first entry of a partial index led by (dead, created_at), a seek
 * however many rows are owed, and the counts read nothing but those indexes, a slice of rows at a time (migration
 * 2026-11-30-10-owed-by-age, src/ledger/owed-backlog.ts): on SQLite the event loop waits for every statement a scrape runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Insertable } from 'kysely';
import { countOutboxBacklog, oldestPendingConversion, oldestUnpostedConversion } from '../../src/ledger/conversions.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { countEventBacklog, countNotRoutedEvents, NOT_ROUTED_ERROR_PREFIX, oldestUnsentEvent } from '../../src/ledger/events.js';
import { countOwed, oldestOwed, sliceEnd } from '../../src/ledger/owed-backlog.js';
import { countHeldBacklog } from '../../src/ledger/held-sends.js';
import type { ConversionsTable, CrmEventsTable, HeldSendsTable } from '../../src/ledger/schema.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { submittedMessageRow } from '../helpers/ledger.js';
import { postgresPlanOf, sqlitePlanOf } from '../helpers/query-plans.js';

const NOW = 1_800_000_000_000;

function conversion(smsId: string, createdAt: number, state: { attempts?: number; dead?: 1; posted?: true } = {}): Insertable<ConversionsTable> {
  return {
    sms_id: smsId,
    delivery_status: 'delivered',
    attempts: state.attempts ?? 0,
    next_attempt_at: createdAt,
    claimed_until: 0,
    posted_at: state.posted ? createdAt + 1_000 : null,
    dead: state.dead ?? 0,
    created_at: createdAt,
  };
}

function event(n: number, createdAt: number, state: { attempts?: number; dead?: 1; sent?: true; error?: string } = {}): Insertable<CrmEventsTable> {
  return {
    event_id: `ev-${n}`,
    type: 'login',
    method: 'POST',
    path: '/login',
    user_id: `u${n}`,
    payload_json: '{}',
    source: 'relay',
    attempts: state.attempts ?? 0,
    next_attempt_at: createdAt,
    claimed_until: 0,
    sent_at: state.sent ? createdAt + 1_000 : null,
    last_error: state.error ?? null,
    dead: state.dead ?? 0,
    created_at: createdAt,
  };
}

function held(smsId: string, createdAt: number, state: { attempts?: number; dead?: 1; done?: true; next?: number } = {}): Insertable<HeldSendsTable> {
  return {
    sms_id: smsId,
    quiet_window: 'GB',
    content: 'hello',
    release_at: createdAt + 3_600_000,
    expires_at: createdAt + 86_400_000,
    attempts: state.attempts ?? 0,
    next_attempt_at: state.next ?? createdAt + 3_600_000,
    claimed_until: 0,
    dead: state.dead ?? 0,
    done_at: state.done ? createdAt + 3_600_000 : null,
    created_at: createdAt,
  };
}

describe('the outboxes’ backlog and ages', () => {
  let opened: TestLedger | undefined;
  let ledger: Ledger;
  beforeAll(async () => {
    opened = await openTestLedger('outbox-gauges');
    ledger = opened.ledger;
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('reads nothing owed as zero counts and no age', async () => {
    expect(await countOutboxBacklog(ledger.db)).toEqual({ due: 0, retrying: 0, dead: 0 });
    expect(await oldestUnpostedConversion(ledger.db)).toBeNull();
    expect(await oldestPendingConversion(ledger.db)).toBeNull();
    expect(await countEventBacklog(ledger.db)).toEqual({ unsent: 0, retrying: 0, dead: 0 });
    expect(await oldestUnsentEvent(ledger.db)).toBeNull();
    expect(await countHeldBacklog(ledger.db)).toEqual({ owed: 0, retrying: 0, dead: 0, oldestAt: null, nextAt: null });
  });

  it('counts held sends by state, dates the oldest held and finds the next to look at, the done ones aside', async () => {
    await ledger.db
      .insertInto('held_sends')
      .values([
        held('held-done', NOW - 9_000, { done: true, next: NOW - 9_000 }),
        held('held-dead', NOW - 8_000, { attempts: 4, dead: 1, next: NOW - 7_000 }),
        held('held-retrying', NOW - 2_000, { attempts: 1, next: NOW + 60_000 }),
        held('held-a', NOW - 5_000, { next: NOW + 30_000 }),
        held('held-b', NOW - 1_000, { next: NOW + 90_000 }),
      ])
      .execute();
    expect(await countHeldBacklog(ledger.db)).toEqual({ owed: 3, retrying: 1, dead: 1, oldestAt: NOW - 5_000, nextAt: NOW + 30_000 });
  });

  it('counts conversions by state and dates the oldest owed with and without the dead', async () => {
    const ids = ['posted-oldest', 'dead-old', 'retrying', 'due-a', 'due-b'];
    await ledger.db
      .insertInto('messages')
      .values(ids.map((id, i) => submittedMessageRow(id, 'sandbox', NOW - 10_000 + i)))
      .execute();
    await ledger.db
      .insertInto('conversions')
      .values([
        // Inserted out of time order, so that neither age can come from the first row by id.
        conversion('due-b', NOW - 1_000),
        conversion('retrying', NOW - 3_000, { attempts: 2 }),
        conversion('posted-oldest', NOW - 9_000, { posted: true }),
        conversion('dead-old', NOW - 5_000, { attempts: 8, dead: 1 }),
        conversion('due-a', NOW - 2_000),
      ])
      .execute();
    expect(await countOutboxBacklog(ledger.db)).toEqual({ due: 2, retrying: 1, dead: 1 });
    expect(await oldestUnpostedConversion(ledger.db)).toBe(NOW - 5_000);
    expect(await oldestPendingConversion(ledger.db)).toBe(NOW - 3_000);
    // A dead letter younger than every pending row: the oldest owed is then a pending one.
    await ledger.db
      .updateTable('conversions')
      .set({ created_at: NOW - 500 })
      .where('sms_id', '=', 'dead-old')
      .execute();
    expect(await oldestUnpostedConversion(ledger.db)).toBe(NOW - 3_000);
  });

  it('counts events by state, not routed apart, and dates the oldest unsent without the dead', async () => {
    await ledger.db
      .insertInto('crm_events')
      .values([
        event(1, NOW - 1_000),
        event(2, NOW - 9_000, { sent: true }),
        event(3, NOW - 7_000, { attempts: 5, dead: 1 }),
        event(4, NOW - 4_000, { attempts: 1, error: `${NOT_ROUTED_ERROR_PREFIX}no queue bound` }),
        event(5, NOW - 2_000, { attempts: 2, error: 'HTTP 503' }),
      ])
      .execute();
    expect(await countEventBacklog(ledger.db)).toEqual({ unsent: 3, retrying: 2, dead: 1 });
    expect(await countNotRoutedEvents(ledger.db)).toBe(1);
    expect(await oldestUnsentEvent(ledger.db)).toBe(NOW - 4_000);
  });

  it('counts the same a slice at a time, whatever the slice’s length, with many rows in one millisecond', async () => {
    const ids = Array.from({ length: 9 }, (_, i) => `slice-${i}`);
    await ledger.db
      .insertInto('messages')
      .values(ids.map((id, i) => submittedMessageRow(id, 'sandbox', NOW + i)))
      .execute();
    // Five owed rows in one millisecond (a batch of receipts), the rest a millisecond apart; every other one retrying.
    await ledger.db
      .insertInto('conversions')
      .values(ids.map((id, i) => conversion(id, i < 5 ? NOW + 100 : NOW + 100 + i, { attempts: i % 2 })))
      .execute();
    const whole = await countOwed(ledger.db, { table: 'conversions', done: 'posted_at' }, 0, 1_000);
    expect(whole).toEqual({ rows: 3 + 9, retrying: 1 + 4 });
    for (const rowsPerRead of [1, 2, 3, 4, 5, 6, 7]) {
      expect(await countOwed(ledger.db, { table: 'conversions', done: 'posted_at' }, 0, rowsPerRead)).toEqual(whole);
    }
  });
});

describe('where a slice of the owed rows ends', () => {
  it.each([
    ['fewer than a slice left: to the end', 100, null, null],
    ['from the start, fewer than a slice left', null, null, null],
    ['from the start: before the entry a slice on', null, 250, 250],
    ['before the entry a slice on', 100, 250, 250],
    ['a slice of rows in the first millisecond: that millisecond', 100, 100, 101],
  ] as const)('%s', (_name, from, boundary, end) => {
    expect(sliceEnd(from, boundary)).toBe(end);
  });
});

/** Each age's statement, and each count's, as the planner takes it on a freshly migrated ledger. */
const AGES = [
  ['the oldest pending conversion', (db: Ledger['db']) => oldestPendingConversion(db), 'conversions', 'conversions_unposted'],
  ['the oldest owed conversion', (db: Ledger['db']) => oldestUnpostedConversion(db), 'conversions', 'conversions_unposted'],
  ['the oldest unsent event', (db: Ledger['db']) => oldestUnsentEvent(db), 'crm_events', 'crm_events_unsent_state'],
  ['the oldest held send', (db: Ledger['db']) => oldestOwed(db, { table: 'held_sends', done: 'done_at' }, 0), 'held_sends', 'held_sends_owed'],
] as const;
const COUNTS = [
  ['the conversions’ backlog', (db: Ledger['db']) => countOutboxBacklog(db), 'conversions', 'conversions_unposted'],
  ['the events’ backlog', (db: Ledger['db']) => countEventBacklog(db), 'crm_events', 'crm_events_unsent_state'],
  ['the held sends’ backlog', (db: Ledger['db']) => countHeldBacklog(db), 'held_sends', 'held_sends_owed'],
] as const;

describe('the gauges’ plans on SQLite', () => {
  it.each(AGES)('%s is the first entry of its state in the partial index', async (_name, read, table, index) => {
    const plan = await sqlitePlanOf(read);
    expect(plan).toBe(`SEARCH ${table} USING COVERING INDEX ${index} (dead=?)`);
  });

  it.each(COUNTS)('%s reads the partial index alone', async (_name, read, table, index) => {
    for (const dead of [0, 1]) {
      for (const statement of ['limit 1 offset', 'count(*)']) {
        const plan = await sqlitePlanOf(read, { which: (q) => q.sql.includes(statement) && q.parameters[0] === dead });
        expect(plan).toBe(`SEARCH ${table} USING COVERING INDEX ${index} (dead=?)`);
      }
    }
  });

  it('the next held send to look at is the first entry of held_sends_due', async () => {
    const plan = await sqlitePlanOf((db) => countHeldBacklog(db), { which: (q) => q.sql.includes('next_attempt_at') });
    expect(plan).toBe('SCAN held_sends USING INDEX held_sends_due');
  });

  it('a slice after the first reads a range of creation times in the partial index', async () => {
    const plan = await sqlitePlanOf((db) => countOwed(db, { table: 'conversions', done: 'posted_at' }, 0, 1), {
      prepare: (sqlite) => {
        const insert = sqlite.prepare(
          `insert into conversions (sms_id, delivery_status, attempts, next_attempt_at, claimed_until, dead, created_at) values (?, 'delivered', 0, 0, 0, 0, ?)`,
        );
        for (const at of [1, 2, 3]) insert.run(`m${at}`, at);
      },
      which: (q) => q.sql.includes('count(*)') && q.sql.includes('created_at >=') && q.sql.includes('created_at <'),
    });
    expect(plan).toBe('SEARCH conversions USING COVERING INDEX conversions_unposted (dead=? AND created_at>? AND created_at<?)');
  });
});

describe('the gauges’ plans on PostgreSQL', () => {
  it.each(AGES)('%s is the first entry of its state in the partial index', async (_name, read, _table, index) => {
    const plan = await postgresPlanOf(read);
    expect(plan).toMatch(new RegExp(`^Limit .*\\n\\s+->\\s+Index (Only )?Scan using ${index} on`));
    expect(plan).not.toMatch(/Sort|Seq Scan/);
  });
});
