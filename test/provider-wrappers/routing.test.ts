/**
 * The routing changes in force in one process (src/provider-wrappers/routing.ts), on a real ledger: an admin's change
 * applies at once, and a poll's read that began before the change committed and ends after it does not undo it.
 * Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import type { Database } from '../../src/ledger/schema.js';
import { createRouting } from '../../src/provider-wrappers/routing.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { silentLogger } from '../helpers/providers.js';

const config = parseConfig(
  {
    server: { environment: 'development' },
    database: { url: 'sqlite::memory:' },
    auth: { api_keys: ['k'] },
    providers: { sinch: { type: 'sandbox' }, infobip: { type: 'sandbox' } },
  },
  {},
);

let opened: TestLedger | undefined;
let ledger: Ledger;
beforeEach(async () => {
  opened = await openTestLedger('routing');
  ledger = opened.ledger;
});
afterEach(async () => {
  await opened?.close();
});

/** `db` whose next statement's rows are held back until `release` is called. */
function holdingNextRead(db: Kysely<Database>): { db: Kysely<Database>; release: () => void; read: Promise<void> } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let read!: () => void;
  const began = new Promise<void>((resolve) => {
    read = resolve;
  });
  let held = false;
  const holding = db.withPlugin({
    transformQuery: ({ node }) => node,
    async transformResult({ result }) {
      if (held) return result;
      held = true;
      read();
      await released;
      return result;
    },
  });
  return { db: holding, release, read: began };
}

describe('the routing changes in force', () => {
  it("keep an admin's change when a poll's read that began before it ends after it", async () => {
    const reads = holdingNextRead(ledger.db);
    const routing = createRouting(config, { db: ledger.db, readDb: reads.db, logger: silentLogger, now: () => Date.now() });
    // The poll reads the stored changes (none yet), and its rows are held back.
    const poll = routing.refresh();
    await reads.read;
    expect(await routing.change({ action: 'suspend', provider: 'infobip' }, 'admin')).toMatchObject({ ok: true, target: 'provider:infobip' });
    expect([...routing.controls().suspended]).toEqual(['infobip']);
    // The poll's rows, read before the change, arrive now: the change stays.
    reads.release();
    await poll;
    expect([...routing.controls().suspended]).toEqual(['infobip']);
    // The next poll reads it stored.
    await routing.refresh();
    expect([...routing.controls().suspended]).toEqual(['infobip']);
    expect(await routing.change({ action: 'resume', provider: 'infobip' }, 'admin')).toMatchObject({ ok: true });
    await routing.refresh();
    expect([...routing.controls().suspended]).toEqual([]);
  });
});
