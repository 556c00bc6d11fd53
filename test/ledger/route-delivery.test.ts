/**
 * The recent delivery figures of `strategy: cheapest_delivering` (src/ledger/route-delivery.ts) counted by the ledger
 * as the table test counts its simulated streams (test/provider-wrappers/cheapest-delivering.test.ts): per provider
 * and country, messages created in the window and taken, those judged, those delivered on time by a receipt. Runs on
 * SQLite, and on PostgreSQL when TEST_DATABASE_URL is set; on SQLite the statement reads messages_provider_created.
 */
import type { Insertable } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { listRecentDelivery } from '../../src/ledger/route-delivery.js';
import type { MessagesTable } from '../../src/ledger/schema.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { submittedMessageRow } from '../helpers/ledger.js';
import { sqlitePlanOf } from '../helpers/query-plans.js';

const MIN = 60_000;
const NOW = 1_800_000_000_000;
const WINDOW = 15 * MIN;
const DEADLINE = 5 * MIN;

let n = 0;
function message(provider: string, country: string | null, ageMin: number, fields: Partial<Insertable<MessagesTable>> = {}): Insertable<MessagesTable> {
  return submittedMessageRow(`rd-${String(++n).padStart(4, '0')}`, provider, NOW - ageMin * MIN, { country, ...fields });
}
const delivered = (afterMin: number, ageMin: number) => ({
  delivery_status: 'delivered' as const,
  delivery_source: 'receipt' as const,
  completed_at: NOW - ageMin * MIN + afterMin * MIN,
});

describe('listRecentDelivery', () => {
  let opened: TestLedger | undefined;
  let ledger: Ledger;
  beforeAll(async () => {
    opened = await openTestLedger('route-delivery');
    ledger = opened.ledger;
    const rows = [
      // cheap in GB: 3 on time, 1 delivered late, 1 undelivered, 1 late without a receipt, 1 too young to judge.
      message('cheap', 'GB', 14, delivered(1, 14)),
      message('cheap', 'GB', 10, delivered(5, 10)),
      message('cheap', 'GB', 9, delivered(0.5, 9)),
      message('cheap', 'GB', 8, delivered(6, 8)),
      message('cheap', 'GB', 7, { delivery_status: 'undelivered', delivery_source: 'receipt', completed_at: NOW - 6 * MIN }),
      message('cheap', 'GB', 6),
      message('cheap', 'GB', 2),
      // A young message already delivered is judged (on time).
      message('cheap', 'GB', 1, delivered(0.5, 1)),
      // The sweep's delivery_unknown is judged, never on time.
      message('cheap', 'GB', 12, { delivery_status: 'delivery_unknown', delivery_source: 'timeout', completed_at: NOW - MIN }),
      // Outside the window, not taken by the provider, another provider nobody asked about: not counted.
      message('cheap', 'GB', 16, delivered(1, 16)),
      message('cheap', 'GB', 3, { state: 'rejected', submitted_at: null, delivery_status: 'failed', completed_at: NOW - 3 * MIN }),
      message('other', 'GB', 3, delivered(1, 3)),
      // cheap in DE, and a number no country holds.
      message('cheap', 'DE', 4, delivered(1, 4)),
      message('cheap', null, 11, delivered(1, 11)),
      message('dear', 'GB', 9, delivered(2, 9)),
    ];
    await ledger.db.insertInto('messages').values(rows).execute();
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('counts, per provider and country, what was taken, judged, and delivered on time', async () => {
    const rows = await listRecentDelivery(ledger.db, { providers: ['cheap', 'dear'], since: NOW - WINDOW, deadlineMs: DEADLINE, now: NOW });
    const sorted = [...rows].sort((a, b) => `${a.provider}|${a.country}`.localeCompare(`${b.provider}|${b.country}`));
    expect(sorted).toEqual([
      { provider: 'cheap', country: '', sent: 1, judged: 1, onTime: 1 },
      { provider: 'cheap', country: 'DE', sent: 1, judged: 1, onTime: 1 },
      { provider: 'cheap', country: 'GB', sent: 9, judged: 8, onTime: 4 },
      { provider: 'dear', country: 'GB', sent: 1, judged: 1, onTime: 1 },
    ]);
  });

  it('asks nothing for no provider', async () => {
    expect(await listRecentDelivery(ledger.db, { providers: [], since: NOW - WINDOW, deadlineMs: DEADLINE, now: NOW })).toEqual([]);
  });
});

describe('its plan on SQLite', () => {
  it('reads messages_provider_created, a range per provider', async () => {
    const plan = await sqlitePlanOf((db) => listRecentDelivery(db, { providers: ['cheap', 'dear'], since: NOW - WINDOW, deadlineMs: DEADLINE, now: NOW }));
    expect(plan).toContain('messages_provider_created (provider=? AND created_at>?)');
  });
});
