/**
 * One message's story: the message with its receipts, conversion attempts, the CRM events its send caused (a
 * provider's opt-out error: User Consents, tied by crm_events.sms_id) and their timeline. GET /admin/messages/{sms_id}
 * (admin-routes.ts) answers it as JSON; the console's message page (src/console/story-page.ts) renders it.
 */
import type { Kysely } from 'kysely';
import { RawJson } from '../http/exact-json.js';
import { findConversionsBySmsId } from '../ledger/conversions.js';
import { findEventsBySmsId } from '../ledger/events.js';
import type { MessageRow } from '../ledger/messages.js';
import { findReceiptsBySmsId } from '../ledger/receipts.js';
import type { Database } from '../ledger/schema.js';
import { buildTimeline } from './timeline.js';
import { formatMicros, toMicros } from '../kit/money.js';

export async function messageStory(
  db: Kysely<Database>,
  message: MessageRow,
  receiptCheck: (provider: string) => string,
  shownError?: (text: string) => string,
) {
  const { activity_json, cost_micros, ...rest } = message;
  const receipts = await findReceiptsBySmsId(db, message.sms_id);
  const conversions = await findConversionsBySmsId(db, message.sms_id);
  const events = (await findEventsBySmsId(db, message.sms_id)).map(
    ({ event_id, type, user_id, created_at, sent_at, dead, attempts, http_status, last_error }) => ({
      event_id,
      type,
      user_id,
      created_at: Number(created_at),
      sent_at: sent_at === null ? null : Number(sent_at),
      dead,
      attempts,
      http_status,
      last_error,
    }),
  );
  return {
    // As stored, which is as received: parsing it would round 64-bit ids (exact-json.ts). Written by stringifyExact.
    // The cost as exact decimal text in its currency (docs/costs.md "Money"), whichever driver read the BIGINT.
    message: {
      ...rest,
      cost: cost_micros === null ? null : formatMicros(toMicros(cost_micros), rest.cost_currency ?? ''),
      activity: new RawJson(activity_json),
    },
    // A receipt's price, kept where it was parked (docs/costs.md), as exact decimal text like the message's cost.
    receipts: receipts.map(({ price_micros, ...r }) => ({
      ...r,
      price: price_micros === null ? null : formatMicros(toMicros(price_micros), r.price_currency ?? ''),
    })),
    conversions,
    events,
    timeline: buildTimeline({ message: rest, receipts, conversions, events }, receiptCheck, shownError),
  };
}
