/**
 * The routing changes in force in one process (src/provider-wrappers/routing.ts), on a real ledger: an admin's change
 * applies at once, and a poll's read that began before the change committed and ends after it does not undo it.
 * Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { createRouting } from '../../src/provider-wrappers/routing.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { runningAfterFirstRead } from '../helpers/ledger.js';
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

describe('the routing changes in force', () => {
  it("keep an admin's change when a poll's read that began before it ends after it", async () => {
    // The poll reads the stored changes (none yet); before its rows reach it, an admin suspends infobip.
    let changed: unknown;
    const polling = runningAfterFirstRead(ledger.db, 'routing_controls', async () => {
      changed = await routing.change({ action: 'suspend', provider: 'infobip' }, 'admin');
      expect([...routing.controls().suspended]).toEqual(['infobip']);
    });
    const routing = createRouting(config, { db: ledger.db, readDb: polling, logger: silentLogger, now: () => Date.now() });
    // The poll's rows, read before the change, arrive after it: the change stays.
    await routing.refresh();
    expect(changed).toMatchObject({ ok: true, target: 'provider:infobip' });
    expect([...routing.controls().suspended]).toEqual(['infobip']);
    // The next poll reads it stored.
    await routing.refresh();
    expect([...routing.controls().suspended]).toEqual(['infobip']);
    expect(await routing.change({ action: 'resume', provider: 'infobip' }, 'admin')).toMatchObject({ ok: true });
    await routing.refresh();
    expect([...routing.controls().suspended]).toEqual([]);
  });
});
