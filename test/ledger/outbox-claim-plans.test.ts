/**
 * The outboxes' claims read their due rows through the index made for them, on a ledger with no planner statistics,
 * as every SQLite ledger is (nothing runs ANALYZE). Without the index named (DialectFlags.namesIndexes, indexedBy in
 * src/ledger/outbox.ts), SQLite took the index of owed rows led by `dead`, read every owed row and sorted them each
 * round: 1 s or more a claim at a million owed (bench/README.md "The outboxes' claims without statistics").
 */
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimDueConversions } from '../../src/ledger/conversions.js';
import { dialectFlagsOf } from '../../src/ledger/engine/db.js';
import { claimDueEvents } from '../../src/ledger/events.js';
import { claimDueHeldSends } from '../../src/ledger/held-sends.js';
import type { Database } from '../../src/ledger/schema.js';
import { sqlitePlanOf } from '../helpers/query-plans.js';

const NOW = 1_800_000_000_000;
/** The claim's search for its rows: the statement the UPDATE's `where id in (…)` runs. */
const CLAIM_PLANS: Array<[string, (db: Kysely<Database>) => Promise<unknown>, string]> = [
  [
    'conversions',
    (db) => claimDueConversions(db, dialectFlagsOf(db), 100, NOW, 60_000, 'token'),
    'SEARCH conversions USING INDEX conversions_due (next_attempt_at<?)',
  ],
  [
    'held sends',
    (db) => claimDueHeldSends(db, dialectFlagsOf(db), 100, NOW, 60_000, 'token'),
    'SEARCH held_sends USING INDEX held_sends_due (next_attempt_at<?)',
  ],
  [
    'CRM events, each player’s head',
    (db) => claimDueEvents(db, dialectFlagsOf(db), 100, NOW, 60_000, 'token'),
    'SCAN crm_events USING COVERING INDEX crm_events_unsent_user',
  ],
];

describe('the outboxes’ claims on SQLite without statistics', () => {
  it.each(CLAIM_PLANS)('%s: read through the index of due rows, never sorted whole', async (_name, claim, step) => {
    const plan = await sqlitePlanOf(claim);
    expect(plan).toContain(step);
    expect(plan).not.toMatch(/_unposted|_unsent_state|_owed/);
    expect(plan).not.toContain('TEMP B-TREE FOR GROUP BY');
  });
});
