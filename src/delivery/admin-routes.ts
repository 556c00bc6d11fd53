/** What operators use to see and repair delivery: one message's story, and replaying dead conversions. */
import { Hono, type Context } from 'hono';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { requireAdmin } from '../auth/admin.js';
import { RawJson, stringifyExact } from '../http/exact-json.js';
import { findConversionsBySmsId, replayDeadConversions } from '../ledger/conversions.js';
import { findMessageByActivityKey, findMessageBySmsId, type MessageRow } from '../ledger/messages.js';
import { findReceiptsBySmsId } from '../ledger/receipts.js';
import type { Database } from '../ledger/schema.js';

export interface AdminRouteDeps {
  db: Kysely<Database>;
  adminKey: string | undefined;
  now: () => number;
  onReplay: () => void;
}

/** One message with its receipts and conversion attempts: what /admin/messages and the console's search show. */
export async function messageStory(db: Kysely<Database>, message: MessageRow) {
  const { activity_json, ...rest } = message;
  return {
    // As stored, which is as received: parsing it would round 64-bit ids (exact-json.ts). Written by stringifyExact.
    message: { ...rest, activity: new RawJson(activity_json) },
    receipts: await findReceiptsBySmsId(db, message.sms_id),
    conversions: await findConversionsBySmsId(db, message.sms_id),
  };
}

function storyAnswer(c: Context, story: Awaited<ReturnType<typeof messageStory>>) {
  return c.body(stringifyExact(story), 200, { 'content-type': 'application/json' });
}

export const replayRequestSchema = z.strictObject({ ids: z.array(z.number().int().positive()).min(1).optional() });

export function adminRoutes(deps: AdminRouteDeps) {
  const app = new Hono();
  app.use('*', requireAdmin(deps.adminKey));

  app.get('/messages/:smsId', async (c) => {
    const message = await findMessageBySmsId(deps.db, c.req.param('smsId'));
    if (!message) return c.json({ error: `sms_id ${c.req.param('smsId')} is not in the ledger` }, 404);
    return storyAnswer(c, await messageStory(deps.db, message));
  });

  app.get('/messages', async (c) => {
    const activityId = c.req.query('activity_id');
    if (!activityId) return c.json({ error: 'activity_id: query parameter is required' }, 400);
    const message = await findMessageByActivityKey(deps.db, activityId);
    if (!message) return c.json({ error: `activity_id ${activityId} is not in the ledger` }, 404);
    return storyAnswer(c, await messageStory(deps.db, message));
  });

  app.post('/conversions/replay', async (c) => {
    const text = await c.req.text();
    let body: unknown = {};
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      return c.json({ error: 'body is not valid JSON' }, 400);
    }
    const parsed = replayRequestSchema.safeParse(body);
    if (!parsed.success) return c.json({ error: `ids: must be a non-empty array of conversion ids` }, 400);
    const replayed = await replayDeadConversions(deps.db, deps.now(), parsed.data.ids);
    if (replayed > 0) deps.onReplay();
    return c.json({ replayed });
  });
  return app;
}
