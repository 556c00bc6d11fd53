/** Turns one SMS message object from the CRM into a message ready to dispatch, or an error naming the field. */
import type { Config } from '../config/schema.js';
import type { PreparedMessage } from './dispatch.js';
import { parseRequestedEncoding, planEncoding } from './encoding.js';
import { describeFirstIssue, smsMessageSchema } from './message-schema.js';
import type { ProviderRouter } from './provider-router.js';
import { normaliseRecipient } from './recipient.js';

export type Prepared = { ok: true; message: PreparedMessage } | { ok: false; error: string };

export function prepareMessage(input: unknown, router: ProviderRouter, sms: Config['sms']): Prepared {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, error: 'body: must be an SMS message object' };
  }
  const parsed = smsMessageSchema.safeParse(input);
  if (!parsed.success) return { ok: false, error: describeFirstIssue(parsed.error, input) };
  const m = parsed.data;

  // null is how many serialisers write an absent optional field; the schema accepts it, so it means auto too.
  const requested = parseRequestedEncoding(m.encoding ?? undefined);
  if (!requested) return { ok: false, error: `encoding: ${JSON.stringify(m.encoding)} is not one of auto, gsm7, ucs2 (usc2)` };
  const route = router.resolve(m.provider_name);
  if (!route.ok) return route;
  const recipient = normaliseRecipient(m.recipient, sms.default_region);
  if (!recipient.ok) return recipient;
  const plan = planEncoding(m.content, requested, { smartEncoding: sms.smart_encoding, maxSegments: sms.max_segments });
  if (!plan.ok) return plan;

  return {
    ok: true,
    message: {
      activityKey: String(m.activity.id),
      // The activity exactly as it arrived (keys and JSON types), for the conversion webhook.
      activityJson: JSON.stringify((input as { activity: unknown }).activity),
      provider: route.provider,
      recipient: recipient.e164,
      sender: m.sender_name?.trim() || null,
      text: plan.plan.text,
      encoding: plan.plan.encoding,
      segments: plan.plan.segments,
    },
  };
}

/** The id to echo in a batch answer: activity.id with the JSON type it arrived with, or null when absent. */
export function echoedActivityId(input: unknown): string | number | null {
  const activity = (input as { activity?: { id?: unknown } } | null)?.activity;
  const id = activity && typeof activity === 'object' ? activity.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
