/**
 * The outboxes' claims read their due rows through the index made for them, on a ledger with no planner statistics,
 * as every SQLite ledger is (nothing runs ANALYZE). Without the index named (DialectFlags.namesIndexes, indexedBy in
 * src/ledger/outbox.ts), SQLite took the index of owed rows led by `dead`, read every owed row and sorted them each
 * round: 1 s or more a claim at a million owed (bench/README.md "The outboxes' claims without statistics").
 */
import type { CompiledQuery, Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimDueConversions } from '../../src/ledger/conversions.js';
import { dialectFlagsOf } from '../../src/ledger/engine/flags.js';
import { claimDueEvents, markEventsSent } from '../../src/ledger/events.js';
import { claimDueHeldSends } from '../../src/ledger/held-sends.js';
import type { Database } from '../../src/ledger/schema.js';
import { sqlitePlanOf } from '../helpers/query-plans.js';

const NOW = 1_800_000_000_000;
type Claim = (db: Kysely<Database>) => Promise<unknown>;
const claimEvents: Claim = (db) => claimDueEvents(db, dialectFlagsOf(db), 100, NOW, 60_000, 'token');
/** A statement of the claim's by what its SQL holds (the event claim's round runs two, in a transaction). */
const statement = (holds: string) => (query: CompiledQuery) => query.sql.includes(holds);

/** The claim's search for its rows: the statement the UPDATE's `where id in (…)` runs. */
const CLAIM_PLANS: Array<[string, Claim, string, string]> = [
  [
    'conversions',
    (db) => claimDueConversions(db, dialectFlagsOf(db), 100, NOW, 60_000, 'token'),
    'claimed_until',
    'SEARCH conversions USING INDEX conversions_due (next_attempt_at<?)',
  ],
  [
    'held sends',
    (db) => claimDueHeldSends(db, dialectFlagsOf(db), 100, NOW, 60_000, 'token'),
    'claimed_until',
    'SEARCH held_sends USING INDEX held_sends_due (next_attempt_at<?)',
  ],
  ['CRM events: the due heads', claimEvents, 'claimed_until', 'SEARCH e USING INDEX crm_events_due_heads (next_attempt_at<?)'],
  ['CRM events: the new heads claimed', claimEvents, 'claimed_until', 'SCAN e USING INDEX crm_events_undecided'],
  ['CRM events: the other new events decided', claimEvents, 'set head = case', 'SCAN crm_events USING INDEX crm_events_undecided'],
];

describe('the outboxes’ claims on SQLite without statistics', () => {
  it.each(CLAIM_PLANS)('%s: read through the index of due rows, never sorted whole', async (_name, claim, holds, step) => {
    const plan = await sqlitePlanOf(claim, { which: statement(holds) });
    expect(plan).toContain(step);
    expect(plan).not.toMatch(/_unposted|_unsent_state|_owed/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN crm_events USING COVERING INDEX crm_events_unsent_user/);
  });

  it('CRM events: each candidate and each next head is one seek into its player’s owed events', async () => {
    const seek = 'USING COVERING INDEX crm_events_unsent_user (user_id=?';
    expect(await sqlitePlanOf(claimEvents, { which: statement('claimed_until') })).toContain(`SEARCH o ${seek}`);
    expect(await sqlitePlanOf(claimEvents, { which: statement('set head = case') })).toContain(`SEARCH p ${seek} AND id<?)`);
    const promote = await sqlitePlanOf((db) => markEventsSent(db, [1, 2], 'token', NOW, 200), { which: statement('set head = case') });
    expect(promote).toContain(`SEARCH o ${seek})`);
    expect(promote).toContain('SEARCH s USING INTEGER PRIMARY KEY');
  });
});
