/** The console's lists on SQLite read their indexes: no full scan, no temporary sort (EXPLAIN QUERY PLAN). */
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { countCreditBacklog, listDeadCredits } from '../../src/ledger/credit-delivery.js';
import { findEventsBySmsId, listEvents } from '../../src/ledger/events.js';
import type { Database } from '../../src/ledger/schema.js';
import { sqlitePlanOf } from '../helpers/query-plans.js';

describe('query plans on SQLite', () => {
  it.each([
    ['the dead list', (db: Kysely<Database>) => listEvents(db, { status: 'dead', limit: 101 }), 'crm_events_dead'],
    ['the dead list of a type', (db: Kysely<Database>) => listEvents(db, { status: 'dead', type: 'BONUS', before: 99, limit: 101 }), 'crm_events_dead'],
    ['the events of a message', (db: Kysely<Database>) => findEventsBySmsId(db, 'x'), 'crm_events_sms_id'],
    ['the dead credits', (db: Kysely<Database>) => listDeadCredits(db, { limit: 101 }), 'operator_credits_dead'],
    ['the dead credits of a player', (db: Kysely<Database>) => listDeadCredits(db, { userId: 'u', before: 99, limit: 101 }), 'operator_credits_user_id'],
    ['the credits outbox line', (db: Kysely<Database>) => countCreditBacklog(db), 'operator_credits_due'],
  ])('%s reads its index', async (_name, run, index) => {
    const plan = await sqlitePlanOf(run);
    expect(plan).toContain(index);
    expect(plan).not.toContain('TEMP B-TREE');
  });
});
