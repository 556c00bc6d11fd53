/**
 * The console's pure decisions (replay forms, dead-letter queries, the timeline) as tables, and the migration that
 * gives old messages their user_id.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { age } from '../../src/outbox/dead-list-frame.js';
import { replayFormMatch } from '../../src/delivery/dead-letters-page.js';
import { parseDeadLetterQuery } from '../../src/delivery/dead-letter-query.js';
import { describeReceiptChecks } from '../../src/delivery/receipt-checks.js';
import { buildTimeline, type StoryRows } from '../../src/delivery/timeline.js';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import { migrations } from '../../src/ledger/engine/migrations.js';

const form = (entries: Array<[string, string]>) => {
  const data = new FormData();
  for (const [k, v] of entries) data.append(k, v);
  return data;
};

describe('what a replay form asks for', () => {
  it.each([
    [
      'the pressed row',
      [
        ['only', '42'],
        ['ids', '7'],
      ],
      { ok: true, match: { ids: [42] } },
    ],
    [
      'the ticked rows',
      [
        ['action', 'selected'],
        ['ids', '7'],
        ['ids', '9'],
      ],
      { ok: true, match: { ids: [7, 9] } },
    ],
    [
      'all matching the filter',
      [
        ['action', 'matching'],
        ['provider', 'sandbox'],
        ['status', 'failed'],
      ],
      { ok: true, match: { provider: 'sandbox', status: 'failed' } },
    ],
    [
      'all (the filter left empty)',
      [
        ['action', 'matching'],
        ['provider', ''],
        ['status', ''],
      ],
      { ok: true, match: {} },
    ],
    ['no action: all, as the old dashboard button', [], { ok: true, match: {} }],
    ['nothing ticked', [['action', 'selected']], { ok: false, error: 'ids: tick at least one dead conversion' }],
    [
      'a forged id',
      [
        ['action', 'selected'],
        ['ids', '1 or 1=1'],
      ],
      { ok: false, error: 'ids: must be conversion ids' },
    ],
    [
      'two pressed rows',
      [
        ['only', '1'],
        ['only', '2'],
      ],
      { ok: false, error: 'only: must be one conversion id' },
    ],
    ['an unknown action', [['action', '__proto__']], { ok: false, error: 'action: must be selected or matching' }],
    [
      'an unknown status',
      [
        ['action', 'matching'],
        ['status', 'lost'],
      ],
      { ok: false, error: 'status: must be one of delivered, undelivered, failed, delivery_unknown' },
    ],
  ] as Array<[string, Array<[string, string]>, unknown]>)('%s', (_label, entries, expected) => {
    expect(replayFormMatch(form(entries))).toEqual(expected);
  });
});

describe('the dead-letter list query', () => {
  it.each([
    ['', { ok: true, match: {}, limit: 100 }],
    ['provider=sandbox&status=failed&cursor=12&limit=5', { ok: true, match: { provider: 'sandbox', status: 'failed', beforeId: 12 }, limit: 5 }],
    ['__proto__=1', { ok: false, error: '"__proto__": unknown query parameter; known: provider, status, cursor, limit' }],
    ['status=lost', { ok: false, error: 'status: must be one of delivered, undelivered, failed, delivery_unknown' }],
    ['cursor=-1', { ok: false, error: 'cursor: not a cursor this API gave out' }],
    ['limit=5000', { ok: false, error: 'limit: must be an integer from 1 to 1000' }],
    ['provider=', { ok: false, error: 'provider: must not be empty' }],
  ])('%s', (query, expected) => {
    expect(parseDeadLetterQuery(new URLSearchParams(query))).toEqual(expected);
  });

  it.each([
    [0, '0 min'],
    [59 * 60_000, '59 min'],
    [3 * 3_600_000 + 5 * 60_000, '3 h 5 min'],
    [3 * 86_400_000 + 4 * 3_600_000, '3 d 4 h'],
  ])('an age of %s ms reads %s', (ms, text) => {
    expect(age(ms)).toBe(text);
  });
});

describe('a message timeline', () => {
  const message: StoryRows['message'] = {
    sms_id: 's-1',
    activity_key: 'a-1',
    user_id: 'p-1',
    request_id: 'r-1',
    provider: 'sandbox',
    provider_message_id: 'pm-1',
    receipts_name_sms_id: 1,
    recipient: '+447700900123',
    sender: null,
    encoding: 'gsm7',
    segments: 1,
    content: null,
    state: 'submitted',
    error: null,
    error_code: null,
    attempts: 2,
    provider_status: 'queued',
    delivery_status: 'delivered',
    delivery_source: 'receipt',
    created_at: 1_000,
    updated_at: 5_000,
    dispatched_at: 1_500,
    submitted_at: 1_600,
    completed_at: 3_000,
    lookup_result: null,
    status_queried_at: null,
    traceparent: null,
    intake_note: null,
    country: 'GB',
    cost_currency: null,
    cost_source: null,
    route: null,
    route_rule: null,
    route_rule_name: null,
    held_until: null,
  };
  const receipt = {
    id: 1,
    provider: 'sandbox',
    dedup_key: 'k',
    sms_id: 's-1',
    provider_message_id: 'pm-1',
    provider_status: 'DELIVRD',
    mapped_status: 'delivered',
    error_code: null,
    matched: 1,
    per_part: 0,
    received_at: 3_000,
    price_micros: null,
    price_currency: null,
  };
  const conversion = {
    id: 9,
    sms_id: 's-1',
    delivery_status: 'delivered' as const,
    attempts: 2,
    next_attempt_at: 0,
    claimed_until: 0,
    claim_token: null,
    posted_at: 4_000,
    last_error: null,
    dead: 0,
    created_at: 3_000,
    post_group: null,
    attempt_log: [
      { id: 1, conversion_id: 9, attempted_at: 3_500, ok: 0, http_status: 503, error: 'webhook answered 503' },
      { id: 2, conversion_id: 9, attempted_at: 4_000, ok: 1, http_status: 200, error: null },
    ],
  };
  const checks = describeReceiptChecks({ sandbox: { type: 'sandbox', receipt_secret: 'x' } as { type: string } });

  it('orders what happened, with each answer and how the receipt was verified', () => {
    const timeline = buildTimeline({ message, receipts: [receipt], conversions: [conversion] }, checks);
    expect(timeline.map((e) => [e.at, e.kind])).toEqual([
      [1_000, 'received'],
      [1_500, 'send'],
      [3_000, 'receipt'],
      [3_000, 'conversion'],
      [3_500, 'webhook'],
      [4_000, 'webhook'],
    ]);
    expect(timeline[0]!.detail).toEqual({ request_id: 'r-1', user_id: 'p-1' });
    expect(timeline[1]!.summary).toBe('attempt 2 to sandbox: accepted as pm-1 (queued)');
    expect(timeline[1]!.detail.earlier_attempts).toBe(1);
    expect(timeline[2]!.detail.verified).toBe('x-sandbox-signature HMAC checked with receipt_secret');
    expect(timeline[4]!.summary).toBe('conversion 9 posted: failed (HTTP 503)');
  });

  it.each([
    ['rejected', { state: 'rejected' as const, error: 'blocked number', error_code: '21610' }, 'refused: blocked number [21610]'],
    ['uncertain', { state: 'uncertain' as const, error: 'timed out' }, 'no clear answer, it may have been sent: timed out'],
    ['retryable', { state: 'retryable' as const, error: 'HTTP 503' }, 'transient error, nothing sent: HTTP 503'],
    ['dispatching', { state: 'dispatching' as const }, 'under way (no answer recorded yet)'],
  ])('says a %s send as people read it', (_label, change, text) => {
    const [, send] = buildTimeline({ message: { ...message, ...change, attempts: 1 }, receipts: [], conversions: [] }, checks);
    expect(send!.summary).toBe(`attempt 1 to sandbox: ${text}`);
  });

  it('passes provider error texts through shownError (the console masks numbers in them)', () => {
    const refused = { ...message, state: 'rejected' as const, error: 'number +447700900123 is blocked', attempts: 1 };
    const [, send] = buildTimeline({ message: refused, receipts: [], conversions: [] }, checks, (t) => t.replace(/\+\d+/g, '+44…'));
    expect(send!.summary).toBe('attempt 1 to sandbox: refused: number +44… is blocked');
  });

  it.each([
    [{ type: 'twilio' }, 'X-Twilio-Signature checked against the callback URL and form with auth_token'],
    [
      { type: 'twilio', webhook_shared_keys: { k: 's' } },
      "X-Twilio-Signature checked against the callback URL and form with auth_token, or a Webhooks Rule's shared key (webhook_shared_keys)",
    ],
    [{ type: 'vonage' }, 'not signed: signature_secret is not set'],
    [{ type: 'sandbox' }, 'not signed: sandbox without receipt_secret'],
    [{ type: 'custom' }, 'checked by the custom plugin'],
  ])('names how %j receipts are verified', (block, text) => {
    expect(describeReceiptChecks({ p: block })('p')).toBe(text);
    expect(describeReceiptChecks({ p: block })('gone')).toBe('provider no longer configured');
  });
});

describe('migration 2026-11-24-60-console', () => {
  it('gives messages stored before it their user_id from the activity', async () => {
    const ledger = openLedger({
      url: `sqlite:${join(mkdtempSync(join(tmpdir(), 'crm-sms-migrate-')), 'ledger.db')}`,
      sqlite_synchronous: 'normal',
      pool_size: 1,
    });
    try {
      const migrator = new Migrator({ db: ledger.db, provider: { getMigrations: async () => migrations } });
      expect((await migrator.migrateTo('2026-11-23-20-stats')).error).toBeUndefined();
      for (const [key, activity] of [
        ['a', '{"id":"a","user_id":"player-9"}'],
        ['b', '{"id":"b","user_id":42}'],
        ['c', '{"id":"c"}'],
      ]) {
        await sql`insert into messages (sms_id, activity_key, activity_json, provider, recipient, encoding, segments, state, attempts, created_at, updated_at, dispatched_at)
          values (${`s-${key}`}, ${key}, ${activity}, 'sandbox', '+447700900123', 'gsm7', 1, 'submitted', 1, 1, 1, 1)`.execute(ledger.db);
      }
      await migrateToLatest(ledger.db);
      const rows = await sql<{ activity_key: string; user_id: string | null }>`select activity_key, user_id from messages order by activity_key`.execute(
        ledger.db,
      );
      expect(rows.rows).toEqual([
        { activity_key: 'a', user_id: 'player-9' },
        { activity_key: 'b', user_id: '42' },
        { activity_key: 'c', user_id: null },
      ]);
    } finally {
      await ledger.close();
    }
  });
});
