/**
 * A prefilled ledger (src/ledger/prefill.ts) is one the gateway serves as its own: a CRM retry of a prefilled
 * activity.id answers its first sms_id, a receipt for a prefilled provider message id finds its message, and retention
 * deletes what is older than its window with everything that belongs to it. On SQLite, and on PostgreSQL (the run's
 * server, or the machine's).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createRetention } from '../../src/delivery/retention.js';
import { openLedger } from '../../src/ledger/engine/db.js';
import { prefillLedger } from '../../src/ledger/prefill.js';
import { prefillPlayer, prefillPlayers } from '../../src/ledger/prefill-rows.js';
import { bucketAt } from '../../src/ledger/time-buckets.js';
import { dropPostgresDatabase, postgresDatabaseUrl } from '../helpers/database.js';
import { smsMessage, startTestGateway } from '../helpers/gateway.js';

const DAY_MS = 86_400_000;
const MESSAGES = 2_000;
const dirs: string[] = [];

afterAll(async () => {
  for (const dir of dirs) {
    await dropPostgresDatabase(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Every index's definition, as the database reports it. */
async function indexDefinitions(url: string): Promise<string[]> {
  const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
  try {
    const query = url.startsWith('sqlite:')
      ? sql<{ def: string }>`select coalesce(sql, name) as def from sqlite_master where type = 'index'`
      : sql<{ def: string }>`select indexdef as def from pg_indexes where schemaname = current_schema()`;
    return (await query.execute(ledger.db)).rows.map((r) => r.def).sort();
  } finally {
    await ledger.close();
  }
}

const dialects: Array<[string, (dir: string) => string]> = [
  ['SQLite', (dir) => `sqlite:${join(dir, 'ledger.db')}`],
  ['PostgreSQL', (dir) => postgresDatabaseUrl(dir)],
];

describe.each(dialects)('a prefilled ledger on %s', (_name, urlOf) => {
  it('has the indexes a migrated ledger has when they are built after the rows', async () => {
    const [grown, after] = [mkdtempSync(join(tmpdir(), 'crm-sms-gw-prefill-')), mkdtempSync(join(tmpdir(), 'crm-sms-gw-prefill-'))];
    dirs.push(grown, after);
    const options = { messages: 500, days: 2, now: Date.now(), providers: [['sandbox', 1]] as Array<[string, number]> };
    await prefillLedger(urlOf(grown), options);
    await prefillLedger(urlOf(after), { ...options, indexes: 'after' });
    const definitions = await indexDefinitions(urlOf(grown));
    expect(definitions.length).toBeGreaterThan(20);
    expect(await indexDefinitions(urlOf(after))).toEqual(definitions);
  });

  it('holds the players prefillPlayer names (the bench sends to them: --players), each with its first number', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-prefill-'));
    dirs.push(dir);
    const url = urlOf(dir);
    await prefillLedger(url, { messages: 600, days: 2, now: Date.now(), providers: [['sandbox', 1]] });
    const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
    try {
      // The last day's pairs wait by the hour (recordUserRecipients, src/ledger/messages.ts).
      const waiting = await ledger.db.selectFrom('message_user_recipients_recent').select(['user_id', 'recipient']).execute();
      const pairs = [...(await ledger.db.selectFrom('message_user_recipients').select(['user_id', 'recipient']).execute()), ...waiting];
      // Players are drawn at random, about a dozen messages each, a tenth of them to a second number: all but a rare
      // one hold a message, and a message to their first number.
      const named = Array.from({ length: prefillPlayers(600) }, (_, player) => prefillPlayer(player));
      const userIds = new Set(named.map((p) => p.userId));
      expect(pairs.every((p) => userIds.has(p.user_id))).toBe(true);
      const held = named.filter(({ userId, recipient }) => pairs.some((p) => p.user_id === userId && p.recipient === recipient));
      expect(held.length).toBeGreaterThanOrEqual(named.length - 2);
    } finally {
      await ledger.close();
    }
  });

  it('is served as the gateway’s own: retries, receipts and retention find its messages', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-prefill-'));
    dirs.push(dir);
    const url = urlOf(dir);
    const now = Date.now();
    const result = await prefillLedger(url, { messages: MESSAGES, days: 10, now, providers: [['sandbox', 1]] });
    expect(result.messages).toBe(MESSAGES);

    const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 2 });
    const rows = await ledger.db
      .selectFrom('messages')
      .select(['sms_id', 'activity_key', 'provider_message_id', 'created_at', 'delivery_status'])
      .orderBy('created_at')
      .execute();
    expect(rows).toHaveLength(MESSAGES);
    const counts = async (table: 'receipts' | 'conversions' | 'conversion_attempts') =>
      Number(
        (
          await ledger.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    // Every message has its conversion and attempt; all but those the sweep settled (delivery_unknown) a receipt.
    const unknown = rows.filter((r) => r.delivery_status === 'delivery_unknown').length;
    expect(await counts('conversions')).toBe(MESSAGES);
    expect(await counts('conversion_attempts')).toBe(MESSAGES);
    expect(await counts('receipts')).toBe(MESSAGES - unknown);
    // The console's hourly counters hold every send.
    const sent = await ledger.db
      .selectFrom('delivery_stats')
      .select((eb) => eb.fn.sum<number | string>('n').as('n'))
      .where('period', '=', 'hour')
      .where('outcome', '=', 'submitted')
      .executeTakeFirstOrThrow();
    expect(Number(sent.n)).toBe(MESSAGES);
    expect(Number(rows[0]!.created_at)).toBeGreaterThanOrEqual(now - 10 * DAY_MS);
    expect(Number(rows.at(-1)!.created_at)).toBeLessThan(now);
    await ledger.close();

    const gw = await startTestGateway({ database: { url }, delivery: { worker: false } }, { dir });
    try {
      // A CRM retry of a prefilled activity.id: its first sms_id, nothing sent again.
      const old = rows[17]!;
      const retry = await gw.post('/channels/sms/single', smsMessage(Number(old.activity_key)));
      expect(retry).toMatchObject({ status: 200, json: { sms_id: old.sms_id } });

      // A late receipt finds its message: the sandbox's name its sms_id (test/ledger/receipt-targets.test.ts finds
      // messages by the provider's id).
      const late = rows[1_234]!;
      expect((await gw.postReceipt([{ sms_id: late.sms_id, message_id: late.provider_message_id, status: 'failed' }])).status).toBe(200);
      const check = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 2 });
      try {
        const stored = await check.db
          .selectFrom('receipts')
          .select(['sms_id', 'matched'])
          .where('provider_message_id', '=', late.provider_message_id)
          .where('provider_status', '=', 'failed')
          .executeTakeFirst();
        expect(stored).toEqual({ sms_id: late.sms_id, matched: 1 });

        // Retention with a 5-day window removes exactly the older messages, and what was theirs. On PostgreSQL rows go
        // only up to the start of the cutoff's UTC day (docs/retention.md "How a pass runs": whole days are dropped).
        const exact = now - 5 * DAY_MS;
        const cutoff = check.flags.partitionsByDay ? Math.floor(exact / DAY_MS) * DAY_MS : exact;
        const older = rows.filter((r) => Number(r.created_at) < cutoff);
        expect(older.length).toBeGreaterThan(0);
        const settings = { messages: 5 * DAY_MS, receipts: 0, events: 0, inbound: 0, costs: 0, blank_personal_data_after: 0 };
        const pass = await createRetention({ db: check.db, settings, now: () => now, logger: pino({ level: 'silent' }) }).runPass();
        expect(pass.deleted.messages).toBe(older.length);
        const left = await check.db.selectFrom('messages').select('created_at').orderBy('created_at').execute();
        expect(left).toHaveLength(MESSAGES - older.length);
        expect(Number(left[0]!.created_at)).toBeGreaterThanOrEqual(cutoff);
        const orphans = await check.db
          .selectFrom('conversions')
          .select('sms_id')
          .where(
            'sms_id',
            'in',
            older.slice(0, 500).map((r) => r.sms_id),
          )
          .execute();
        expect(orphans).toEqual([]);
        // Their numbers' entries go with their days: none is left of a day wholly before the cutoff.
        expect(await check.db.selectFrom('recipient_messages').select('sms_id').where('day', '<', bucketAt(cutoff)).execute()).toEqual([]);
        const entries = async (table: 'recipient_messages' | 'recipient_messages_recent') =>
          Number(
            (
              await check.db
                .selectFrom(table)
                .select((eb) => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          );
        // On SQLite the last day's entries still wait by the hour (a view on PostgreSQL holds them all).
        const waiting = check.flags.writesNumberEntries ? await entries('recipient_messages_recent') : 0;
        expect((await entries('recipient_messages')) + waiting).toBeGreaterThanOrEqual(MESSAGES - older.length);
      } finally {
        await check.close();
      }
    } finally {
      await gw.close();
    }
  });
});

describe('a prefilled SQLite ledger’s number entries and player numbers', () => {
  it('are moved under their days, but the last day’s wait by the hour, as a serving gateway leaves them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-prefill-'));
    dirs.push(dir);
    const url = `sqlite:${join(dir, 'ledger.db')}`;
    // 10:30 UTC: the last day holds about ten of the three days' 72 hours.
    const now = Date.UTC(2026, 11, 1, 10, 30);
    await prefillLedger(url, { messages: 720, days: 3, now, providers: [['sandbox', 1]] });
    const ledger = openLedger({ url, sqlite_synchronous: 'normal', pool_size: 1 });
    try {
      const messages = await ledger.db.selectFrom('messages').select(['sms_id', 'user_id', 'recipient', 'created_at']).execute();
      const moved = await ledger.db.selectFrom('recipient_messages').select(['day', 'recipient', 'created_at', 'sms_id']).execute();
      const waiting = await ledger.db.selectFrom('recipient_messages_recent').select(['hour', 'recipient', 'created_at', 'sms_id']).execute();
      const today = bucketAt(now);
      const ofToday = messages.filter((m) => bucketAt(Number(m.created_at)) === today);
      expect(ofToday.length).toBeGreaterThan(50);
      expect(waiting).toHaveLength(ofToday.length);
      expect(moved).toHaveLength(messages.length - ofToday.length);
      expect(waiting.every((e) => Number(e.hour) === Math.floor(Number(e.created_at) / 3_600_000) && Number(e.hour) >= today * 24)).toBe(true);
      expect(moved.every((e) => Number(e.day) === bucketAt(Number(e.created_at)) && Number(e.day) < today)).toBe(true);
      // Each message has its one entry, under its own number.
      const entries = new Map([...moved, ...waiting].map((e) => [e.sms_id, e.recipient]));
      expect(messages.every((m) => entries.get(m.sms_id) === m.recipient)).toBe(true);
      // The (player, number) pairs likewise: the last day's by the hour of each of their messages, the rest once each.
      const pairs = await ledger.db.selectFrom('message_user_recipients').select(['user_id', 'recipient']).execute();
      const recentPairs = await ledger.db.selectFrom('message_user_recipients_recent').select(['hour', 'user_id', 'recipient']).execute();
      const key = (...parts: Array<string | number | null>) => parts.join(' ');
      const before = messages.filter((m) => bucketAt(Number(m.created_at)) < today);
      expect(new Set(pairs.map((p) => key(p.user_id, p.recipient)))).toEqual(new Set(before.map((m) => key(m.user_id, m.recipient))));
      expect(pairs).toHaveLength(new Set(pairs.map((p) => key(p.user_id, p.recipient))).size);
      expect(new Set(recentPairs.map((p) => key(p.hour, p.user_id, p.recipient)))).toEqual(
        new Set(ofToday.map((m) => key(Math.floor(Number(m.created_at) / 3_600_000), m.user_id, m.recipient))),
      );
    } finally {
      await ledger.close();
    }
  });
});
