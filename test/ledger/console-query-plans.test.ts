/** The console's lists on SQLite read their indexes: no full scan, no temporary sort (EXPLAIN QUERY PLAN). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import { countCreditBacklog, listDeadCredits } from '../../src/ledger/credit-delivery.js';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import { findEventsBySmsId, listEvents } from '../../src/ledger/events.js';
import type { Database } from '../../src/ledger/schema.js';

describe('query plans on SQLite', () => {
  it.each([
    ['the dead list', (db: Kysely<Database>) => listEvents(db, { status: 'dead', limit: 101 }), 'crm_events_dead'],
    ['the dead list of a type', (db: Kysely<Database>) => listEvents(db, { status: 'dead', type: 'BONUS', before: 99, limit: 101 }), 'crm_events_dead'],
    ['the events of a message', (db: Kysely<Database>) => findEventsBySmsId(db, 'x'), 'crm_events_sms_id'],
    ['the dead credits', (db: Kysely<Database>) => listDeadCredits(db, { limit: 101 }), 'operator_credits_dead'],
    ['the dead credits of a player', (db: Kysely<Database>) => listDeadCredits(db, { userId: 'u', before: 99, limit: 101 }), 'operator_credits_user_id'],
    ['the credits outbox line', (db: Kysely<Database>) => countCreditBacklog(db), 'operator_credits_due'],
  ])('%s reads its index', async (_name, run, index) => {
    const file = join(mkdtempSync(join(tmpdir(), 'crm-events-plans-')), 'ledger.db');
    const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
    await migrateToLatest(ledger.db);
    await ledger.close();
    const sqlite = new BetterSqlite3(file, { readonly: true });
    const captured: CompiledQuery[] = [];
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log: (event) => void captured.push(event.query) });
    try {
      await run(db);
      const plan = (sqlite.prepare(`explain query plan ${captured[0]!.sql}`).all(...(captured[0]!.parameters as unknown[])) as Array<{ detail: string }>)
        .map((p) => p.detail)
        .join('\n');
      expect(plan).toContain(index);
      expect(plan).not.toContain('TEMP B-TREE');
    } finally {
      await db.destroy();
    }
  });
});
