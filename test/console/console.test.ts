import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type CompiledQuery } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSessionCodec } from '../../src/console/session.js';
import { percent } from '../../src/console/pages.js';
import { deliveryRate, loadConsoleSummary, percentile } from '../../src/console/summary.js';
import { conversionPanel } from '../../src/delivery/dead-letters-page.js';
import { eventPanel } from '../../src/events/dead-events-page.js';
import { creditPanel } from '../../src/operator/credits/dead-credits-page.js';
import { emptyCounts } from '../../src/ledger/delivery-stats.js';
import type { Database } from '../../src/ledger/schema.js';
import { FakeCrm } from '../fakes/crm.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
let gw: TestGateway | undefined;

beforeAll(async () => {
  await crm.start();
});
afterAll(async () => crm.stop());
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  crm.reset();
});

async function login(target: TestGateway, headers: Record<string, string> = {}) {
  const res = await fetch(`${target.url}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ key: TEST_ADMIN_KEY }).toString(),
  });
  return { res, cookie: res.headers.get('set-cookie')! };
}

describe('console sessions', () => {
  let clock = 1_000_000;
  const codec = createSessionCodec(TEST_ADMIN_KEY, 60_000, () => clock);

  it.each([
    ['a token it issued', (t: string) => t, true],
    ['a token whose expiry was edited', (t: string) => t.replace(/^v1\.\d+/, `v1.${clock + 10_000_000}`), false],
    ['a token whose signature was edited', (t: string) => `${t.slice(0, -2)}xx`, false],
    ['a token signed with another admin key', () => createSessionCodec('another-admin-key-0123', 60_000, () => clock).issue().token, false],
    ['garbage', () => 'v1.nope', false],
  ])('accepts only %s when valid', (_label, alter, valid) => {
    const { token } = codec.issue();
    expect(codec.verify(alter(token)) !== null).toBe(valid);
  });

  it('ends a session at its expiry and ties the CSRF token to the session', () => {
    const first = codec.issue();
    const second = codec.issue();
    expect(codec.checkCsrf(first.session, codec.csrfToken(first.session))).toBe(true);
    expect(codec.checkCsrf(first.session, codec.csrfToken(second.session))).toBe(false);
    expect(codec.checkCsrf(first.session, undefined)).toBe(false);
    clock += 60_000;
    expect(codec.verify(first.token)).toBeNull();
  });

  it('keeps the key out of URLs and the session in an HttpOnly, SameSite=Strict cookie', async () => {
    gw = await startTestGateway();
    const { res, cookie } = await login(gw);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    expect(cookie).toMatch(/^console_session=v1\./);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Path=\/console/);
    expect(cookie).not.toMatch(/Secure/);
    expect(cookie).not.toContain(TEST_ADMIN_KEY);
    // Behind a TLS-terminating proxy the cookie is marked Secure.
    expect((await login(gw, { 'x-forwarded-proto': 'https' })).cookie).toMatch(/; Secure/);
  });

  it('refuses a replay whose CSRF token is not the session’s, and changes nothing', async () => {
    gw = await startTestGateway({ crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' }, delivery: { poll_interval: '20ms', max_attempts: 1 } });
    crm.failNext(1, 500);
    await gw.post('/channels/sms/single', smsMessage('csrf-dead'));
    await waitFor(async () => (await conversionPanel.load(gw!.gateway.ledger.db)).backlog.dead === 1, 5_000, 'a dead conversion');
    const cookie = (await login(gw)).cookie.split(';')[0]!;
    const forged = await fetch(`${gw.url}/console/replay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'csrf=guessed',
    });
    expect(forged.status).toBe(403);
    expect((await conversionPanel.load(gw.gateway.ledger.db)).backlog.dead).toBe(1);
  });
});

describe('console figures', () => {
  it.each([
    [[], 0.5, null],
    [[10], 0.95, 10],
    [[1, 2, 3, 4], 0.5, 2],
    [Array.from({ length: 100 }, (_, i) => i + 1), 0.95, 95],
    [Array.from({ length: 100 }, (_, i) => i + 1), 0.5, 50],
  ])('percentile of %j at %s is %s', (values, p, expected) => {
    expect(percentile(values, p)).toBe(expected);
  });

  it.each([
    [{ delivered: 100, undelivered: 0 }, '100.0 %'],
    // 15 of 67,692 not delivered: never shown as 100.0 %.
    [{ delivered: 67_677, undelivered: 15 }, '99.9 %'],
    [{ delivered: 1, undelivered: 1 }, '50.0 %'],
    [{ delivered: 0, undelivered: 0 }, '—'],
  ])('shows the rate of %j as %s, rounded down', (counts, shown) => {
    expect(percent(deliveryRate({ ...emptyCounts(), ...counts }))).toBe(shown);
  });
});

describe('console counters (delivery_stats)', () => {
  it('count send outcomes and terminal statuses, and move a timed-out unknown when a late receipt replaces it', async () => {
    // The counters cover the whole ledger: this test needs one of its own.
    gw = await startTestGateway({
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', unknown_after: '1ms' },
    });
    const recipients = {
      delivered: '+447700900123',
      undelivered: '+447700900001',
      failed: '+447700900002',
      silent: '+447700900003',
      rejected: '+447700900004',
      transient: '+447700900005',
    };
    const sent: Record<string, string> = {};
    for (const [id, recipient] of Object.entries(recipients))
      sent[id] = (await gw.post('/channels/sms/single', smsMessage(`count-${id}`, { recipient }))).json.sms_id;
    await waitFor(() => crm.conversions.length === 3, 10_000, 'three receipts reported');
    await gw.gateway.sweep();
    const hour = async () => (await loadConsoleSummary(gw!.gateway.ledger.db, ['sandbox'], Date.now())).windows[0]!.rows[0]!;
    expect(await hour()).toEqual({
      provider: 'sandbox',
      counts: { ...emptyCounts(), submitted: 4, rejected: 1, retryable: 1, delivered: 1, undelivered: 1, failed: 1, delivery_unknown: 1 },
    });
    await gw.postReceipt([{ sms_id: sent.silent, message_id: 'late', status: 'delivered' }]);
    expect((await hour()).counts).toMatchObject({ delivered: 2, delivery_unknown: 0 });

    // The panels: refusals by reason, receipt latency over the real receipts, the hour's rate per provider.
    const owing = await conversionPanel.load(gw.gateway.ledger.db);
    expect(owing.oldestOwed === null || owing.oldestOwed <= Date.now()).toBe(true);
    await waitFor(async () => (await conversionPanel.load(gw!.gateway.ledger.db)).oldestOwed === null, 10_000, 'every conversion posted');
    const summary = await loadConsoleSummary(gw.gateway.ledger.db, ['sandbox'], Date.now());
    expect(summary.refusals).toEqual([{ provider: 'sandbox', reason: expect.any(String), n: 1 }]);
    expect(summary.latency).toEqual([{ provider: 'sandbox', p50: expect.any(Number), p95: expect.any(Number), n: 4 }]);
    expect(summary.rates[0]!.points.at(-1)).toMatchObject({ rate: 0.5, settled: 4 });
    expect((await conversionPanel.load(gw.gateway.ledger.db)).oldestOwed).toBeNull();
  });

  it('read only counters and index ranges, never a whole table (SQLite query plans)', async () => {
    // Query plans are read from SQLite's EXPLAIN, so this gateway keeps a SQLite ledger on every test run.
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-plans-'));
    gw = await startTestGateway({ database: { url: `sqlite:${join(dir, 'ledger.db')}` } }, { dir });
    await gw.post('/channels/sms/single', smsMessage('plan-1'));
    const sqlite = new BetterSqlite3(`${gw.dir}/ledger.db`, { readonly: true });
    const captured: CompiledQuery[] = [];
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log: (event) => void captured.push(event.query) });
    try {
      await loadConsoleSummary(db, ['sandbox'], Date.now());
      for (const panel of [conversionPanel, eventPanel, creditPanel]) await panel.load(db);
      expect(captured.length).toBeGreaterThan(0);
      for (const query of captured) {
        // messages only through the bounded ranges of ledger/console-stats.ts.
        if (/"messages"/.test(query.sql)) expect(query.sql).toMatch(/"created_at" >= \?/);
        const plan = sqlite.prepare(`explain query plan ${query.sql}`).all(...(query.parameters as unknown[])) as Array<{ detail: string }>;
        // Every table access goes through an index (a bare "SCAN table" would read every row).
        for (const { detail } of plan) if (/^(SCAN|SEARCH) /.test(detail)) expect(detail, query.sql).toMatch(/USING (COVERING )?INDEX|USING PRIMARY KEY/);
        if (/"messages"/.test(query.sql))
          expect(plan.map((p) => p.detail).join('\n'), query.sql).toMatch(/SEARCH messages USING INDEX messages_(provider_created|status) \(/);
      }
    } finally {
      await db.destroy();
    }
  });
});
