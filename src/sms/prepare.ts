/** Turns one SMS message object from the CRM into a message ready to dispatch, or an error naming the field. */
import type { Config } from '../config/schema.js';
import { RawJson, type ActivitySource } from '../http/exact-json.js';
import type { SmsProvider } from '../../providers/types.js';
import { parseRequestedEncoding, planEncoding, type Encoding } from './encoding.js';
import { checkSmsMessage, type CheckedMessage } from './message-check.js';
import { describeFirstIssue } from '../http/zod-issue.js';
import { smsMessageSchema } from './message-schema.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';
import { normaliseRecipient } from '../kit/phone-number.js';

/** A message checked and planned (provider, recipient, encoding, segments): what the send path takes. */
export interface PreparedMessage {
  activityKey: string;
  activityJson: string;
  /** activity.user_id as text, or null: the player sms.suppression looks up. */
  userId: string | null;
  provider: SmsProvider;
  recipient: string;
  sender: string | null;
  text: string;
  encoding: Encoding;
  segments: number;
}

export type Prepared = { ok: true; message: PreparedMessage } | { ok: false; error: string };

/** `source`: the activity's text as received, when the body may hold numbers JSON.parse changed (exact-json.ts). */
export function prepareMessage(input: unknown, router: ProviderRouter, sms: Config['sms'], source?: ActivitySource): Prepared {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, error: 'body: must be an SMS message object' };
  }
  // The compiled check accepts what the schema accepts; a refusal is described by the schema itself.
  const m = checkSmsMessage(input);
  if (!m) {
    const parsed = smsMessageSchema.safeParse(input);
    if (!parsed.success) return { ok: false, error: describeFirstIssue(parsed.error, input) };
    // Unreachable while message-check.property.test.ts passes; if ever reached, the schema's verdict stands.
    return prepareChecked({ ...parsed.data, encoding: parsed.data.encoding ?? parsed.data.enconding }, input, router, sms, source);
  }
  return prepareChecked(m, input, router, sms, source);
}

function prepareChecked(m: CheckedMessage, input: unknown, router: ProviderRouter, sms: Config['sms'], source?: ActivitySource): Prepared {
  // null is how many serialisers write an absent optional field; the schema accepts it, so it means auto too.
  const requested = parseRequestedEncoding(m.encoding ?? undefined);
  if (!requested) return { ok: false, error: `encoding: ${JSON.stringify(m.encoding)} is not one of auto, gsm7, usc2, ucs2` };
  const route = router.resolve(m.provider_name);
  if (!route.ok) return route;
  const recipient = normaliseRecipient(m.recipient, sms.default_region);
  if (!recipient.ok) return recipient;
  const plan = planEncoding(m.content, requested, { smartEncoding: sms.smart_encoding, maxSegments: sms.max_segments });
  if (!plan.ok) return plan;

  return {
    ok: true,
    message: {
      activityKey: activityKey(m.activity.id, source),
      // The activity exactly as it arrived (keys, JSON types and every digit), for the conversion webhook.
      activityJson: source?.json ?? JSON.stringify((input as { activity: unknown }).activity),
      // The player the suppression check looks up (suppression.ts); "" names nobody.
      userId: m.activity.user_id === undefined || m.activity.user_id === '' ? null : String(m.activity.user_id),
      provider: route.provider,
      recipient: recipient.e164,
      sender: m.sender_name?.trim() || null,
      text: plan.plan.text,
      encoding: plan.plan.encoding,
      segments: plan.plan.segments,
    },
  };
}

/**
 * The idempotency key of an activity id: the string itself, or the integer in decimal. An integer beyond 2^53
 * keys by its text as received, since distinct ids of that size can parse to the same double.
 */
function activityKey(id: string | number, source: ActivitySource | undefined): string {
  if (typeof id === 'string' || Number.isSafeInteger(id)) return String(id);
  return source?.idText ?? String(id);
}

/** The id to echo in a batch answer: activity.id with the JSON type and text it arrived with, or null when absent. */
export function echoedActivityId(input: unknown, source?: ActivitySource): string | number | RawJson | null {
  const activity = (input as { activity?: { id?: unknown } } | null)?.activity;
  const id = activity && typeof activity === 'object' ? activity.id : undefined;
  if (typeof id === 'number' && source?.idText !== undefined) return new RawJson(source.idText);
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
