/**
 * Finding 9 (nothing was ever deleted; one leaked receipt URL added 3,000 rows): retention deletes old final rows a
 * chunk at a time, leaves young and unfinished ones, blanks personal data sooner while keeping the row, counts what it
 * did in /metrics; receipts per message are capped. Runs on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import type { Insertable, Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { nextBlankStart, pauseAfterChunk, retentionCutoffs } from '../../src/delivery/retention.js';
import { receiptsOverCap } from '../../src/delivery/receipt-cap.js';
import { dialectFlagsOf } from '../../src/ledger/engine/flags.js';
import { BLANKED, SCAN_START } from '../../src/ledger/retention.js';
import { bucketAt } from '../../src/ledger/time-buckets.js';
import type { Database, MessagesTable } from '../../src/ledger/schema.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const DAY = 86_400_000;
const NOW = Date.now();

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

function message(smsId: string, ageDays: number, fields: Partial<Insertable<MessagesTable>> = {}): Insertable<MessagesTable> {
  const at = NOW - ageDays * DAY;
  return {
    sms_id: smsId,
    activity_key: `act-${smsId}`,
    activity_json: JSON.stringify({ id: `act-${smsId}`, user_id: `user-${smsId}` }),
    user_id: `user-${smsId}`,
    request_id: null,
    provider: 'sandbox',
    provider_message_id: `pm-${smsId}`,
    receipts_name_sms_id: 1,
    recipient: `+4477009${String([...smsId].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 100_000, 7)).padStart(5, '0')}`,
    sender: 'Casino',
    encoding: 'gsm7',
    segments: 1,
    content: `hello ${smsId}`,
    state: 'submitted',
    error: null,
    error_code: null,
    attempts: 1,
    provider_status: 'delivered',
    delivery_status: 'delivered',
    delivery_source: 'receipt',
    created_at: at,
    updated_at: at,
    dispatched_at: at,
    submitted_at: at,
    completed_at: at,
    ...fields,
  };
}

async function addMessage(db: Kysely<Database>, row: Insertable<MessagesTable>, conversion?: 'posted' | 'dead' | 'unposted') {
  await db.insertInto('messages').values(row).execute();
  // As the claim writes it (on PostgreSQL a view over messages).
  if (dialectFlagsOf(db).writesNumberEntries)
    await db
      .insertInto('recipient_messages')
      .values({ day: bucketAt(row.created_at), recipient: row.recipient, created_at: row.created_at, sms_id: row.sms_id })
      .execute();
  await db
    .insertInto('message_user_recipients')
    .values({ user_id: row.user_id!, recipient: row.recipient })
    .onConflict((oc) => oc.doNothing())
    .execute();
  await db
    .insertInto('message_parts')
    .values({ provider: 'sandbox', provider_message_id: `part-${row.sms_id}`, sms_id: row.sms_id, part_index: 0, status: null })
    .execute();
  await db
    .insertInto('receipts')
    .values({
      provider: 'sandbox',
      dedup_key: `r-${row.sms_id}`,
      sms_id: row.sms_id,
      provider_message_id: `pm-${row.sms_id}`,
      provider_status: 'delivered',
      mapped_status: 'delivered',
      error_code: null,
      matched: 1,
      received_at: row.created_at,
    })
    .execute();
  if (!conversion) return;
  const { id } = await db
    .insertInto('conversions')
    .values({
      sms_id: row.sms_id,
      delivery_status: 'delivered',
      attempts: 1,
      next_attempt_at: row.created_at,
      claimed_until: 0,
      claim_token: null,
      posted_at: conversion === 'posted' ? row.created_at : null,
      last_error: null,
      dead: conversion === 'dead' ? 1 : 0,
      created_at: row.created_at,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('conversion_attempts')
    .values({ conversion_id: id, attempted_at: row.created_at, ok: conversion === 'posted' ? 1 : 0, http_status: 200, error: null })
    .execute();
}

async function addEvent(db: Kysely<Database>, eventId: string, ageDays: number, outcome: 'sent' | 'dead' | 'unsent') {
  const at = NOW - ageDays * DAY;
  await db
    .insertInto('crm_events')
    .values({
      event_id: eventId,
      type: 'USER_CONSENTS_V2',
      method: 'PUT',
      path: '/v2/integration/user/consents',
      user_id: 'p1',
      payload_json: '{}',
      source: 'relay',
      dedup_key: null,
      attempts: 1,
      next_attempt_at: at,
      claimed_until: 0,
      claim_token: null,
      sent_at: outcome === 'sent' ? at : null,
      http_status: null,
      last_error: null,
      dead: outcome === 'dead' ? 1 : 0,
      created_at: at,
      sms_id: null,
    })
    .execute();
}

async function addInbound(db: Kysely<Database>, id: string, ageDays: number) {
  await db
    .insertInto('inbound_messages')
    .values({
      provider: 'sandbox',
      provider_message_id: id,
      from_number: '+447700900555',
      to_number: '+447700900001',
      content: 'STOP',
      action: 'opt_out',
      matched_user_ids: '[]',
      received_at: NOW - ageDays * DAY,
    })
    .execute();
}

async function metricValue(path: string, table: string, action: string): Promise<number> {
  const res = await fetch(`${gw!.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`${path}{`) && l.includes(`table="${table}"`) && l.includes(`action="${action}"`));
  return line ? Number(line.split(' ').pop()) : NaN;
}

const ids = (rows: Array<{ sms_id: string }>) => rows.map((r) => r.sms_id).sort();

const retentionConfig = {
  delivery: { sweep_interval: '1h' },
  retention: { messages: '90d', receipts: '60d', events: '90d', inbound: '90d', blank_personal_data_after: '30d', interval: '1h' },
};

describe('finding 9: retention', () => {
  it('deletes old final rows with what belongs to them, keeps young and unfinished ones, blanks personal data sooner, counts it', async () => {
    gw = await startTestGateway(retentionConfig);
    const db = gw.gateway.ledger.db;
    // Old and final: go.
    await addMessage(db, message('old-delivered', 100), 'posted');
    await addMessage(db, message('old-dead-conv', 100), 'dead');
    await addMessage(db, message('old-rejected', 100, { state: 'rejected', delivery_status: null, delivery_source: null, submitted_at: null }));
    await addMessage(db, message('old-retryable', 100, { state: 'retryable', delivery_status: null, delivery_source: null, submitted_at: null }));
    // Left uncertain, then settled delivery_unknown by the sweep (delivery.unknown_after) and reported.
    await addMessage(db, message('old-settled', 100, { state: 'uncertain', delivery_status: 'delivery_unknown', delivery_source: 'timeout' }), 'posted');
    // Old but not final: stay.
    await addMessage(db, message('old-awaiting', 100, { delivery_status: null, delivery_source: null, completed_at: null }));
    await addMessage(db, message('old-dispatching', 100, { state: 'dispatching', delivery_status: null, delivery_source: null }));
    await addMessage(db, message('old-uncertain', 100, { state: 'uncertain', delivery_status: null, delivery_source: null }));
    await addMessage(db, message('old-unposted', 100), 'unposted');
    // Past the blanking age only: kept, blanked when final.
    await addMessage(db, message('mid-final', 40), 'posted');
    await addMessage(db, message('mid-awaiting', 40, { delivery_status: null, delivery_source: null, completed_at: null }));
    // Young: untouched.
    await addMessage(db, message('young', 10), 'posted');
    // A player's number used again since: the old message goes, the (player, number) pair stays for the young one.
    await addMessage(db, message('old-shared', 100), 'posted');
    await addMessage(db, message('young-shared', 10, { user_id: 'user-old-shared', recipient: message('old-shared', 100).recipient }), 'posted');
    // A parked receipt (no message yet) old enough to go by age: the sweep's business, not retention's.
    await db
      .insertInto('receipts')
      .values({
        provider: 'sandbox',
        dedup_key: 'parked-old',
        sms_id: null,
        provider_message_id: 'nobody',
        provider_status: 'delivered',
        mapped_status: 'delivered',
        error_code: null,
        matched: 0,
        received_at: NOW - 100 * DAY,
      })
      .execute();
    await addEvent(db, 'ev-old-sent', 100, 'sent');
    await addEvent(db, 'ev-old-dead', 100, 'dead');
    await addEvent(db, 'ev-old-unsent', 100, 'unsent');
    await addEvent(db, 'ev-young-sent', 10, 'sent');
    await addInbound(db, 'in-old', 100);
    await addInbound(db, 'in-mid', 40);
    await addInbound(db, 'in-young', 10);

    const result = await gw.gateway.retention();

    expect(ids(await db.selectFrom('messages').select('sms_id').execute())).toEqual(
      ['old-awaiting', 'old-dispatching', 'old-uncertain', 'old-unposted', 'mid-final', 'mid-awaiting', 'young', 'young-shared'].sort(),
    );
    const gone = ['old-delivered', 'old-dead-conv', 'old-rejected', 'old-retryable', 'old-settled'];
    for (const table of ['message_parts', 'conversions'] as const) {
      expect(await db.selectFrom(table).select('sms_id').where('sms_id', 'in', gone).execute()).toEqual([]);
    }
    expect(
      await db.selectFrom('conversion_attempts').selectAll().where('conversion_id', 'not in', db.selectFrom('conversions').select('id')).execute(),
    ).toEqual([]);
    expect(
      await db
        .selectFrom('message_user_recipients')
        .select('user_id')
        .where(
          'user_id',
          'in',
          gone.map((g) => `user-${g}`),
        )
        .execute(),
    ).toEqual([]);
    const pairsOf = async (users: string[]) =>
      (await db.selectFrom('message_user_recipients').select('user_id').where('user_id', 'in', users).orderBy('user_id').execute()).map((r) => r.user_id);
    expect(await pairsOf(['user-old-shared', 'user-old-awaiting', 'user-young'])).toEqual(['user-old-awaiting', 'user-old-shared', 'user-young']);
    // Receipts: older than 60 days go unless parked; the 40- and 10-day-old ones stay.
    const receipts = await db.selectFrom('receipts').select(['dedup_key']).orderBy('dedup_key').execute();
    expect(receipts.map((r) => r.dedup_key)).toEqual(['parked-old', 'r-mid-awaiting', 'r-mid-final', 'r-young', 'r-young-shared']);
    expect((await db.selectFrom('crm_events').select('event_id').orderBy('event_id').execute()).map((r) => r.event_id)).toEqual([
      'ev-old-unsent',
      'ev-young-sent',
    ]);

    const blanked = await db
      .selectFrom('messages')
      .select(['sms_id', 'content', 'recipient', 'delivery_status'])
      .where('sms_id', 'in', ['mid-final', 'mid-awaiting', 'young'])
      .orderBy('sms_id')
      .execute();
    expect(blanked).toEqual([
      { sms_id: 'mid-awaiting', content: 'hello mid-awaiting', recipient: message('mid-awaiting', 40).recipient, delivery_status: null },
      { sms_id: 'mid-final', content: null, recipient: BLANKED, delivery_status: 'delivered' },
      { sms_id: 'young', content: 'hello young', recipient: message('young', 10).recipient, delivery_status: 'delivered' },
    ]);
    expect(await db.selectFrom('message_user_recipients').select('user_id').where('user_id', '=', 'user-mid-final').execute()).toEqual([]);
    // The numbers' entries of the days past both ages go with their messages or numbers; the unfinished keep theirs.
    // (On PostgreSQL the view has every remaining message's number as it is now, '[blanked]' for the blanked.)
    const entries = async () => ids(await db.selectFrom('recipient_messages').select('sms_id').where('recipient', '<>', BLANKED).execute());
    expect(await entries()).toEqual(['old-awaiting', 'old-dispatching', 'old-uncertain', 'old-unposted', 'mid-awaiting', 'young', 'young-shared'].sort());
    const inbound = await db
      .selectFrom('inbound_messages')
      .select(['provider_message_id', 'content', 'from_number', 'action'])
      .orderBy('provider_message_id')
      .execute();
    expect(inbound).toEqual([
      { provider_message_id: 'in-mid', content: null, from_number: BLANKED, action: 'opt_out' },
      { provider_message_id: 'in-young', content: 'STOP', from_number: '+447700900555', action: 'opt_out' },
    ]);

    expect(result).toEqual({
      deleted: { messages: 6, receipts: 4, crm_events: 2, inbound_messages: 1, costs: 0 },
      blanked: { messages: 1, inbound_messages: 1 },
    });
    const counter = 'sms_gateway_retention_rows_total';
    expect(await metricValue(counter, 'messages', 'deleted')).toBe(6);
    expect(await metricValue(counter, 'receipts', 'deleted')).toBe(4);
    expect(await metricValue(counter, 'crm_events', 'deleted')).toBe(2);
    expect(await metricValue(counter, 'inbound_messages', 'deleted')).toBe(1);
    expect(await metricValue(counter, 'messages', 'blanked')).toBe(1);
    expect(await metricValue(counter, 'inbound_messages', 'blanked')).toBe(1);

    // Nothing more to do; then the message left waiting gets its receipt, and the next pass blanks it too (the pass
    // went on from where it had to leave a row, not past it).
    expect(await gw.gateway.retention()).toEqual({
      deleted: { messages: 0, receipts: 0, crm_events: 0, inbound_messages: 0, costs: 0 },
      blanked: { messages: 0, inbound_messages: 0 },
    });
    await db.updateTable('messages').set({ delivery_status: 'delivered', delivery_source: 'receipt' }).where('sms_id', '=', 'mid-awaiting').execute();
    expect((await gw.gateway.retention()).blanked).toEqual({ messages: 1, inbound_messages: 0 });
    expect(await db.selectFrom('messages').select(['content', 'recipient']).where('sms_id', '=', 'mid-awaiting').executeTakeFirst()).toEqual({
      content: null,
      recipient: BLANKED,
    });
    expect(await metricValue(counter, 'messages', 'blanked')).toBe(2);
    expect(await entries()).toEqual(['old-awaiting', 'old-dispatching', 'old-uncertain', 'old-unposted', 'young', 'young-shared'].sort());
  });

  it('deletes more rows than one chunk holds, in several chunks', async () => {
    gw = await startTestGateway(retentionConfig);
    const db = gw.gateway.ledger.db;
    const rows = Array.from({ length: 1_100 }, (_, i) => ({
      provider: 'sandbox',
      provider_message_id: `bulk-${i}`,
      from_number: '+447700900556',
      to_number: '+447700900001',
      content: 'hi',
      action: null,
      matched_user_ids: '[]',
      received_at: NOW - 100 * DAY + i,
    }));
    for (let i = 0; i < rows.length; i += 100)
      await db
        .insertInto('inbound_messages')
        .values(rows.slice(i, i + 100))
        .execute();
    expect((await gw.gateway.retention()).deleted.inbound_messages).toBe(1_100);
    expect(await db.selectFrom('inbound_messages').select('id').execute()).toEqual([]);
  });

  it('a setting of 0 keeps rows for ever', async () => {
    gw = await startTestGateway({ ...retentionConfig, retention: { messages: 0, receipts: 0, events: 0, inbound: 0, costs: 0, blank_personal_data_after: 0 } });
    const db = gw.gateway.ledger.db;
    await addMessage(db, message('ancient', 1_000), 'posted');
    await addInbound(db, 'in-ancient', 1_000);
    expect(await gw.gateway.retention()).toEqual({
      deleted: { messages: 0, receipts: 0, crm_events: 0, inbound_messages: 0, costs: 0 },
      blanked: { messages: 0, inbound_messages: 0 },
    });
    expect(await db.selectFrom('messages').select(['sms_id', 'recipient']).execute()).toEqual([
      { sms_id: 'ancient', recipient: message('ancient', 1_000).recipient },
    ]);
  });
});

describe('retention of what messages cost', () => {
  it("deletes a message's price fetch with it, and spend per day and budget periods past retention.costs", async () => {
    gw = await startTestGateway({ ...retentionConfig, retention: { ...retentionConfig.retention, costs: '400d' } });
    const db = gw.gateway.ledger.db;
    await addMessage(db, message('priced-old', 100), 'posted');
    await addMessage(db, message('priced-young', 1), 'posted');
    for (const smsId of ['priced-old', 'priced-young'])
      await db
        .insertInto('price_fetches')
        .values({ sms_id: smsId, provider: 'twilio', provider_message_id: `SM-${smsId}`, next_attempt_at: NOW, done: 1 })
        .execute();
    const day = (ageDays: number) => Math.floor((NOW - ageDays * DAY) / DAY) * DAY;
    const spend = (ageDays: number) => ({
      day: day(ageDays),
      provider: 'twilio',
      country: 'GB',
      brand_id: '',
      activity_id: '',
      action_group_id: '',
      currency: 'EUR',
      messages: 1,
      segments: 1,
      delivered: 1,
      cost_micros: 40_000,
      reported_micros: 0,
    });
    await db
      .insertInto('cost_daily')
      .values([spend(401), spend(399)])
      .execute();
    await db
      .insertInto('budget_spend')
      .values([
        { budget: 'gb-month', period_start: day(410), currency: 'EUR', spent_micros: 10 },
        { budget: 'gb-month', period_start: day(20), currency: 'EUR', spent_micros: 20 },
      ])
      .execute();

    const result = await gw.gateway.retention();
    expect(result.deleted).toMatchObject({ messages: 1, costs: 2 });
    expect(await db.selectFrom('price_fetches').select('sms_id').execute()).toEqual([{ sms_id: 'priced-young' }]);
    expect((await db.selectFrom('cost_daily').select('day').execute()).map((r) => Number(r.day))).toEqual([day(399)]);
    expect((await db.selectFrom('budget_spend').select('period_start').execute()).map((r) => Number(r.period_start))).toEqual([day(20)]);
    expect(await metricValue('sms_gateway_retention_rows_total', 'costs', 'deleted')).toBe(2);
  });
});

describe('finding 9: receipts per message are capped', () => {
  it('stores at most delivery.max_receipts_per_message receipts for one message and counts the rest', async () => {
    gw = await startTestGateway({ delivery: { max_receipts_per_message: 5, sweep_interval: '1h' } });
    const sent = await gw.post('/channels/sms/single', smsMessage('capped-1'));
    expect(sent.status).toBe(200);
    const smsId = sent.json.sms_id as string;
    const db = gw.gateway.ledger.db;
    const count = async () => (await db.selectFrom('receipts').select('id').where('sms_id', '=', smsId).execute()).length;
    // The sandbox's own receipt first, so the count below does not depend on when it arrives.
    await waitFor(async () => (await count()) >= 1, 10_000, 'the sandbox receipt');
    // A leaked receipt URL replayed with new ids: each would be a row of its own.
    const forged = Array.from({ length: 30 }, (_, i) => ({ sms_id: smsId, message_id: `replay-${i}`, status: 'delivered' }));
    expect((await gw.postReceipt(forged)).status).toBe(200);
    expect((await gw.postReceipt([{ sms_id: smsId, message_id: 'replay-later', status: 'failed' }])).status).toBe(200);
    expect(await count()).toBe(5);
    const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    const line = (await res.text()).split('\n').find((l) => l.startsWith('sms_gateway_receipts_capped_total{') && l.includes('provider="sandbox"'));
    expect(Number(line?.split(' ').pop())).toBe(27);
  });
});

describe('retention decisions', () => {
  it.each([
    [
      'every setting on',
      { messages: 90 * DAY, receipts: 60 * DAY, events: 90 * DAY, inbound: 90 * DAY, costs: 400 * DAY, blank_personal_data_after: 30 * DAY },
      {
        messages: NOW - 90 * DAY,
        receipts: NOW - 60 * DAY,
        events: NOW - 90 * DAY,
        inbound: NOW - 90 * DAY,
        costs: NOW - 400 * DAY,
        budgetPeriods: NOW - 400 * DAY,
        blank: NOW - 30 * DAY,
      },
    ],
    [
      'costs kept a day: budget periods still kept until a month has surely ended',
      { messages: 0, receipts: 0, events: 0, inbound: 0, costs: DAY, blank_personal_data_after: 0 },
      { messages: undefined, receipts: undefined, events: undefined, inbound: undefined, costs: NOW - DAY, budgetPeriods: NOW - 32 * DAY, blank: undefined },
    ],
    [
      '0 keeps for ever',
      { messages: 0, receipts: 0, events: 0, inbound: 0, costs: 0, blank_personal_data_after: 0 },
      { messages: undefined, receipts: undefined, events: undefined, inbound: undefined, costs: undefined, budgetPeriods: undefined, blank: undefined },
    ],
  ])('cutoffs: %s', (_label, settings, expected) => {
    expect(retentionCutoffs(NOW, settings)).toEqual(expected);
  });

  it.each([
    ['no write waited for the writer: on at once', 120, false, 0.1, 0],
    ['writes waited: a tenth of the writer', 120, true, 0.1, 1_080],
    ['writes waited: half', 120, true, 0.5, 120],
    ['a share of all of it never pauses', 120, true, 1, 0],
  ])('pause after a chunk: %s', (_label, busyMs, waited, share, expected) => {
    expect(pauseAfterChunk(busyMs, waited, share)).toBe(expected);
  });

  const a = { at: 10, key: 'a' };
  const b = { at: 20, key: 'b' };
  const c = { at: 30, key: 'c' };
  it.each([
    ['nothing looked at: stays where it was', [], SCAN_START],
    ['all final: after the last row seen', [{ last: a }, { last: b }], b],
    ['a row left unfinished: back at its time', [{ last: b, firstUnfinished: a }, { last: c }], { at: a.at, key: '' }],
    ['unfinished in a later chunk', [{ last: a }, { last: c, firstUnfinished: b }], { at: b.at, key: '' }],
  ])('next blanking start: %s', (_label, chunks, expected) => {
    expect(nextBlankStart(SCAN_START, chunks)).toEqual(expected);
  });

  it.each([
    [
      'under the cap',
      [
        { smsId: 'm', limit: 5 },
        { smsId: 'm', limit: 5 },
      ],
      [['m', 1]],
      [],
    ],
    [
      'the cap reached inside the batch',
      [
        { smsId: 'm', limit: 4 },
        { smsId: 'm', limit: 4 },
        { smsId: 'm', limit: 4 },
      ],
      [['m', 3]],
      [1, 2],
    ],
    [
      'already full',
      [
        { smsId: 'm', limit: 2 },
        { smsId: 'n', limit: 2 },
      ],
      [['m', 2]],
      [0],
    ],
    [
      'a message of three parts has three times the cap',
      [
        { smsId: 'p', limit: 6 },
        { smsId: 'p', limit: 6 },
      ],
      [['p', 5]],
      [1],
    ],
    [
      'no sms_id is never capped',
      [
        { smsId: null, limit: 1 },
        { smsId: null, limit: 1 },
      ],
      [],
      [],
    ],
  ] as const)('receipt cap: %s', (_label, receipts, stored, over) => {
    expect([...receiptsOverCap(receipts, new Map(stored))]).toEqual(over);
  });
});
