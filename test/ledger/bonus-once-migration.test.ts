/**
 * Migration 2026-11-28-40-bonus-once-per-player on a ledger holding rows of the version before it (SQLite, or
 * PostgreSQL under TEST_DATABASE_URL): every bonus key gets its row's player, every row keeps its data, and the keys
 * then tell players apart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bonusOnceKey } from '../../src/events/bonus-event.js';
import { migrateToLatest } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { enqueueEventOnce } from '../../src/ledger/events.js';
import { openTestLedgerBefore, type TestLedger } from '../helpers/database.js';

const MIGRATION = '2026-11-28-40-bonus-once-per-player';
/** More keyed rows than the migration reads at once, so it pages. */
const KEYED = 2_345;

let opened: TestLedger;
let ledger: Ledger;

/** A crm_events row as the version before the migration wrote it. */
function oldRow(n: number, dedupKey: string | null) {
  return {
    event_id: `e-${String(n).padStart(5, '0')}`,
    type: 'BONUS',
    method: 'POST',
    path: '/v1/integration/bonus',
    user_id: `player-${n % 7}`,
    payload_json: JSON.stringify({ user_id: `player-${n % 7}`, user_bonus_id: `ub-${n}`, status: 'Created', amount: n }),
    source: 'relay',
    dedup_key: dedupKey,
    attempts: n % 3,
    next_attempt_at: 1_000 + n,
    claimed_until: 0,
    sent_at: n % 2 === 0 ? 2_000 + n : null,
    dead: 0,
    created_at: 1_000 + n,
  };
}

beforeAll(async () => {
  opened = await openTestLedgerBefore(MIGRATION, 'bonus-once-migration');
  ledger = opened.ledger;
  const rows = [
    ...Array.from({ length: KEYED }, (_v, n) => oldRow(n, JSON.stringify(['bonus', `ub-${n}`, 'Created']))),
    // A status change whose ids hold the key's own punctuation, and events without a key (Ongoing, other kinds).
    oldRow(KEYED, JSON.stringify(['bonus', 'ub-"quoted",\\x', 'Completed'])),
    oldRow(KEYED + 1, null),
    oldRow(KEYED + 2, null),
  ];
  for (let i = 0; i < rows.length; i += 200)
    await ledger.db
      .insertInto('crm_events')
      .values(rows.slice(i, i + 200) as never)
      .execute();
  await migrateToLatest(ledger.db);
});

afterAll(() => opened.close());

describe(`migration ${MIGRATION}`, () => {
  it('gives every stored bonus key its row’s player, in the form bonusOnceKey writes, and changes nothing else', async () => {
    const rows = await ledger.db.selectFrom('crm_events').selectAll().orderBy('event_id').execute();
    expect(rows).toHaveLength(KEYED + 3);
    for (const [n, row] of rows.entries()) {
      const { dedup_key: _none, ...before } = oldRow(n, null);
      const userBonusId = n === KEYED ? 'ub-"quoted",\\x' : `ub-${n}`;
      const status = n === KEYED ? 'Completed' : 'Created';
      // `head` is a later migration's (2026-11-30-20-event-heads), checked in test/ledger/event-heads-migration.test.ts.
      const { id: _id, dedup_key, body_fingerprint, head: _head, ...kept } = row;
      expect(dedup_key).toBe(n > KEYED ? null : bonusOnceKey(before.user_id, userBonusId, status));
      expect(body_fingerprint).toBeNull();
      const times = {
        next_attempt_at: Number(kept.next_attempt_at),
        created_at: Number(kept.created_at),
        sent_at: kept.sent_at === null ? null : Number(kept.sent_at),
      };
      expect({ ...kept, ...times }).toEqual({ ...before, claim_token: null, http_status: null, last_error: null, sms_id: null, traceparent: null });
    }
  });

  it('then finds a stored event for its own player only, and answers it without a fingerprint', async () => {
    const event = { type: 'BONUS', method: 'POST' as const, path: '/v1/integration/bonus', payload: { status: 'Created' }, source: 'relay' as const };
    const owner = await enqueueEventOnce(ledger.db, { ...event, userId: 'player-5' }, bonusOnceKey('player-5', 'ub-5', 'Created')!, 'f', 9_000);
    expect(owner).toEqual({ queued: false, first: { eventId: 'e-00005', fingerprint: null } });
    const other = await enqueueEventOnce(ledger.db, { ...event, userId: 'player-6' }, bonusOnceKey('player-6', 'ub-5', 'Created')!, 'f', 9_000);
    expect(other.queued).toBe(true);
  });
});
