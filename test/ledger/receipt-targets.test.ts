/**
 * How a receipt finds its message (src/ledger/receipt-targets.ts): by our sms_id, or by the provider's message id
 * for the messages whose provider's receipts may lack it (messages.receipts_name_sms_id = 0, the only ones
 * messages_provider_id_only holds; migration 2026-11-29-90-provider-id-only). Runs on SQLite, and on PostgreSQL
 * when TEST_DATABASE_URL is set; the plan is SQLite's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { findReceiptTargetsByProviderId, findReceiptTargetsBySmsId } from '../../src/ledger/receipt-targets.js';
import { openTestLedger, type TestLedger } from '../helpers/database.js';
import { submittedMessageRow } from '../helpers/ledger.js';
import { sqlitePlanOf } from '../helpers/query-plans.js';

const DAY = 86_400_000;
const NOW = 1_800_000_000_000;

describe('finding a receipt’s message', () => {
  let opened: TestLedger | undefined;
  let ledger: Ledger;
  beforeAll(async () => {
    opened = await openTestLedger('receipt-targets');
    ledger = opened.ledger;
    await ledger.db
      .insertInto('messages')
      .values([
        // SMPP's receipts carry only its own id: today's message, and one of 40 days ago (sent before the migration).
        submittedMessageRow('smpp-new', 'smpp', NOW - 60_000, { provider_message_id: 'SMSC-1' }),
        submittedMessageRow('smpp-old', 'smpp', NOW - 40 * DAY, { provider_message_id: 'SMSC-2' }),
        // A Twilio message sent by this version: its receipts name its sms_id.
        submittedMessageRow('twilio-new', 'twilio', NOW - 60_000, { provider_message_id: 'SM1', receipts_name_sms_id: 1 }),
        // A Twilio message from before the migration keeps its entry (the column's default).
        submittedMessageRow('twilio-old', 'twilio', NOW - 3 * DAY, { provider_message_id: 'SM2' }),
      ])
      .execute();
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('finds a message whose receipts may lack its sms_id by the provider’s id, however old', async () => {
    const found = await findReceiptTargetsByProviderId(ledger.db, 'smpp', ['SMSC-1', 'SMSC-2', 'SMSC-3'], NOW);
    expect(found.map((m) => [m.sms_id, m.provider_message_id]).sort()).toEqual([
      ['smpp-new', 'SMSC-1'],
      ['smpp-old', 'SMSC-2'],
    ]);
  });

  it('finds a message whose receipts name its sms_id by that id only; one sent before the migration by either', async () => {
    expect(await findReceiptTargetsByProviderId(ledger.db, 'twilio', ['SM1'], NOW)).toEqual([]);
    expect((await findReceiptTargetsBySmsId(ledger.db, ['twilio-new'])).map((m) => m.provider_message_id)).toEqual(['SM1']);
    expect((await findReceiptTargetsByProviderId(ledger.db, 'twilio', ['SM2'], NOW)).map((m) => m.sms_id)).toEqual(['twilio-old']);
  });
});

describe('its plan on SQLite', () => {
  it('reads messages_provider_id_only with all three keys: its condition is written as the index’s is', async () => {
    const plan = await sqlitePlanOf((db) => findReceiptTargetsByProviderId(db, 'smpp', ['SMSC-1', 'SMSC-2'], NOW));
    expect(plan).toMatch(/SEARCH messages USING INDEX messages_provider_id_only \(<expr>=\? AND provider=\? AND provider_message_id=\?\)/);
  });
});
