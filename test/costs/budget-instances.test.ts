/**
 * Budgets under concurrency, on both databases: two gateway instances on one ledger take batches at once from both
 * sides, under one cap. Each claim locks its budgets' rows (src/ledger/costs.ts, lockBudgetSpend), so the cap holds
 * across the instances: what was let through never passes it (the promise is "by at most one batch"; the locks keep
 * it to none), nothing refused was sent, and the budget's figure, the rollup and the messages agree.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { dropPostgresDatabase, postgresDatabaseUrl } from '../helpers/database.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';

const BATCH = 20;
const BATCHES_PER_INSTANCE = 8;
/** 0.0100 a message against 1.00: room for 100 of the 320 offered. */
const ROOM = 100;

describe.each([
  ['SQLite (one file, two instances)', (dir: string) => `sqlite:${join(dir, 'ledger.db')}`],
  ['PostgreSQL', (dir: string) => postgresDatabaseUrl(dir)],
])('a budget shared by two instances on %s', (_label, databaseUrl) => {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-budget-'));
  const gateways: TestGateway[] = [];
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await dropPostgresDatabase(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets through no more than the cap allows, refuses the rest with budget_exceeded, and every figure agrees', async () => {
    const overrides = {
      database: { url: databaseUrl(dir) },
      providers: { sandbox: { type: 'sandbox', dlr_delay_ms: 0 } },
      costs: {
        rates: { sandbox: { currency: 'EUR', per_segment: { '*': '0.0100' } } },
        budgets: [{ name: 'all-daily', period: 'day', limit: '1.00', currency: 'EUR' }],
      },
    };
    gateways.push(await startTestGateway(overrides, { dir }));
    gateways.push(await startTestGateway(overrides, { dir }));
    const answers = await Promise.all(
      gateways.flatMap((gw, g) =>
        Array.from({ length: BATCHES_PER_INSTANCE }, (_, b) =>
          gw.post(
            '/channels/sms/batch',
            Array.from({ length: BATCH }, (_, k) => smsMessage(`g${g}-b${b}-${k}`, { recipient: '+447400123456' })),
          ),
        ),
      ),
    );
    const successful = answers.flatMap((a) => a.json.successful as unknown[]);
    const failed = answers.flatMap((a) => a.json.failed as Array<{ code?: string; error: string }>);
    expect(answers.flatMap((a) => a.json.fatal as unknown[])).toEqual([]);
    expect(successful.length).toBeLessThanOrEqual(ROOM);
    // Refusals only once the cap was reached: the instances did not refuse while there was room.
    expect(successful.length).toBe(ROOM);
    expect(failed).toHaveLength(2 * BATCHES_PER_INSTANCE * BATCH - ROOM);
    expect(new Set(failed.map((f) => f.code))).toEqual(new Set(['budget_exceeded']));

    const db = gateways[0]!.gateway.ledger.db;
    const spent = await sql<{ spent: string | number }>`select spent_micros as spent from budget_spend where budget = 'all-daily'`.execute(db);
    expect(spent.rows.map((r) => Number(r.spent))).toEqual([1_000_000]);
    const counted = await sql<{ n: string | number; micros: string | number | null }>`
      select count(*) as n, sum(cost_micros) as micros from messages where cost_source is not null`.execute(db);
    expect(counted.rows.map((r) => [Number(r.n), Number(r.micros)])).toEqual([[ROOM, 1_000_000]]);
    const refused = await sql<{ n: string | number }>`
      select count(*) as n from messages where error_code = 'budget_exceeded' and provider_message_id is null and cost_micros is null`.execute(db);
    expect(Number(refused.rows[0]!.n)).toBe(failed.length);
    const report = await gateways[1]!.get('/admin/costs?group_by=provider', { authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(report.json.rows).toMatchObject([{ provider: 'sandbox', currency: 'EUR', messages: ROOM, spend: '1.00' }]);
  }, 60_000);
});
