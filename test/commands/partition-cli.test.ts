/**
 * `crm-sms-gateway partition` (src/commands/partition.ts) as an operator runs it: refused on SQLite and while an
 * instance is connected; with every instance stopped it lays a PostgreSQL ledger out by day, once, and the gateway
 * served on it after keeps its messages: a CRM retry answers the first sms_id, and a new send lands in its day's table.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeCrm } from '../fakes/crm.js';
import { runCli, startServe, writeConfig } from '../helpers/child.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sandboxReceiptHeaders, smsMessage, TEST_ADMIN_KEY, TEST_API_KEY, testConfigDocument, waitFor } from '../helpers/gateway.js';
import { openLedger } from '../../src/ledger/engine/db.js';
import { DAY_MS, dayBound, partitionByDay } from '../../src/ledger/engine/partitions.js';

let dir: string;
let crm: FakeCrm;
let database: TestDatabase;
const children: Array<{ kill: (signal?: NodeJS.Signals) => boolean; exitCode: number | null }> = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-partition-'));
  database = await createTestDatabase(dir, 'flat');
  crm = await new FakeCrm().start();
});
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await crm.stop();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The flat layout by default, which `partition` converts. */
const config = (layout: 'flat' | 'by_day' = 'flat', name?: string) =>
  writeConfig(
    dir,
    testConfigDocument(dir, {
      database: { url: database.url, layout },
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      log: { level: 'info' },
    }),
    name,
  );

async function send(url: string, id: string): Promise<{ status: number; sms_id: string }> {
  const res = await fetch(`${url}/channels/sms/single`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
    body: JSON.stringify(smsMessage(id)),
  });
  return { status: res.status, sms_id: ((await res.json()) as { sms_id: string }).sms_id };
}

/** The gauge of how far the day tables reach, by table, in days; {} where the ledger has none. */
async function daysAhead(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).text();
  const samples = [...text.matchAll(/^sms_gateway_day_tables_ahead_seconds\{table="(\w+)"\} (\S+)$/gm)];
  return Object.fromEntries(samples.map((m) => [m[1]!, Number(m[2]) / 86_400]));
}

describe.runIf(!process.env.TEST_DATABASE_URL)('crm-sms-gateway partition on SQLite', () => {
  it('refuses, naming why, and leaves the ledger as it was', async () => {
    const file = config();
    expect((await runCli(['migrate', '--config', file])).code).toBe(0);
    for (const step of [[], ['--prepare'], ['--unprepare']]) {
      const run = await runCli(['partition', ...step, '--config', file]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/partition: the SQLite ledger has no partitions/);
    }
  });
});

describe.runIf(Boolean(process.env.TEST_DATABASE_URL))('crm-sms-gateway partition on PostgreSQL', () => {
  it('refuses while an instance is connected; then partitions once, and the gateway serves the ledger as before', async () => {
    const file = config();
    const first = await startServe(file);
    children.push(first.child);
    const before = await send(first.url, 'part-1');
    expect(before.status).toBe(200);
    await waitFor(() => crm.conversions.some((c) => c.sms_id === before.sms_id), 10_000, 'the conversion');
    expect(await daysAhead(first.url)).toEqual({});

    const refused = await runCli(['partition', '--config', file]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/partition: \d+ other session\(s\) connected to the database .*stop every instance/);

    first.child.kill('SIGTERM');
    await waitFor(() => first.child.exitCode !== null, 15_000, 'serve to stop');
    const done = await runCli(['partition', '--config', file]);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    // Unprepared, it builds the receipts' two indexes and copies the activities' keys itself, and says so.
    expect(done.stdout).toMatch(
      /^partition: messages and receipts partitioned by day in \d+\.\d\d s, of which 2 index\(es\) built and 1 activity key\(s\) copied: partition --prepare does that while sends go on; the instances may start now$/m,
    );
    // From the day after tomorrow to a week ahead, both tables, made after the instances were told they may start.
    expect(done.stdout.trim().split('\n').slice(-1)[0]).toMatch(/^partition: made 12 day table\(s\) in \d+\.\d\d s: messages_d\d{8}, receipts_d\d{8}, /);

    const again = await runCli(['partition', '--config', file]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^partition: messages and receipts are partitioned by day already$/m);
    expect(again.stdout).toMatch(/^partition: made 0 day table\(s\) in \d+\.\d\d s$/m);

    const second = await startServe(file);
    children.push(second.child);
    // The CRM's retry of the activity sent before is answered with its first sms_id, from the default partition.
    expect(await send(second.url, 'part-1')).toEqual({ status: 200, sms_id: before.sms_id });
    // Tables to a week after today: the first day without one begins between seven and eight days from now.
    const ahead = await daysAhead(second.url);
    expect(Object.keys(ahead).sort()).toEqual(['messages', 'receipts']);
    for (const days of Object.values(ahead)) expect(days > 7 && days <= 8, String(days)).toBe(true);
    const after = await send(second.url, 'part-2');
    expect(after.status).toBe(200);
    expect(after.sms_id).not.toBe(before.sms_id);
    await waitFor(() => crm.conversions.some((c) => c.sms_id === after.sms_id), 10_000, 'the new message’s conversion');

    // A receipt may name any sms_id: one of a day without a table (a month ahead: forged; or a day retention dropped:
    // a late report) is parked as on the flat tables, its named id kept in its key only, and its sender answered 200.
    const stray = dayBound(Math.floor(Date.now() / DAY_MS) + 30).replace(/0{12}$/, '7f00000000aa');
    const body = JSON.stringify([{ sms_id: stray, message_id: 'stray-1', status: 'delivered' }]);
    const receipt = await fetch(`${second.url}/dlr/sandbox`, { method: 'POST', headers: sandboxReceiptHeaders(body), body });
    expect(receipt.status).toBe(200);

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const parked = await client.query<{ sms_id: string | null; dedup_key: string }>(
        "select sms_id, dedup_key from receipts where provider_message_id = 'stray-1'",
      );
      expect(parked.rows).toHaveLength(1);
      expect(parked.rows[0]!.sms_id).toBeNull();
      expect(parked.rows[0]!.dedup_key).toContain(stray);
      const { rows } = await client.query<{ sms_id: string; t: string }>('select sms_id, tableoid::regclass::text as t from messages order by sms_id');
      // Today's sends sort before the first day table (the day after tomorrow): they stay in the default partition.
      expect(rows).toEqual([
        { sms_id: before.sms_id, t: 'messages_legacy' },
        { sms_id: after.sms_id, t: 'messages_legacy' },
      ]);
      const keys = await client.query<{ activity_key: string; sms_id: string }>('select activity_key, sms_id from message_keys order by sms_id');
      expect(keys.rows.map((r) => r.sms_id)).toEqual([before.sms_id, after.sms_id]);
    } finally {
      await client.end();
    }
  }, 120_000);

  it('prepares while an instance serves, which sends on; the conversion after it builds nothing, and --unprepare refuses then', async () => {
    const file = config();
    const first = await startServe(file);
    children.push(first.child);
    const before = await send(first.url, 'prep-1');
    expect(before.status).toBe(200);
    // A ledger made flat, where the layout by day is asked for (the default): migrate (and serve) say how to convert it.
    const asked = await runCli(['migrate', '--config', config('by_day', 'by-day.yaml')]);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toMatch(/^ledger laid out flat, not by day as database\.layout asks .*`crm-sms-gateway partition --prepare` while it serves/m);
    const prepared = await runCli(['partition', '--prepare', '--config', file]);
    expect(prepared.stderr).toBe('');
    expect(prepared.code).toBe(0);
    expect(prepared.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^partition --prepare: built receipts_legacy_id_idx in \d+\.\d s$/),
      expect.stringMatching(/^partition --prepare: built receipts_legacy_dedup_key_sms_id_key in \d+\.\d s$/),
      expect.stringMatching(/^partition --prepare: filled message_keys with 1 activities' keys in \d+\.\d s$/),
      expect.stringMatching(/^partition --prepare: prepared in \d+\.\d s; stop every instance and cron job, then run crm-sms-gateway partition$/),
    ]);
    // An instance started on the prepared flat ledger (a rolling restart, say) serves it; a message sent after the
    // fill takes its key as it is stored.
    const restarted = await startServe(file);
    children.push(restarted.child);
    const after = await send(restarted.url, 'prep-2');
    expect(after.status).toBe(200);
    await waitFor(() => crm.conversions.some((c) => c.sms_id === after.sms_id), 10_000, 'the conversion');
    for (const instance of [first, restarted]) {
      instance.child.kill('SIGTERM');
      await waitFor(() => instance.child.exitCode !== null, 15_000, 'serve to stop');
    }

    const done = await runCli(['partition', '--config', file]);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^partition: messages and receipts partitioned by day in \d+\.\d\d s; the instances may start now$/m);
    const flat = await runCli(['migrate', '--config', file]);
    expect(flat.stdout).toMatch(/^ledger laid out by day: database\.layout: flat is read only when a ledger is made$/m);
    expect((await runCli(['migrate', '--config', config('by_day', 'by-day.yaml')])).stdout).not.toMatch(/^ledger laid out/m);
    const unprepare = await runCli(['partition', '--unprepare', '--config', file]);
    expect(unprepare.code).toBe(1);
    expect(unprepare.stderr).toMatch(/^crm-sms-gateway: partition --unprepare: messages and receipts are partitioned by day already$/m);

    const second = await startServe(file);
    children.push(second.child);
    expect(await send(second.url, 'prep-1')).toEqual({ status: 200, sms_id: before.sms_id });
    expect(await send(second.url, 'prep-2')).toEqual({ status: 200, sms_id: after.sms_id });
  }, 120_000);

  it('lets the instances start once the conversion is done: they serve while the old rows’ check is validated', async () => {
    const file = config();
    expect((await runCli(['migrate', '--config', file])).code).toBe(0);
    // The conversion's transaction as the command runs it, which leaves the check to be validated after it.
    const ledger = openLedger({ url: database.url, sqlite_synchronous: 'normal', pool_size: 1 });
    await partitionByDay(ledger.db, Date.now()).finally(() => ledger.close());
    // A validation under way holds its lock on the old table until it has read it all: minutes at 90 million messages.
    const validation = new pg.Client({ connectionString: database.url });
    await validation.connect();
    let instance: Awaited<ReturnType<typeof startServe>>;
    let first: { status: number; sms_id: string };
    try {
      await validation.query('begin');
      await validation.query('alter table receipts_legacy validate constraint receipts_legacy_before');
      instance = await startServe(file);
      children.push(instance.child);
      // Its start-up waited for the lock at most 2 s, gave up making the day tables, and serves.
      expect(instance.output()).toMatch(/"msg":"day partitions: gave up for now; the next retention pass tries again"/);
      first = await send(instance.url, 'validating-1');
      expect(first.status).toBe(200);
      // The sandbox's receipt is stored in the old receipts' table while it is being validated.
      await waitFor(() => crm.conversions.some((c) => c.sms_id === first.sms_id), 10_000, 'the conversion');
      // Run again meanwhile, the command waits as long, warns and exits 0: serve and retention make the tables.
      const again = await runCli(['partition', '--config', file]);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/^partition: made 0 day table\(s\) in \d+\.\d\d s$/m);
      expect(again.stderr).toBe(
        'warning: partition: day tables: gave up for now (receipts_legacy: validating receipts_legacy_before); serve and each retention pass try again\n',
      );
      await validation.query('commit');
    } finally {
      await validation.end();
    }
    const done = await runCli(['partition', '--config', file]);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^partition: made 12 day table\(s\) in \d+\.\d\d s: /m);
    expect((await send(instance.url, 'validating-2')).status).toBe(200);
    expect(await send(instance.url, 'validating-1')).toEqual(first);
  }, 120_000);

  it('takes --prepare and --unprepare for partition only, one at a time', async () => {
    const file = config();
    for (const args of [
      ['serve', '--prepare'],
      ['partition', '--prepare', '--unprepare'],
    ]) {
      const run = await runCli([...args, '--config', file]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^crm-sms-gateway: --prepare and --unprepare apply to partition only, one at a time$/m);
    }
  });

  it('makes a new ledger by day when migrate first runs, says so once, and partition finds nothing to do', async () => {
    const file = config('by_day');
    const migrate = await runCli(['migrate', '--config', file]);
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toMatch(/^new ledger: messages and receipts laid out by day, a table per UTC day that retention drops whole$/m);
    const again = await runCli(['migrate', '--config', file]);
    expect(again.stdout).not.toMatch(/new ledger/);
    expect(again.stdout).toMatch(/^database schema is up to date$/m);
    const partition = await runCli(['partition', '--config', file]);
    expect(partition.code).toBe(0);
    expect(partition.stdout).toMatch(/^partition: messages and receipts are partitioned by day already$/m);
    expect(partition.stdout).toMatch(/^partition: made 0 day table\(s\) in \d+\.\d\d s$/m);
  }, 60_000);
});
