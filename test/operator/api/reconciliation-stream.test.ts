import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toLoadedUser, saveLoadedUsers } from '../../../src/operator/players/load-players.js';
import { crmReconciliation, sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, TEST_API_KEY, waitFor, type TestGateway } from '../../helpers/gateway.js';

/** Loads users straight through the loader the admin API and the import use (50k PUTs would take a while). */
async function seedUsers(gw: TestGateway, ids: string[], overrides: Record<string, unknown>) {
  for (let i = 0; i < ids.length; i += 5_000) {
    const batch = ids.slice(i, i + 5_000).map((id) => toLoadedUser(sampleUser(id, overrides) as Parameters<typeof toLoadedUser>[0], 0));
    await saveLoadedUsers(gw.gateway.ledger.db, batch, 0);
  }
}

describe('POST /reconciliation on a large table', () => {
  let gw: TestGateway;
  const ids = Array.from({ length: 50_000 }, (_, i) => `player-${String(i).padStart(6, '0')}`);
  beforeAll(async () => {
    gw = await startTestGateway({ operator: { reconciliation_page_size: 1_000 } });
    await seedUsers(gw, ids, { is_blocked: true, consents: [{ type: 'pushNotification', opted_in: true }] });
  });
  afterAll(async () => gw.close());

  it('streams all 50,000 ids as one parseable JSON document, in chunks', async () => {
    const res = await fetch(`${gw.url}/reconciliation`, {
      method: 'POST',
      headers: { 'x-api-key': TEST_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ field: 'blocked' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const body = crmReconciliation.parse(JSON.parse(await res.text()));
    expect(body.users).toEqual(ids);
  });

  it('streams a consent field the same way', async () => {
    const res = await gw.post('/reconciliation', { field: 'consent_push_notification' });
    expect(crmReconciliation.parse(res.json).users).toHaveLength(50_000);
  });
});

describe('POST /reconciliation failing during the run', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Small pages of long ids: the run reads many pages, so it is still reading when the table goes.
    gw = await startTestGateway({ operator: { reconciliation_page_size: 100 } });
    const ids = Array.from({ length: 50_000 }, (_, i) => `${String(i).padStart(6, '0')}-${'x'.repeat(400)}`);
    await seedUsers(gw, ids, { is_excluded: true });
  });
  afterAll(async () => gw?.close());

  const spools = () => readdirSync(tmpdir()).filter((name) => name.startsWith('gw-reconciliation-'));

  it('answers 200 with the error alone, never a partial list, and removes its spool file', async () => {
    const before = new Set(spools());
    const answer = gw.post('/reconciliation', { field: 'excluded' });
    // The run has begun spooling ids; the table disappears under the paginated read.
    await waitFor(() => spools().some((name) => !before.has(name)), 10_000, 'the spool file');
    await sql`drop table operator_users`.execute(gw.gateway.ledger.db);
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ error: expect.any(String), code: 1001 });
    expect(spools().filter((name) => !before.has(name))).toEqual([]);
  });
});
