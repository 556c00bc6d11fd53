/**
 * Message search (GET /admin/messages) against a real gateway: every filter, paging, hostile parameters, and the
 * SQLite query plans that keep each filter on an index.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql, type CompiledQuery } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, parseMessageQuery, parseTime } from '../../src/delivery/message-query.js';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import { SEARCH_STATUSES, searchMessages, type MessageFilter } from '../../src/ledger/message-search.js';
import { migrations } from '../../src/ledger/engine/migrations.js';
import type { Database } from '../../src/ledger/schema.js';
import { FakeCrm } from '../fakes/crm.js';
import { createTestDatabase } from '../helpers/database.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
let gw: TestGateway;
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const sent = new Map<string, string>();
let between = 0;

const search = async (query: string) => gw.get(`/admin/messages?${query}`, admin);
const ids = async (query: string) => {
  const answer = await search(query);
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return (answer.json.messages as Array<{ activity_key: string }>).map((m) => m.activity_key);
};

beforeAll(async () => {
  await crm.start();
  // The ledger is this file's own: GB numbers may be typed in national form.
  gw = await startTestGateway({
    sms: { default_region: 'GB' },
    crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
    delivery: { poll_interval: '20ms', max_attempts: 1 },
  });
  const send = async (id: string, overrides: Record<string, unknown>) => {
    const answer = await gw.post('/channels/sms/single', smsMessage(id, overrides), { 'x-request-id': `req-${id}` });
    sent.set(id, answer.json.sms_id);
  };
  await send('s-early', { recipient: '+447700900123', activity: { id: 's-early', user_id: 'player-1' } });
  const afterEarly = Date.now();
  await waitFor(() => Date.now() > afterEarly, 1_000, 'the next millisecond');
  between = Date.now();
  await send('s-delivered', { recipient: '+447700900123', activity: { id: 's-delivered', user_id: 'player-1' } });
  await send('s-undelivered', { recipient: '+447700900001', activity: { id: 's-undelivered', user_id: 7 } });
  await send('s-refused', { recipient: '+447700900004', activity: { id: 's-refused', user_id: 'player-2' } });
  await send('s-uncertain', { recipient: '+447700900005', activity: { id: 's-uncertain' } });
  // The conversions of the messages whose receipts came back go first: armed while one of them was still owed, the
  // failure fell on it instead of on s-dead's (a clean-clone CI run on a loaded machine).
  await waitFor(
    () => ['s-early', 's-delivered', 's-undelivered'].every((id) => crm.conversions.some((c) => c.sms_id === sent.get(id))),
    10_000,
    'the earlier conversions',
  );
  crm.failNext(1, 500);
  await send('s-dead', { recipient: '+447700900777', activity: { id: 's-dead', user_id: 'player-3' } });
  await waitFor(async () => (await ids('status=dead')).length === 1, 10_000, 'the dead conversion');
  await waitFor(async () => (await ids('status=undelivered')).length === 1, 10_000, 'the undelivered receipt');
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await crm.stop();
});

describe('GET /admin/messages', () => {
  it.each([
    ['recipient in E.164', 'recipient=%2B447700900123', ['s-delivered', 's-early']],
    ['recipient in national form (sms.default_region GB)', 'recipient=07700%20900123', ['s-delivered', 's-early']],
    ['recipient written with 00', 'recipient=00447700900001', ['s-undelivered']],
    ['user_id', 'user_id=player-1', ['s-delivered', 's-early']],
    ['a numeric user_id, as text', 'user_id=7', ['s-undelivered']],
    ['activity.id', 'activity_id=s-refused', ['s-refused']],
    ['status refused', 'status=refused', ['s-refused']],
    ['status retryable (a transient error, nothing sent)', 'status=retryable', ['s-uncertain']],
    ['status undelivered', 'status=undelivered', ['s-undelivered']],
    ['status dead', 'status=dead', ['s-dead']],
    ['provider and status together', 'provider=sandbox&status=refused', ['s-refused']],
    ['recipient and user_id together', 'recipient=%2B447700900123&user_id=player-2', []],
    ['a provider with no messages', 'provider=vonage', []],
  ])('finds by %s', async (_label, query, expected) => {
    expect(await ids(query)).toEqual(expected);
  });

  it('finds by sms_id, and by time range, newest first', async () => {
    expect(await ids(`sms_id=${sent.get('s-dead')}`)).toEqual(['s-dead']);
    const all = await ids('');
    expect(all).toEqual(['s-dead', 's-uncertain', 's-refused', 's-undelivered', 's-delivered', 's-early']);
    expect(await ids(`from=${between}`)).toEqual(all.slice(0, 5));
    expect(await ids(`to=${between}`)).toEqual(['s-early']);
    expect(await ids(`from=${new Date(between).toISOString()}&user_id=player-1`)).toEqual(['s-delivered']);
  });

  it('pages with next_cursor until the last page, with no row twice', async () => {
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page = await search(`limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.json.messages.length).toBeLessThanOrEqual(2);
      seen.push(...page.json.messages.map((m: { activity_key: string }) => m.activity_key));
      cursor = page.json.next_cursor;
    }
    expect(seen).toEqual(await ids('limit=200'));
  });

  it('answers each row with its player, request id and status fields, never the activity or content', async () => {
    const [row] = (await search('activity_id=s-delivered')).json.messages;
    expect(row).toMatchObject({
      sms_id: sent.get('s-delivered'),
      user_id: 'player-1',
      request_id: 'req-s-delivered',
      recipient: '+447700900123',
      delivery_status: 'delivered',
    });
    expect(row).not.toHaveProperty('activity_json');
    expect(row).not.toHaveProperty('content');
  });

  it.each([
    ['__proto__=1', /^"__proto__": unknown query parameter/],
    ['constructor=1', /^"constructor": unknown query parameter/],
    [`${'n'.repeat(5_000)}=1`, /^"n{40}"…: unknown query parameter/],
    [`user_id=${'u'.repeat(5_000)}`, /^user_id: longer than 256 characters/],
    ['user_id=a&user_id=b', /^user_id: given more than once/],
    ['activity_id=', /^activity_id: must not be empty/],
    ['recipient=not-a-number', /^recipient: "not-a-number" is not a phone number/],
    ['status=lost', /^status: must be one of pending, sent, delivered/],
    ['from=yesterday', /^from: must be an ISO 8601 time/],
    ['from=2026-11-24T10:00Z&to=2026-11-24T09:00Z', /^to: must be later than from/],
    ['limit=0', /^limit: must be an integer from 1 to 200/],
    ['limit=1e3', /^limit: must be an integer/],
    ['cursor=%00%00', /^cursor: not a cursor/],
    [`cursor=${Buffer.from('1.x\n').toString('base64url')}`, /^cursor: not a cursor/],
  ])('refuses %s with a 400 naming the parameter', async (query, error) => {
    const answer = await search(query.slice(0, 20_000));
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(error);
  });

  it('still answers after all of it', async () => {
    expect((await ids('status=refused')).length).toBe(1);
  });
});

describe('the search query', () => {
  it.each([
    ['2026-11-24', Date.UTC(2026, 10, 24)],
    ['2026-11-24T03:00', Date.UTC(2026, 10, 24, 3)],
    ['2026-11-24T03:00:05.5Z', Date.UTC(2026, 10, 24, 3, 0, 5, 500)],
    ['2026-11-24T04:00+01:00', Date.UTC(2026, 10, 24, 3)],
    ['1764000000000', 1_764_000_000_000],
    ['2026-13-45', undefined],
    ['tomorrow', undefined],
    ['2026-11-24 03:00', undefined],
  ])('reads the time %s', (text, expected) => {
    expect(parseTime(text)).toBe(expected);
  });

  it('round-trips its cursor and refuses others', () => {
    expect(decodeCursor(encodeCursor({ created_at: 17, sms_id: 'abc-1' }))).toEqual({ createdAt: 17, smsId: 'abc-1' });
    expect(decodeCursor('!!')).toBeUndefined();
    expect(decodeCursor(Buffer.from('17.').toString('base64url'))).toBeUndefined();
  });

  it('treats empty form fields as absent and ignores the page’s own parameters', () => {
    const form = parseMessageQuery(new URLSearchParams('recipient=&status=&replayed=2&user_id=p'), undefined, { form: true, ignore: ['replayed'] });
    expect(form).toEqual({ ok: true, filter: { limit: 50, userId: 'p' } });
  });
});

describe('query plans (SQLite)', () => {
  const filters: Array<[string, Omit<MessageFilter, 'limit'>]> = [
    ['no filter', {}],
    ['recipient', { recipient: '+447700900123' }],
    ['user_id', { userId: 'player-1' }],
    ['activity.id', { activityKey: 'x' }],
    ['sms_id', { smsId: 'x' }],
    ['provider', { provider: 'sandbox' }],
    ...[...SEARCH_STATUSES.keys()].filter((s) => s !== 'dead').map((status): [string, Omit<MessageFilter, 'limit'>] => [`status ${status}`, { status }]),
    ['time range', { from: 1, to: 2 }],
    ['a later page', { after: { createdAt: 5, smsId: 'x' } }],
  ];

  it.each(filters)('%s: reads an index in created_at order, never the whole table, never sorts', async (_label, filter) => {
    const plan = await planOf({ ...filter, limit: 50 });
    expect(plan.join('\n')).not.toMatch(/^SCAN messages$/m);
    // Ties on created_at are put in sms_id order as they are read ("LAST TERM"), which stops at the LIMIT.
    expect(plan.join('\n')).not.toMatch(/TEMP B-TREE FOR ORDER BY/);
    for (const step of plan) if (/^(SCAN|SEARCH) messages/.test(step)) expect(step).toMatch(/USING (COVERING )?INDEX|USING PRIMARY KEY/);
  });

  it("user_id with several numbers: reads each number's entries, then sorts only a day's rows", async () => {
    const plan = (await planOf({ userId: 'player-2', limit: 50 })).join('\n');
    expect(plan).toMatch(/SEARCH r USING PRIMARY KEY \(day=\? AND recipient=\?\)/);
    expect(plan).toMatch(/SEARCH messages USING INDEX sqlite_autoindex_messages_1 \(sms_id=\?\)/);
    expect(plan).toMatch(/USE TEMP B-TREE FOR LAST 2 TERMS OF ORDER BY/);
    expect(plan).not.toMatch(/^SCAN messages$/m);
  });

  // The days are named newest first and each day's entries of a number come in (created_at, sms_id) order, the
  // page's: nothing is sorted, and the page stops at its limit however many messages the number has. Each entry
  // finds its message by the primary key.
  it.each<[string, Omit<MessageFilter, 'limit'>, RegExp]>([
    ['recipient', { recipient: '+447700900123' }, /SEARCH r USING PRIMARY KEY \(day=\? AND recipient=\?\)/],
    ['user_id', { userId: 'player-1' }, /SEARCH r USING PRIMARY KEY \(day=\? AND recipient=\?\)/],
    [
      'recipient, a later page in a range',
      { recipient: '+447700900123', from: Date.now() - 2 * 86_400_000, after: { createdAt: Date.now(), smsId: 'x' } },
      /SEARCH r USING PRIMARY KEY \(day=\? AND recipient=\? AND created_at>\? AND created_at<\?\)/,
    ],
  ])("%s: seeks the number's entries day by day, in the page's order", async (_label, filter, seek) => {
    const plan = (await planOf({ ...filter, limit: 50 })).join('\n');
    expect(plan).toMatch(seek);
    expect(plan).toMatch(/SEARCH messages USING INDEX sqlite_autoindex_messages_1 \(sms_id=\?\)/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  // A ledger grown by sends has no statistics (the gateway never runs ANALYZE): the planner took every index equality
  // for a few rows and walked the provider's or the status's rows in created_at order, checking the key on each.
  it.each<[string, Omit<MessageFilter, 'limit'>]>([
    ['recipient + provider', { recipient: '+447700900123', provider: 'sandbox' }],
    ['recipient + status', { recipient: '+447700900123', status: 'delivered' }],
    ['user_id + status', { userId: 'player-1', status: 'delivered' }],
    ['user_id (two numbers) + provider', { userId: 'player-2', provider: 'sandbox' }],
    ['activity.id + status', { activityKey: 'x', status: 'failed' }],
    ['sms_id + provider', { smsId: 'x', provider: 'sandbox' }],
    ['status dead + provider', { status: 'dead', provider: 'sandbox' }],
  ])('%s: starts from the key, never from the provider or status index', async (_label, filter) => {
    const plan = (await planOf({ ...filter, limit: 50 })).join('\n');
    expect(plan).not.toMatch(/messages_provider_created|messages_status/);
    expect(plan).not.toMatch(/^SCAN messages$/m);
  });

  // ANALYZE's figures at 5 million messages (bench/README.md, 2026-11-29): four status words, three providers. With
  // them SQLite skip-scanned messages_status for a time range and sorted the whole range (a week took seconds).
  it.each<[string, Omit<MessageFilter, 'limit'>]>([
    ['time range', { from: 1, to: 2 }],
    ['only an end', { to: 2 }],
    ['a later page', { after: { createdAt: 5, smsId: 'x' } }],
  ])('%s on the statistics of a ledger of millions: reads messages_created_sms_id in its order, never sorts', async (_label, filter) => {
    const plan = (await planOf({ ...filter, limit: 50 }, MILLIONS_STAT1)).join('\n');
    expect(plan).toMatch(/messages_created_sms_id/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it('status dead starts from the dead letters (conversions_unposted)', async () => {
    const plan = (await planOf({ status: 'dead', limit: 50 })).join('\n');
    expect(plan).toMatch(/conversions.*USING (COVERING )?INDEX conversions_unposted/);
    expect(plan).not.toMatch(/^SCAN messages$/m);
  });
});

/** sqlite_stat1 of the messages indexes as ANALYZE wrote it on a prefilled ledger of 5 million messages. */
const MILLIONS_STAT1: ReadonlyArray<[string, string, string]> = [
  ['messages', 'messages_status', '5000000 1250000 1'],
  ['messages', 'messages_provider_created', '5000000 1666667 1'],
  ['messages', 'messages_created_sms_id', '5000000 1 1'],
  // A partial index: the tenth of the messages whose receipts carry only the provider's id (SMPP).
  ['messages', 'messages_provider_id_only', '500000 16667 5556 1'],
  ['messages', 'sqlite_autoindex_messages_2', '5000000 1'],
  ['messages', 'sqlite_autoindex_messages_1', '5000000 1'],
  ['recipient_messages', 'sqlite_autoindex_recipient_messages_1', '5000000 166667 1 1 1'],
];

/**
 * On a SQLite ledger of its own (the gateway above may be PostgreSQL): migrated, never analysed, with two messages;
 * player-1 has one number and player-2 two, so the search by player reaches its messages query. The plans are those of
 * the statements that read messages or the numbers' entries (the search by player first reads the player's numbers).
 */
async function planOf(filter: MessageFilter, stat1: ReadonlyArray<[string, string, string]> = []): Promise<string[]> {
  const file = join(mkdtempSync(join(tmpdir(), 'crm-sms-search-plans-')), 'ledger.db');
  const ledger = openLedger({ url: `sqlite:${file}`, sqlite_synchronous: 'normal', pool_size: 1 });
  await migrateToLatest(ledger.db);
  if (stat1.length > 0) {
    // ANALYZE of the empty tables creates sqlite_stat1; the figures written into it are read again by `analyze sqlite_master`.
    await sql`analyze`.execute(ledger.db);
    for (const [tbl, idx, stat] of stat1) await sql`insert into sqlite_stat1 (tbl, idx, stat) values (${tbl}, ${idx}, ${stat})`.execute(ledger.db);
    await sql`analyze sqlite_master`.execute(ledger.db);
  }
  await ledger.db
    .insertInto('message_user_recipients')
    .values([
      { user_id: 'player-1', recipient: '+447700900123' },
      { user_id: 'player-2', recipient: '+447700900001' },
      { user_id: 'player-2', recipient: '+447700900002' },
    ])
    .execute();
  // Messages a few days apart, so that a search by number has days to name (none when the ledger is empty).
  for (const [k, createdAt] of [Date.now() - 3 * 86_400_000, Date.now()].entries()) {
    await sql`insert into messages (sms_id, activity_key, activity_json, provider, recipient, encoding, segments, state, created_at, updated_at, dispatched_at)
      values (${`plan-${k}`}, ${`plan-${k}`}, '{}', 'sandbox', '+447700900999', 'gsm7', 1, 'submitted', ${createdAt}, ${createdAt}, ${createdAt})`.execute(
      ledger.db,
    );
  }
  await ledger.close();
  const sqlite = new BetterSqlite3(file, { readonly: true });
  const captured: CompiledQuery[] = [];
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log: (event) => void captured.push(event.query) });
  try {
    await searchMessages(db, filter);
    // The statements that read the page: one, or with a number one for each table of its entries (moved and recent).
    const reads = captured.filter((q) => /from "(messages|recipient_messages|recipient_messages_recent)"/.test(q.sql));
    expect(reads.length).toBeGreaterThan(0);
    return reads.flatMap((query) =>
      (sqlite.prepare(`explain query plan ${query.sql}`).all(...(query.parameters as unknown[])) as Array<{ detail: string }>).map((p) => p.detail),
    );
  } finally {
    await db.destroy();
  }
}

describe('dead letters through the admin API (after the searches above)', () => {
  it('lists them with reason, attempts and last answer, and replays those matching a filter', async () => {
    const list = await gw.get('/admin/conversions/dead', admin);
    expect(list.json.dead_letters).toEqual([
      expect.objectContaining({
        sms_id: sent.get('s-dead'),
        activity_key: 's-dead',
        provider: 'sandbox',
        delivery_status: 'delivered',
        attempts: 1,
        last_http_status: 500,
      }),
    ]);
    expect(list.json.dead_letters[0].last_error).toMatch(/500/);
    expect(list.json.next_cursor).toBeNull();
    expect((await gw.get('/admin/conversions/dead?provider=vonage', admin)).json.dead_letters).toEqual([]);
    expect((await gw.post('/admin/conversions/replay', { provider: 'vonage' }, admin)).json).toEqual({ replayed: 0 });
    expect((await gw.post('/admin/conversions/replay', { status: 'failed' }, admin)).json).toEqual({ replayed: 0 });
    expect((await gw.post('/admin/conversions/replay', { status: 'lost' }, admin)).json.error).toMatch(/^status: /);
    expect((await gw.post('/admin/conversions/replay', '{"constructor": 1}', admin)).json.error).toMatch(/^body: only ids, provider and status/);
    expect((await gw.post('/admin/conversions/replay', { provider: 'sandbox', status: 'delivered' }, admin)).json).toEqual({ replayed: 1 });
    await waitFor(() => crm.conversions.some((c) => c.sms_id === sent.get('s-dead')), 10_000, 'the replayed conversion');
    expect((await gw.get('/admin/conversions/dead', admin)).json.dead_letters).toEqual([]);
  });
});

describe('the search by player, through the numbers each player was sent to (migration 2026-11-24-81-search-keys)', () => {
  it('finds a player’s messages to each of their numbers, exactly as the unfiltered list has them, page by page', async () => {
    const send = async (id: string, recipient: string, user: string) => {
      const answer = await gw.post('/channels/sms/single', smsMessage(id, { recipient, activity: { id, user_id: user } }));
      expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    };
    await send('p4-a', '+447700900201', 'player-4');
    await send('p4-b', '+447700900202', 'player-4');
    await send('p5-a', '+447700900201', 'player-5');
    await send('p4-c', '+447700900201', 'player-4');
    const all = await ids('limit=200');
    const ofPlayer4 = all.filter((id) => id.startsWith('p4-'));
    expect([...ofPlayer4].sort()).toEqual(['p4-a', 'p4-b', 'p4-c']);
    expect(await ids('user_id=player-4')).toEqual(ofPlayer4);
    expect(await ids('user_id=player-5')).toEqual(['p5-a']);
    expect(await ids('user_id=player-4&recipient=%2B447700900202')).toEqual(['p4-b']);
    expect(await ids('user_id=player-5&recipient=%2B447700900202')).toEqual([]);
    expect(await ids('user_id=player-4&status=refused')).toEqual([]);
    expect(await ids('user_id=nobody')).toEqual([]);
    const paged: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page = await search(`user_id=player-4&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      paged.push(...page.json.messages.map((m: { activity_key: string }) => m.activity_key));
      cursor = page.json.next_cursor;
    }
    expect(paged).toEqual(ofPlayer4);
  });

  it('gives the messages stored before it their (player, number) pairs', async () => {
    // A ledger of its own, SQLite or (with TEST_DATABASE_URL) PostgreSQL.
    const database = await createTestDatabase(mkdtempSync(join(tmpdir(), 'crm-sms-migrate-')), 'flat');
    const ledger = openLedger({ url: database.url, sqlite_synchronous: 'normal', pool_size: 1 });
    try {
      const migrator = new Migrator({ db: ledger.db, provider: { getMigrations: async () => migrations } });
      expect((await migrator.migrateTo('2026-11-24-70-console-events')).error).toBeUndefined();
      for (const [key, user, number] of [
        ['a', 'player-9', '+447700900123'],
        ['b', 'player-9', '+447700900123'],
        ['c', 'player-9', '+447700900124'],
        ['d', null, '+447700900125'],
      ]) {
        await sql`insert into messages (sms_id, activity_key, activity_json, user_id, provider, recipient, encoding, segments, state, attempts, created_at, updated_at, dispatched_at)
          values (${`s-${key}`}, ${key}, '{}', ${user}, 'sandbox', ${number}, 'gsm7', 1, 'submitted', 1, 1, 1, 1)`.execute(ledger.db);
      }
      await migrateToLatest(ledger.db);
      const pairs = await ledger.db.selectFrom('message_user_recipients').selectAll().orderBy('recipient').execute();
      expect(pairs).toEqual([
        { user_id: 'player-9', recipient: '+447700900123' },
        { user_id: 'player-9', recipient: '+447700900124' },
      ]);
      expect((await searchMessages(ledger.db, { userId: 'player-9', limit: 10 })).rows.map((r) => r.activity_key).sort()).toEqual(['a', 'b', 'c']);
    } finally {
      await ledger.close();
      await database.drop();
    }
  });
});
