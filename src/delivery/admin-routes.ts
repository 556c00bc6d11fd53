/** What operators use to see and repair delivery: searching messages, one message's story, dead letters and replays. */
import { Hono, type Context } from 'hono';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { requireAdmin } from '../auth/admin.js';
import { RawJson, stringifyExact } from '../http/exact-json.js';
import { findConversionsBySmsId, listDeadConversions, replayDeadConversions } from '../ledger/conversions.js';
import { findEventsBySmsId } from '../ledger/events.js';
import { searchMessages } from '../ledger/message-search.js';
import { findMessageBySmsId, type MessageRow } from '../ledger/messages.js';
import { findReceiptsBySmsId } from '../ledger/receipts.js';
import type { Database } from '../ledger/schema.js';
import { parseDeadLetterQuery } from './dead-letter-query.js';
import { encodeCursor, parseMessageQuery } from './message-query.js';
import { buildTimeline } from './timeline.js';
import { readReplayJson, replayRoute } from '../outbox/replay-route.js';

export interface DeliveryAdminRouteDeps {
  db: Kysely<Database>;
  /** Where the read-only views read (the ledger's read connection, src/ledger/db.ts); `db` when absent. */
  readDb?: Kysely<Database>;
  adminKey: string | undefined;
  now: () => number;
  onReplay: () => void;
  /** sms.default_region: how a national recipient number in a search is read. */
  defaultRegion: string | undefined;
  /** How a provider's receipts are verified (receipt-checks.ts). */
  receiptCheck: (provider: string) => string;
}

/**
 * One message with its receipts, conversion attempts, the CRM events its send caused (a provider's opt-out error:
 * User Consents, tied by crm_events.sms_id) and their timeline: what /admin/messages/{sms_id} and the console's
 * message page show.
 */
export async function messageStory(
  db: Kysely<Database>,
  message: MessageRow,
  receiptCheck: (provider: string) => string,
  shownError?: (text: string) => string,
) {
  const { activity_json, ...rest } = message;
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
    message: { ...rest, activity: new RawJson(activity_json) },
    receipts,
    conversions,
    events,
    timeline: buildTimeline({ message: rest, receipts, conversions, events }, receiptCheck, shownError),
  };
}

function exactJson(c: Context, value: unknown) {
  return c.body(stringifyExact(value), 200, { 'content-type': 'application/json' });
}

export const replayRequestSchema = z.strictObject({
  ids: z.array(z.number().int().positive()).min(1).max(10_000).optional().describe('Conversion ids to replay'),
  provider: z.string().min(1).max(256).optional().describe('Only dead letters of messages sent through this provider'),
  status: z.enum(['delivered', 'undelivered', 'failed', 'delivery_unknown']).optional().describe('Only dead letters reporting this status'),
});

export function adminRoutes(deps: DeliveryAdminRouteDeps) {
  const app = new Hono();
  app.use('*', requireAdmin(deps.adminKey));

  app.get('/messages/:smsId', async (c) => {
    const message = await findMessageBySmsId(deps.readDb ?? deps.db, c.req.param('smsId'));
    if (!message) return c.json({ error: `sms_id ${c.req.param('smsId')} is not in the ledger` }, 404);
    return exactJson(c, await messageStory(deps.readDb ?? deps.db, message, deps.receiptCheck));
  });

  app.get('/messages', async (c) => {
    const query = parseMessageQuery(new URL(c.req.url).searchParams, deps.defaultRegion);
    if (!query.ok) return c.json({ error: query.error }, 400);
    const { rows, more } = await searchMessages(deps.readDb ?? deps.db, query.filter);
    return c.json({ messages: rows, next_cursor: more ? encodeCursor(rows[rows.length - 1]!) : null });
  });

  app.get('/conversions/dead', async (c) => {
    const query = parseDeadLetterQuery(new URL(c.req.url).searchParams);
    if (!query.ok) return c.json({ error: query.error }, 400);
    const rows = await listDeadConversions(deps.readDb ?? deps.db, { ...query.match, limit: query.limit + 1 });
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    return c.json({ dead_letters: page, next_cursor: more ? String(page[page.length - 1]!.id) : null });
  });

  app.post(
    '/conversions/replay',
    replayRoute({
      read: (c) =>
        readReplayJson(c, replayRequestSchema, (issue) => {
          const field = issue.path.length ? issue.path.map(String).join('.') : 'body';
          return `${field}: ${issue.code === 'unrecognized_keys' ? 'only ids, provider and status are accepted' : issue.message}`;
        }),
      replay: (request) => replayDeadConversions(deps.db, deps.now(), request),
      onReplay: deps.onReplay,
    }),
  );
  return app;
}
