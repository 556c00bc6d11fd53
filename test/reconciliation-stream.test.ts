import { request, type IncomingMessage } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toLoadedUser, saveLoadedUsers } from '../src/operator/load-players.js';
import { crmReconciliation, sampleUser } from './helpers/crm-schemas.js';
import { startTestGateway, TEST_API_KEY, waitFor, type TestGateway } from './helpers/gateway.js';

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

describe('POST /reconciliation failing after streaming began', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ operator: { reconciliation_page_size: 100 } });
    // Long ids make the answer (~20 MB) far larger than the socket buffers, so the server is still mid-list when
    // the client pauses.
    const ids = Array.from({ length: 50_000 }, (_, i) => `${String(i).padStart(6, '0')}-${'x'.repeat(400)}`);
    await seedUsers(gw, ids, { is_excluded: true });
  });
  afterAll(async () => gw.close());

  it('still answers 200 and ends the JSON with an error field instead of the timestamp', async () => {
    const chunks: Buffer[] = [];
    let response: IncomingMessage | undefined;
    const ended = new Promise<void>((resolve, reject) => {
      const req = request(`${gw.url}/reconciliation`, { method: 'POST', headers: { 'x-api-key': TEST_API_KEY, 'content-type': 'application/json' } }, (res) => {
        res.pause();
        response = res;
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ field: 'excluded' }));
    });
    const res = await waitFor(() => response, 10_000, 'response headers');
    expect(res.statusCode).toBe(200);
    // The table disappears under the paginated read: the next page fails while the answer is half sent.
    await sql`drop table operator_users`.execute(gw.gateway.ledger.db);
    res.resume();
    await ended;

    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    expect(body.error).toEqual(expect.any(String));
    expect(body.timestamp).toBeUndefined();
    expect(body.users.length).toBeGreaterThan(0);
    expect(body.users.length).toBeLessThan(50_000);
  });
});
