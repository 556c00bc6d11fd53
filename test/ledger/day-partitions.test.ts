/**
 * PostgreSQL's day partitions (src/ledger/engine/partitions.ts, made by `crm-sms-gateway partition`): which day tables are
 * made and which days may go (a table, on both databases); and, on PostgreSQL under TEST_DATABASE_URL, the partitioned
 * tables have the flat tables' columns and indexes, a ledger written before keeps its rows and its activities' first
 * messages, a new message lands in its day's table, retention drops a finished day with everything of its messages
 * and leaves the others, and making the tables is idempotent and gives up, without an error, on a lock it is not
 * granted. A new ledger is made by day in its first migrations (migrateToLatest), once however many processes start
 * on it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CompiledQuery, type Kysely, type KyselyPlugin, sql } from 'kysely';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction, migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import { migrations } from '../../src/ledger/engine/migrations.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import type { Database } from '../../src/ledger/schema.js';
import { findMessagesByActivityKeys, insertNewMessages, recordSendOutcomes, type NewMessage, type SendOutcomeRecord } from '../../src/ledger/messages.js';
import { anyParkedReceipts } from '../../src/ledger/receipts.js';
import { findReceiptTargetsByProviderId } from '../../src/ledger/receipt-targets.js';
import { claimDueConversions, insertConversions } from '../../src/ledger/conversions.js';
import {
  DAY_MS,
  DAYS_AHEAD,
  dayBound,
  dayOfSmsId,
  dayRangeOf,
  ensureDayPartitions,
  firstDayWithout,
  parsePartitionName,
  partitionByDay,
  partitionName,
  planDayPartitions,
  preparePartitionByDay,
  readPartitionState,
  readPreparedState,
  unpreparePartitionByDay,
} from '../../src/ledger/engine/partitions.js';
import { dropFinishedDay, findDaysToDrop } from '../../src/ledger/retention.js';
import { createTestDatabase, openTestLedger, openTestLedgerBefore, type TestLedger } from '../helpers/database.js';
import { waitFor } from '../helpers/gateway.js';
import { submittedMessageRow } from '../helpers/ledger.js';

const D = 20_500; // 2026-02-16
const names = (day: number, tables: ReadonlyArray<'messages' | 'receipts'> = ['messages', 'receipts']) => tables.map((t) => partitionName(t, day));

describe('day bounds and names', () => {
  it('writes a day as the lowest sms_id of its milliseconds, and reads it back', () => {
    expect(dayBound(0)).toBe('00000000-0000-0000-0000-000000000000');
    expect(dayBound(D)).toBe(
      `${(D * DAY_MS).toString(16).padStart(12, '0').slice(0, 8)}-${(D * DAY_MS).toString(16).padStart(12, '0').slice(8)}-0000-0000-000000000000`,
    );
    expect(dayOfSmsId(dayBound(D))).toBe(D);
    expect(dayOfSmsId(uuidv7({ msecs: (D + 1) * DAY_MS - 1 }))).toBe(D);
    expect(partitionName('messages', D)).toBe('messages_d20260216');
    expect(parsePartitionName('receipts_d20260216')).toEqual({ table: 'receipts', day: D });
    expect(parsePartitionName('conversions_d20260216')).toBeUndefined();
    expect(parsePartitionName('messages_legacy')).toBeUndefined();
    expect(parsePartitionName('message_parts_d20260217')).toBeUndefined();
  });
});

describe('planDayPartitions', () => {
  it.each([
    {
      case: 'a fresh migration makes the days from the legacy bound to today + ahead, messages first',
      input: { existing: [], legacyEnd: D + 2, today: D, ahead: 3 },
      create: [D + 2, D + 3].flatMap((day) => names(day)),
      drop: [],
    },
    {
      case: 'days that exist are not made again',
      input: { existing: names(D + 2), legacyEnd: D + 2, today: D, ahead: 3 },
      create: names(D + 3),
      drop: [],
    },
    {
      case: 'a table missing from a day is made alone',
      input: { existing: names(D + 2, ['messages']), legacyEnd: D + 2, today: D + 2, ahead: 0 },
      create: [partitionName('receipts', D + 2)],
      drop: [],
    },
    {
      case: 'nothing before today is made: a day retention dropped stays dropped',
      input: { existing: names(D + 5), legacyEnd: D + 2, today: D + 5, ahead: 1 },
      create: names(D + 6),
      drop: [],
    },
    {
      case: 'no day from where the default partition holds sms_ids again',
      input: { existing: [], legacyEnd: D + 2, legacyFrom: D + 4, today: D + 2, ahead: 7 },
      create: [D + 2, D + 3].flatMap((day) => names(day)),
      drop: [],
    },
    {
      case: 'a day goes once it ended before the cutoff, not the day the cutoff is in',
      input: { existing: [...names(D), ...names(D + 1), 'messages_legacy'], legacyEnd: D, today: D + 1, ahead: 0, cutoff: (D + 1) * DAY_MS + 5 },
      create: [],
      drop: [D],
    },
    {
      case: 'a day ending exactly at the cutoff goes',
      input: { existing: [...names(D), ...names(D + 1)], legacyEnd: D, today: D + 1, ahead: 0, cutoff: (D + 2) * DAY_MS },
      create: [],
      drop: [D, D + 1],
    },
  ])('$case', ({ input, create, drop }) => {
    const plan = planDayPartitions(input);
    expect(plan.create.map((c) => partitionName(c.table, c.day))).toEqual(create);
    expect(plan.drop).toEqual(drop);
  });
});

describe('firstDayWithout', () => {
  it.each([
    { case: 'the day after the last of a run from today', existing: [...names(D), ...names(D + 1)], legacyEnd: D, today: D, first: D + 2 },
    { case: 'today, when today has no table', existing: names(D + 1), legacyEnd: D, today: D, first: D },
    { case: 'from the legacy bound while the default partition holds today', existing: names(D + 2), legacyEnd: D + 2, today: D, first: D + 3 },
    { case: 'one table of two: the other is counted alone', existing: [...names(D), partitionName('messages', D + 1)], legacyEnd: D, today: D, first: D + 1 },
  ])('$case', ({ existing, legacyEnd, today, first }) => {
    expect(firstDayWithout(existing, 'receipts', legacyEnd, today)).toBe(first);
  });
});

describe('dayRangeOf', () => {
  const at = (day: number, ms = 1) => uuidv7({ msecs: day * DAY_MS + ms });
  it.each([
    { case: 'one day', ids: [at(D), at(D, DAY_MS - 1)], range: [dayBound(D), dayBound(D + 1)] },
    { case: 'two days, in any order', ids: [at(D + 1), at(D)], range: [dayBound(D), dayBound(D + 2)] },
    { case: 'days apart: the days between too', ids: [at(D + 3), at(D)], range: [dayBound(D), dayBound(D + 4)] },
    { case: 'an id a day cannot be read from', ids: [at(D), 'sms-1'], range: undefined },
    { case: 'upper-case hex (not an id of ours)', ids: [at(D).toUpperCase()], range: undefined },
    { case: 'no ids', ids: [], range: undefined },
  ])('$case', ({ ids, range }) => {
    expect(dayRangeOf(ids)).toEqual(range);
  });

  it('puts every id inside its range, as text sorts', () => {
    const ids = [at(D), at(D, DAY_MS - 1), at(D + 1, 0)];
    const [from, to] = dayRangeOf(ids)!;
    for (const id of ids) expect(from <= id && id < to).toBe(true);
  });
});

const postgres = Boolean(process.env.TEST_DATABASE_URL);

describe.runIf(postgres)('PostgreSQL: partitionByDay and the day tables', () => {
  let opened: TestLedger;
  let ledger: Ledger;
  const now = Date.now();
  const today = Math.floor(now / DAY_MS);
  const oldId = uuidv7({ msecs: now - 60_000 });

  const message = (smsId: string, at: number, fields: Record<string, unknown> = {}) =>
    submittedMessageRow(smsId, 'sandbox', at, { user_id: `u-${smsId}`, recipient: `+4477009${smsId.slice(-5)}`, ...fields }) as unknown as NewMessage;
  const partitionOf = async (table: string, smsId: string) =>
    (
      await ledger.db.executeQuery<{ t: string }>({
        sql: `select tableoid::regclass::text as t from ${table} where sms_id = $1`,
        parameters: [smsId],
        query: {} as never,
        queryId: {} as never,
      })
    ).rows.map((r) => r.t);
  const count = async (table: string, where: string, value: unknown) =>
    Number(
      (
        await ledger.db.executeQuery<{ n: string }>({
          sql: `select count(*) as n from ${table} where ${where}`,
          parameters: [value],
          query: {} as never,
          queryId: {} as never,
        })
      ).rows[0]!.n,
    );

  /** A delivered message's receipt, its posted conversion and the conversion's attempt, at `at`. */
  const storeDelivery = async (smsId: string, at: number) => {
    await ledger.db
      .insertInto('receipts')
      .values({
        provider: 'sandbox',
        dedup_key: `k-${smsId}`,
        sms_id: smsId,
        provider_message_id: `pm-${smsId}`,
        provider_status: 'DELIVRD',
        mapped_status: 'delivered',
        error_code: null,
        matched: 1,
        received_at: at,
      } as never)
      .execute();
    const conversion = await ledger.db
      .insertInto('conversions')
      .values({
        sms_id: smsId,
        delivery_status: 'delivered',
        attempts: 1,
        next_attempt_at: at,
        claimed_until: 0,
        dead: 0,
        created_at: at,
        posted_at: at,
      } as never)
      .returning('id')
      .executeTakeFirstOrThrow();
    await ledger.db
      .insertInto('conversion_attempts')
      .values({ conversion_id: conversion.id, attempted_at: at, ok: 1, http_status: 200, error: null } as never)
      .execute();
  };

  // The ledger's own connection or transaction, its statements kept as they are run (the flags are the ledger's: its
  // adapter): a builder's through a plugin, compiled again; a template's, compiled already, as it is given (the last:
  // a template's first call compiles its shape with markers for values).
  const statements: CompiledQuery[] = [];
  const keep: KyselyPlugin = {
    transformQuery: ({ node, queryId }) => (statements.push(ledger.db.getExecutor().compileQuery(node, queryId)), node),
    transformResult: async ({ result }) => result,
  };
  const seen = <T extends Kysely<Database>>(db: T): T =>
    new Proxy(db.withPlugin(keep) as T, {
      get: (target, key) => {
        const value = Reflect.get(target, key) as unknown;
        if (key === 'executeQuery') return (query: CompiledQuery) => (statements.push(query), Reflect.apply(value as () => unknown, target, [query]));
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const explained = async (statement: CompiledQuery) =>
    (await ledger.db.executeQuery<{ 'QUERY PLAN': string }>({ ...statement, sql: `explain ${statement.sql}` })).rows.map((r) => r['QUERY PLAN']).join('\n');
  const tablesOf = (text: string) => [...new Set(text.match(/messages_(?:d\d{8}|legacy)/g))].sort();

  beforeAll(async () => {
    opened = await openTestLedger('day-partitions', 2, 'flat');
    ledger = opened.ledger;
    // A ledger written before the conversion: a message with a receipt, a posted conversion and its attempt.
    await ledger.db
      .insertInto('messages')
      .values(message(oldId, now - 60_000, { delivery_status: 'delivered', delivery_source: 'receipt' }) as never)
      .execute();
    await storeDelivery(oldId, now);
    expect(ledger.flags.partitionsByDay).toBe(false);
    await partitionByDay(ledger.db, now);
    expect(ledger.flags.partitionsByDay).toBe(true);
  });
  afterAll(() => opened?.close());

  it('gives each parent the columns and indexes of the table it replaced (now its default partition), and nothing else', async () => {
    const rows = async <T>(text: string, values: unknown[]) =>
      (await ledger.db.executeQuery<T>({ sql: text, parameters: values, query: {} as never, queryId: {} as never })).rows;
    for (const table of ['messages', 'receipts']) {
      const columns = (name: string) =>
        rows<{ c: string }>(
          `select column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as c
             from information_schema.columns where table_schema = current_schema() and table_name = $1 order by ordinal_position`,
          [name],
        );
      expect(await columns(table)).toEqual(await columns(`${table}_legacy`));
    }
    // Each index as defined, its name and table without the _legacy of the old table's.
    const indexes = async (name: string) =>
      (await rows<{ d: string }>('select indexdef as d from pg_indexes where schemaname = current_schema() and tablename = $1', [name]))
        .map((r) => r.d.replaceAll('_legacy', '').replace(' ON ONLY ', ' ON '))
        .sort();
    const diff = async (table: string) => {
      const [parent, old] = [await indexes(table), await indexes(`${table}_legacy`)];
      return { added: parent.filter((d) => !old.includes(d)), gone: old.filter((d) => !parent.includes(d)) };
    };
    // The keys a partition key must be part of: the activity's key moved to message_keys, receipts' to (dedup_key, sms_id).
    expect(await diff('messages')).toEqual({
      added: [],
      gone: ['CREATE UNIQUE INDEX messages_activity_key_key ON public.messages USING btree (activity_key)'],
    });
    expect(await diff('receipts')).toEqual({
      added: [
        'CREATE INDEX receipts_id ON public.receipts USING btree (id)',
        'CREATE UNIQUE INDEX receipts_dedup_key_sms_id ON public.receipts USING btree (dedup_key, sms_id) NULLS NOT DISTINCT',
      ],
      // Attaching the old table built the parent's two new indexes on it too (inside the conversion: most of its time).
      gone: [
        'CREATE INDEX receipts_id_idx ON public.receipts USING btree (id)',
        'CREATE UNIQUE INDEX receipts_dedup_key_key ON public.receipts USING btree (dedup_key)',
        'CREATE UNIQUE INDEX receipts_dedup_key_sms_id_key ON public.receipts USING btree (dedup_key, sms_id) NULLS NOT DISTINCT',
        'CREATE UNIQUE INDEX receipts_pkey ON public.receipts USING btree (id)',
      ],
    });
  });

  it('keeps the rows written before it, in the default partition, and a retry of such an activity gets its first message', async () => {
    expect(await partitionOf('messages', oldId)).toEqual(['messages_legacy']);
    expect(await partitionOf('receipts', oldId)).toEqual(['receipts_legacy']);
    // The conversion outbox and its attempts are not partitioned.
    expect(await count('pg_class', "relkind = 'p' and relname = $1", 'conversions')).toBe(0);
    expect(await count('conversion_attempts', 'attempted_at = $1', now)).toBe(1);
    const retry = message(uuidv7(), now, { activity_key: `act-${oldId}` });
    expect(await inTransaction(ledger.db, (trx) => insertNewMessages(trx, [retry]))).toEqual(new Set());
    expect((await findMessagesByActivityKeys(ledger.db, [`act-${oldId}`])).map((m) => m.sms_id)).toEqual([oldId]);
    expect(await count('messages', 'activity_key = $1', `act-${oldId}`)).toBe(1);
  });

  it('makes the day tables once: a second call makes none', async () => {
    const first = await ensureDayPartitions(ledger.db, now);
    expect(first.gaveUp).toBeUndefined();
    // From the day after tomorrow (the default partition's bound) to a week ahead.
    expect(first.created).toEqual([today + 2, today + 3, today + 4, today + 5, today + 6, today + 7].flatMap((d) => names(d)));
    expect(await ensureDayPartitions(ledger.db, now)).toEqual({ created: [] });
  });

  it("finds a parked receipt for a send by its sends' days: one naming a message of that day, or none; not one of another day", async () => {
    const parked = (smsId: string | null, key: string) =>
      ledger.db
        .insertInto('receipts')
        .values({
          provider: 'sandbox',
          dedup_key: key,
          sms_id: smsId,
          provider_message_id: `pm-${key}`,
          provider_status: 'DELIVRD',
          mapped_status: 'delivered',
          error_code: null,
          matched: 0,
          received_at: now,
        } as never)
        .execute();
    const sent = uuidv7({ msecs: now });
    const sameDay = uuidv7({ msecs: now + 1 });
    await ledger.db
      .insertInto('messages')
      .values([message(sent, now), message(sameDay, now)] as never)
      .execute();
    expect(await anyParkedReceipts(ledger.db, [sent])).toBe(false);
    // Parked naming a message two days on: in that day's table, outside the span of the sends'.
    const later = uuidv7({ msecs: now + 2 * DAY_MS });
    await parked(later, 'parked-later');
    expect(await partitionOf('receipts', later)).toEqual([partitionName('receipts', today + 2)]);
    expect(await anyParkedReceipts(ledger.db, [sent])).toBe(false);
    expect(await anyParkedReceipts(ledger.db, [later])).toBe(true);
    expect(await anyParkedReceipts(ledger.db, [sent, later])).toBe(true);
    await parked(sameDay, 'parked-today');
    expect(await anyParkedReceipts(ledger.db, [sent])).toBe(true);
    // Ids a day is not read from are looked for by themselves.
    expect(await anyParkedReceipts(ledger.db, ['sms-1'])).toBe(false);
    expect(await anyParkedReceipts(ledger.db, ['sms-1', sameDay])).toBe(true);
    await ledger.db.deleteFrom('receipts').where('dedup_key', 'in', ['parked-later', 'parked-today']).execute();
    await parked(null, 'parked-without');
    expect(await anyParkedReceipts(ledger.db, [sent])).toBe(true);
    await ledger.db.deleteFrom('receipts').where('dedup_key', '=', 'parked-without').execute();
    await ledger.db.deleteFrom('messages').where('sms_id', 'in', [sent, sameDay]).execute();
  });

  it("claims conversions with their messages' activity, each read from its own day's table, and nulls for a message gone", async () => {
    const today1 = uuidv7({ msecs: now + 2 });
    const gone = uuidv7({ msecs: now + 3 });
    await ledger.db
      .insertInto('messages')
      .values(message(today1, now) as never)
      .execute();
    await insertConversions(
      ledger.db,
      [oldId, today1, gone].map((smsId) => ({ smsId, status: 'delivered' as const })),
      now,
    );
    const claimed = await claimDueConversions(ledger.db, ledger.flags, 10, now + 1, 60_000, 'claim-token', true);
    const bySms = new Map(claimed.map((c) => [c.sms_id, c]));
    expect(bySms.get(oldId)).toMatchObject({ activity_json: JSON.stringify({ id: `act-${oldId}` }), traceparent: null });
    expect(bySms.get(today1)).toMatchObject({ activity_json: JSON.stringify({ id: `act-${today1}` }) });
    expect(bySms.get(today1)?.activity_key).toEqual(expect.any(String));
    expect(bySms.get(gone)).toMatchObject({ activity_json: null, activity_key: null, traceparent: null });
    await ledger.db.deleteFrom('conversions').where('claim_token', '=', 'claim-token').execute();
    await ledger.db.deleteFrom('messages').where('sms_id', '=', today1).execute();
  });

  it('puts a new message in its day table, and a batch holding one activity twice stores it once', async () => {
    const day = today + 3;
    const a = uuidv7({ msecs: day * DAY_MS + 1_000 });
    const b = uuidv7({ msecs: day * DAY_MS + 2_000 });
    const inserted = await inTransaction(ledger.db, (trx) =>
      insertNewMessages(trx, [message(a, day * DAY_MS + 1_000), message(b, day * DAY_MS + 2_000, { activity_key: `act-${a}` })]),
    );
    expect(inserted).toEqual(new Set([`act-${a}`]));
    expect(await partitionOf('messages', a)).toEqual([partitionName('messages', day)]);
    expect(await partitionOf('messages', b)).toEqual([]);
    expect((await findMessagesByActivityKeys(ledger.db, [`act-${a}`])).map((m) => m.sms_id)).toEqual([a]);
  });

  it("records providers' answers in the days' tables of their messages only, and in the default partition for a message of before", async () => {
    const day = today + 4;
    const ids = [1_000, 2_000, 3_000].map((ms) => uuidv7({ msecs: day * DAY_MS + ms }));
    await inTransaction(ledger.db, (trx) =>
      insertNewMessages(
        trx,
        ids.map((id, i) => message(id, day * DAY_MS + (i + 1) * 1_000)),
      ),
    );
    const answer = (smsId: string): SendOutcomeRecord => ({
      smsId,
      provider: 'sandbox',
      rerouted: false,
      receiptsNameSmsId: true,
      state: 'submitted',
      providerMessageIds: [`pm-${smsId}`],
      providerStatus: null,
      error: null,
      errorCode: null,
    });
    const update = async (smsIds: string[]) => {
      statements.length = 0;
      await inTransaction(ledger.db, (trx) => recordSendOutcomes(seen(trx), [], smsIds.map(answer), now));
      return explained(statements.findLast((q) => q.sql.includes('update messages'))!);
    };

    try {
      const plan = await update(ids);
      expect(tablesOf(plan)).toEqual([partitionName('messages', day)]);
      // By the ids themselves: a range of their days would be read whole where the day's statistics lag behind.
      expect(plan).toMatch(/sms_id = ANY/);
      expect(plan).not.toMatch(/sms_id >=/);
      for (const id of ids) {
        expect(await ledger.db.selectFrom('messages').select(['state', 'provider_message_id']).where('sms_id', '=', id).executeTakeFirst()).toEqual({
          state: 'submitted',
          provider_message_id: `pm-${id}`,
        });
      }

      // A message of before the conversion (the default partition) with one of today: both days, and both rows written.
      const mixed = await update([oldId, ids[0]!]);
      expect(tablesOf(mixed)).toContain('messages_legacy');
      expect(tablesOf(mixed)).toContain(partitionName('messages', day));
      expect(tablesOf(mixed).filter((t) => (parsePartitionName(t)?.day ?? today) > day)).toEqual([]);
      expect(await ledger.db.selectFrom('messages').select('provider_message_id').where('sms_id', '=', oldId).executeTakeFirst()).toEqual({
        provider_message_id: `pm-${oldId}`,
      });
    } finally {
      await ledger.db.deleteFrom('messages').where('sms_id', 'in', ids).execute();
    }
  });

  it("finds a message by its provider's id in the days around today's only, one stamped by a clock set elsewhere all the same, and a part's message", async () => {
    const id = uuidv7({ msecs: now + 5 });
    // Its sms_id in a day table four days on, its created_at now: as a clock set apart from the sms_ids' would stamp it.
    const skewed = uuidv7({ msecs: (today + 4) * DAY_MS + 5_000 });
    const multipart = uuidv7({ msecs: now + 6 });
    await ledger.db
      .insertInto('messages')
      .values([id, skewed, multipart].map((smsId) => message(smsId, now, { provider: 'smpp' })) as never)
      .execute();
    await ledger.db
      .insertInto('message_parts')
      .values(
        ['part-1', 'part-2'].map((part, part_index) => ({ provider: 'smpp', provider_message_id: part, sms_id: multipart, part_index, status: null })) as never,
      )
      .execute();
    try {
      statements.length = 0;
      const found = await findReceiptTargetsByProviderId(seen(ledger.db), 'smpp', [`pm-${id}`], now);
      expect(found.map((m) => [m.sms_id, m.provider_message_id])).toEqual([[id, `pm-${id}`]]);
      // Today's messages are in the default partition here (the conversion's bound is the day after tomorrow): the
      // first search reads it alone, no day table.
      expect(tablesOf(await explained(statements.find((q) => q.sql.startsWith('select') && q.sql.includes('from "messages"'))!))).toEqual(['messages_legacy']);

      const late = await findReceiptTargetsByProviderId(ledger.db, 'smpp', [`pm-${skewed}`], now);
      expect(late.map((m) => m.sms_id)).toEqual([skewed]);

      const parts = await findReceiptTargetsByProviderId(ledger.db, 'smpp', ['part-2', 'part-9'], now);
      expect(parts.map((m) => [m.sms_id, m.provider_message_id, m.provider])).toEqual([[multipart, 'part-2', 'smpp']]);
    } finally {
      await ledger.db.deleteFrom('message_parts').where('sms_id', '=', multipart).execute();
      await ledger.db.deleteFrom('messages').where('sms_id', 'in', [id, skewed, multipart]).execute();
    }
  });

  it('drops a finished day with its receipts, conversions, attempts, keys and search pairs, and leaves the other days', async () => {
    const day = today + 5;
    const gone = uuidv7({ msecs: day * DAY_MS + 5_000 });
    const kept = uuidv7({ msecs: (day + 1) * DAY_MS + 5_000 });
    for (const [id, at] of [
      [gone, day * DAY_MS + 5_000],
      [kept, (day + 1) * DAY_MS + 5_000],
    ] as const) {
      await inTransaction(ledger.db, (trx) => insertNewMessages(trx, [message(id, at)]));
      await ledger.db.updateTable('messages').set({ delivery_status: 'delivered', delivery_source: 'receipt' }).where('sms_id', '=', id).execute();
      await storeDelivery(id, at);
    }
    // Their days are not over: their (player, number) pairs wait by the hour (recordUserRecipients).
    expect(await count('message_user_recipients_recent', 'user_id = $1', `u-${gone}`)).toBe(1);
    expect(await findDaysToDrop(ledger.db, (day + 1) * DAY_MS)).toEqual([today + 2, today + 3, today + 4, day]);
    expect(await dropFinishedDay(ledger.db, day)).toEqual({ dropped: true, messages: 1 });
    expect(await count('messages', 'sms_id = $1', gone)).toBe(0);
    expect(await count('message_keys', 'activity_key = $1', `act-${gone}`)).toBe(0);
    expect(await count('message_user_recipients_recent', 'user_id = $1', `u-${gone}`)).toBe(0);
    for (const table of ['messages', 'receipts'] as const) expect(await count('pg_class', 'relname = $1', partitionName(table, day))).toBe(0);
    expect(await count('conversions', 'sms_id = $1', gone)).toBe(0);
    expect(await count('conversion_attempts', 'conversion_id in (select id from conversions where sms_id = $1)', kept)).toBe(1);
    expect(await count('conversion_attempts', 'attempted_at = $1', day * DAY_MS + 5_000)).toBe(0);
    // The next day keeps everything.
    for (const table of ['messages', 'receipts', 'conversions']) expect(await count(table, 'sms_id = $1', kept)).toBe(1);
    expect(await count('message_keys', 'activity_key = $1', `act-${kept}`)).toBe(1);
    expect(await count('message_user_recipients_recent', 'user_id = $1', `u-${kept}`)).toBe(1);
  });

  it('keeps a day that holds a message not final yet', async () => {
    const day = today + 6;
    const open = uuidv7({ msecs: day * DAY_MS + 7_000 });
    await inTransaction(ledger.db, (trx) => insertNewMessages(trx, [message(open, day * DAY_MS + 7_000)]));
    expect(await dropFinishedDay(ledger.db, day)).toEqual({ dropped: false, reason: 'not final' });
    expect(await count('messages', 'sms_id = $1', open)).toBe(1);
  });

  it('deletes the dependents a page at a time, pacing between pages, and keeps a day a message of which became open before the drop', async () => {
    const day = today + 4;
    const smsId = uuidv7({ msecs: day * DAY_MS + 9_000 });
    await inTransaction(ledger.db, (trx) => insertNewMessages(trx, [message(smsId, day * DAY_MS + 9_000)]));
    await ledger.db.updateTable('messages').set({ delivery_status: 'delivered', delivery_source: 'receipt' }).where('sms_id', '=', smsId).execute();
    await storeDelivery(smsId, day * DAY_MS + 9_000);
    const pages: number[] = [];
    const outcome = await dropFinishedDay(ledger.db, day, {
      afterPage: async (busyMs) => {
        pages.push(busyMs);
        // A receipt reopens the message while the pass pauses: the drop must see it under its lock.
        await ledger.db.updateTable('messages').set({ delivery_status: null }).where('sms_id', '=', smsId).execute();
      },
    });
    expect(outcome).toEqual({ dropped: false, reason: 'not final' });
    expect(pages).toHaveLength(1);
    expect(await count('messages', 'sms_id = $1', smsId)).toBe(1);
    for (const table of ['messages', 'receipts'] as const) expect(await count('pg_class', 'relname = $1', partitionName(table, day))).toBe(1);
    // Its page's dependents went before the pause: final then, and past retention.
    expect(await count('conversions', 'sms_id = $1', smsId)).toBe(0);
    expect(await count('message_keys', 'activity_key = $1', `act-${smsId}`)).toBe(0);
  });

  it('gives up without an error when another connection holds a lock on a parent, and makes the tables later', async () => {
    const other = new pg.Client({ connectionString: opened.url });
    await other.connect();
    const later = now + 3 * DAY_MS;
    try {
      await other.query('begin');
      await other.query('lock table receipts in access share mode');
      const started = Date.now();
      const result = await ensureDayPartitions(ledger.db, later);
      expect(result.gaveUp).toMatch(/receipts_d\d{8}: lock on receipts not granted/);
      expect(Date.now() - started).toBeLessThan(10_000);
      await other.query('rollback');
    } finally {
      await other.end();
    }
    const after = await ensureDayPartitions(ledger.db, later);
    expect(after.gaveUp).toBeUndefined();
    expect(after.created).toEqual(expect.arrayContaining(names(today + 10)));
  });
});

describe.runIf(postgres)('PostgreSQL: the conversion prepared while the flat tables serve', () => {
  const opened: TestLedger[] = [];
  afterAll(async () => {
    for (const o of opened.splice(0)) await o.close();
  });
  const flatLedger = async (name: string) => {
    const o = await openTestLedger(name, 2, 'flat');
    opened.push(o);
    return o.ledger;
  };
  const rows = async <T>(ledger: Ledger, text: string, values: unknown[] = []) =>
    (await ledger.db.executeQuery<T>({ sql: text, parameters: values, query: {} as never, queryId: {} as never })).rows;
  const now = Date.now();
  const row = (smsId: string, key = `act-${smsId}`) => submittedMessageRow(smsId, 'sandbox', now, { activity_key: key }) as unknown as NewMessage;
  const send = (ledger: Ledger, ...messages: NewMessage[]) => inTransaction(ledger.db, (trx) => insertNewMessages(trx, messages));
  const keys = async (ledger: Ledger) =>
    (await rows<{ activity_key: string; sms_id: string }>(ledger, 'select activity_key, sms_id from message_keys order by activity_key')).map(
      (r) => `${r.activity_key} ${r.sms_id}`,
    );
  // What the preparation leaves on the flat tables while it waits for the conversion.
  const leftovers = async (ledger: Ledger) =>
    rows<{ what: string }>(
      ledger,
      `select 'trigger ' || tgname as what from pg_trigger where tgname like 'message_keys_%'
       union all select 'function ' || proname from pg_proc where proname like 'message_keys_%'
       union all select 'table ' || relname from pg_class where relname in ('message_keys', 'message_keys_gone')
       union all select 'index ' || relname from pg_class where relname like 'receipts_legacy_%' and relkind = 'i'
       order by 1`,
    ).then((r) => r.map((x) => x.what));
  const prepare = async (ledger: Ledger) => {
    const heard: string[] = [];
    const result = await preparePartitionByDay(ledger.db, (done) => heard.push(done));
    return { result, heard };
  };

  it("keeps every activity's key to its message while sends and deletes go on, and the conversion then builds nothing", async () => {
    const ledger = await flatLedger('prepared-conversion');
    const [a, b, d, e, e2, c] = Array.from({ length: 6 }, () => uuidv7());
    await send(ledger, row(a!), row(b!), row(d!), row(e!));
    const { result, heard } = await prepare(ledger);
    expect(result).toEqual({ keys: 4 });
    expect(heard).toEqual(['built receipts_legacy_id_idx', 'built receipts_legacy_dedup_key_sms_id_key', "filled message_keys with 4 activities' keys"]);
    expect(await readPreparedState(ledger.db)).toEqual({ indexes: ['receipts_legacy_id_idx', 'receipts_legacy_dedup_key_sms_id_key'].sort(), keys: 'filled' });
    // Run again (after a cut-off run, say), it finds everything done.
    expect(await prepare(ledger)).toEqual({ result: { keys: 0 }, heard: [] });

    // The flat tables serve on: a new message takes its key; a deleted one gives it back; an activity deleted and sent
    // again holds its newer message.
    await send(ledger, row(c!));
    await rows(ledger, 'delete from messages where sms_id in ($1, $2)', [b, e]);
    await send(ledger, row(e2!, `act-${e}`));
    // A page of the fill read before a delete and written after it: the key of a message that is gone.
    await rows(ledger, 'delete from messages where sms_id = $1', [d]);
    await rows(ledger, 'insert into message_keys (activity_key, sms_id) values ($1, $2)', [`act-${d}`, d]);
    expect(await keys(ledger)).toEqual([`act-${a} ${a}`, `act-${c} ${c}`, `act-${d} ${d}`, `act-${e} ${e2}`].sort());

    expect(await partitionByDay(ledger.db, now)).toEqual({ copiedKeys: 0, builtIndexes: 0 });
    expect(await keys(ledger)).toEqual([`act-${a} ${a}`, `act-${c} ${c}`, `act-${e} ${e2}`].sort());
    // Nothing of the preparation stays but what the conversion would have made: the two indexes, now the default
    // partition's, attached to the parent's.
    expect(await leftovers(ledger)).toEqual(['index receipts_legacy_dedup_key_sms_id_key', 'index receipts_legacy_id_idx', 'table message_keys']);
    const attached = await rows<{ child: string; parent: string }>(
      ledger,
      `select c.relname as child, p.relname as parent from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
       where c.relname in ('receipts_legacy_id_idx', 'receipts_legacy_dedup_key_sms_id_key') order by 1`,
    );
    expect(attached).toEqual([
      { child: 'receipts_legacy_dedup_key_sms_id_key', parent: 'receipts_dedup_key_sms_id' },
      { child: 'receipts_legacy_id_idx', parent: 'receipts_id' },
    ]);
    // A retry of an activity sent before is answered with its message; one whose message was deleted is sent anew.
    expect((await findMessagesByActivityKeys(ledger.db, [`act-${a}`])).map((m) => m.sms_id)).toEqual([a]);
    expect(await send(ledger, row(uuidv7(), `act-${d}`))).toEqual(new Set([`act-${d}`]));
  });

  it('finishes a preparation cut off in its fill or in a build, and the preparation goes again as it came', async () => {
    const ledger = await flatLedger('prepared-partly');
    const [a, b] = [uuidv7(), uuidv7()];
    await send(ledger, row(a), row(b));
    await prepare(ledger);
    // Cut off in its fill: a key missing, and the table not marked filled; and in a concurrent build, which leaves its
    // index invalid (as PostgreSQL marks one).
    await rows(ledger, 'comment on table message_keys is null');
    await rows(ledger, 'delete from message_keys where sms_id = $1', [b]);
    await rows(ledger, "update pg_index set indisvalid = false where indexrelid = 'receipts_legacy_id_idx'::regclass");
    expect(await readPreparedState(ledger.db)).toEqual({ indexes: ['receipts_legacy_dedup_key_sms_id_key'], keys: 'partial' });
    expect(await partitionByDay(ledger.db, now)).toEqual({ copiedKeys: 1, builtIndexes: 1 });
    expect(await keys(ledger)).toEqual([`act-${a} ${a}`, `act-${b} ${b}`].sort());
    // The invalid index went, and attaching built it again under its name.
    expect(await leftovers(ledger)).toEqual(['index receipts_legacy_dedup_key_sms_id_key', 'index receipts_legacy_id_idx', 'table message_keys']);

    const other = await flatLedger('unprepared');
    const before = await leftovers(other);
    await send(other, row(uuidv7()));
    await prepare(other);
    // Run again after a build was cut off, it builds that index again and nothing else.
    await rows(other, "update pg_index set indisvalid = false where indexrelid = 'receipts_legacy_id_idx'::regclass");
    expect(await prepare(other)).toEqual({ result: { keys: 0 }, heard: ['built receipts_legacy_id_idx'] });
    expect(await unpreparePartitionByDay(other.db)).toEqual({});
    expect(await leftovers(other)).toEqual(before);
    expect(await readPreparedState(other.db)).toEqual({ indexes: [], keys: 'none' });
    // The flat tables take sends as before, and the conversion without a preparation builds and copies what it needs.
    await send(other, row(uuidv7()));
    expect(await partitionByDay(other.db, now)).toEqual({ copiedKeys: 2, builtIndexes: 2 });
  });

  it('prepares one run at a time: a second --prepare or --unprepare meanwhile gives up, naming the first, and changes nothing', async () => {
    const ledger = await flatLedger('prepared-once');
    await send(ledger, row(uuidv7()));
    const before = await leftovers(ledger);
    // The first run is held where it takes its moment's lock on messages (another session holds a lock that conflicts),
    // its own lock taken since it began: a second run meanwhile gives up, naming the first's server process. (Started from
    // the first's progress, the second raced the first's end on a loaded machine and could find the lock free.)
    const table = new pg.Client({ connectionString: opened.at(-1)!.url });
    await table.connect();
    try {
      await table.query('begin');
      await table.query('lock table messages in share mode');
      const first = preparePartitionByDay(ledger.db, () => {});
      const pid = await waitFor(
        async () =>
          (
            await table.query<{ pid: number }>(
              `select pid from pg_locks where locktype = 'advisory' and objid = ${0x63726d70} and granted
               and database = (select oid from pg_database where datname = current_database())`,
            )
          ).rows[0]?.pid,
        10_000,
        "the first run's lock",
      );
      expect(await preparePartitionByDay(ledger.db, () => {})).toEqual({
        gaveUp: `another partition --prepare or --unprepare is running (server process ${pid})`,
      });
      await table.query('commit');
      expect(await first).toEqual({ keys: 1 });
    } finally {
      await table.end();
    }

    // A run in another process, holding the lock as each run does for its length.
    const holder = new pg.Client({ connectionString: opened.at(-1)!.url });
    await holder.connect();
    try {
      const pid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      await holder.query(`select pg_advisory_lock(${0x63726d70})`);
      const busy = { gaveUp: `another partition --prepare or --unprepare is running (server process ${pid})` };
      expect(await unpreparePartitionByDay(ledger.db)).toEqual(busy);
      expect(await prepare(ledger)).toEqual({ result: busy, heard: [] });
      expect(await readPreparedState(ledger.db)).toEqual({ indexes: ['receipts_legacy_dedup_key_sms_id_key', 'receipts_legacy_id_idx'], keys: 'filled' });
    } finally {
      await holder.end();
    }
    // The holder gone, its lock went with its session.
    expect(await unpreparePartitionByDay(ledger.db)).toEqual({});
    expect(await leftovers(ledger)).toEqual(before);
  });
});

describe.runIf(postgres)('PostgreSQL: a new ledger is made by day', () => {
  // Databases of their own, as created (whatever layout this run gives the suite's ledgers), migrated as a process does.
  const made: Array<{ ledgers: Ledger[]; drop: () => Promise<void> }> = [];
  afterAll(async () => {
    for (const { ledgers, drop } of made.splice(0)) {
      await Promise.all(ledgers.map((l) => l.close()));
      await drop();
    }
  });
  const newDatabase = async (processes = 1) => {
    const database = await createTestDatabase(mkdtempSync(join(tmpdir(), 'new-ledger-')), 'flat');
    const ledgers = Array.from({ length: processes }, () => openLedger({ url: database.url, sqlite_synchronous: 'normal', pool_size: 2 }));
    made.push({ ledgers, drop: database.drop });
    return ledgers;
  };
  const rows = async <T>(ledger: Ledger, text: string, values: unknown[] = []) =>
    (await ledger.db.executeQuery<T>({ sql: text, parameters: values, query: {} as never, queryId: {} as never })).rows;
  const relkind = async (ledger: Ledger) => (await rows<{ k: string }>(ledger, "select relkind as k from pg_class where relname = 'messages'"))[0]!.k;

  it("in its first migrations: the week's day tables from today, a default partition for the days before, its checks valid, and a message of now in today's table", async () => {
    const now = Date.now();
    const today = Math.floor(now / DAY_MS);
    const [ledger] = await newDatabase();
    await migrateToLatest(ledger!.db, { now });
    expect(ledger!.flags.partitionsByDay).toBe(true);
    expect(await relkind(ledger!)).toBe('p');
    const state = await readPartitionState(ledger!.db);
    expect(state).toMatchObject({ legacyEnd: today, legacyFrom: today + 3650, validated: true });
    const week = Array.from({ length: DAYS_AHEAD + 1 }, (_, i) => today + i);
    expect(state!.existing.sort()).toEqual(week.flatMap((d) => names(d)).sort());
    // Nothing is left for serve to make.
    expect(await ensureDayPartitions(ledger!.db, now)).toEqual({ created: [] });
    // The day tables' keys led by the day keep no statistics on it, as the parent's.
    const targets = await rows<{ t: number }>(
      ledger!,
      `select a.attstattarget as t from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_attribute a on a.attrelid = c.oid and a.attnum = 1
        where i.inhparent in ('messages_recipient_time'::regclass, 'messages_provider_id_only'::regclass)`,
    );
    expect(targets.map((r) => r.t)).toEqual(Array(2 * (DAYS_AHEAD + 2)).fill(0));
    const smsId = uuidv7({ msecs: now });
    const row = submittedMessageRow(smsId, 'sandbox', now) as unknown as NewMessage;
    expect(await inTransaction(ledger!.db, (trx) => insertNewMessages(trx, [row]))).toEqual(new Set([`act-${smsId}`]));
    expect(await rows(ledger!, 'select tableoid::regclass::text as t from messages where sms_id = $1', [smsId])).toEqual([
      { t: partitionName('messages', today) },
    ]);
  });

  it('flat where the layout says flat, and a ledger that exists keeps its layout', async () => {
    const [flat] = await newDatabase();
    await migrateToLatest(flat!.db, { layout: 'flat' });
    expect(flat!.flags.partitionsByDay).toBe(false);
    expect(await relkind(flat!)).toBe('r');
    const before = await openTestLedgerBefore('2026-11-30-30-byte-order-text', 'existing-ledger');
    made.push({ ledgers: [], drop: before.close });
    await migrateToLatest(before.ledger.db, { layout: 'by_day' });
    expect(before.ledger.flags.partitionsByDay).toBe(false);
    expect(await relkind(before.ledger)).toBe('r');
  });

  it('two processes starting on one new database: one makes it, the other waits and reads the layout by day, each migration applied once', async () => {
    const [a, b] = await newDatabase(2);
    // Each has read the layout on its first connection, before there was a table.
    for (const ledger of [a!, b!]) await sql`select 1`.execute(ledger.db);
    const applied = await Promise.all([a!, b!].map((ledger) => migrateToLatest(ledger.db)));
    expect(applied.map((names) => names.length).sort((x, y) => x - y)).toEqual([0, Object.keys(migrations).length]);
    expect([a!.flags.partitionsByDay, b!.flags.partitionsByDay]).toEqual([true, true]);
    const { rows: recorded } = await sql<{ n: string }>`select count(*) as n from kysely_migration`.execute(a!.db);
    expect(Number(recorded[0]!.n)).toBe(Object.keys(migrations).length);
  });
});
