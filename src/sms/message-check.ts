/**
 * The hot path's check of the SMS message object: the same rules as smsMessageSchema (message-schema.ts), written
 * out as plain comparisons. zod stays the source of truth, of the OpenAPI document and of every error message: a
 * message this check refuses goes through the schema, which names the field. test/sms/message-check.property.test.ts
 * holds the two to the same verdict and the same values over generated inputs, so a change to one without the other
 * fails there. Measured with bench/dispatch.ts: see the commit that added this file.
 */
import type { SmsMessageInput } from './message-schema.js';

/** What prepare.ts reads of a message the schema accepts, with the schema's trims applied. */
export type CheckedMessage = Pick<SmsMessageInput, 'content' | 'recipient' | 'sender_name' | 'provider_name' | 'encoding'> & {
  activity: { id: string | number; user_id?: string | number; brand_id?: string | number };
};

const LONE_SURROGATE_OR_NUL = /[\p{Cs}\u0000]/u;
const IDENTIFIERS = ['brand_id', 'user_id', 'internal_user_id', 'activity_id', 'action_group_id', 'trigger_hash', 'action_id'] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** z.number() refuses NaN and ±Infinity; Number.isInteger refuses them too. */
const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const isOptionalText = (v: unknown) => v === undefined || v === null || typeof v === 'string';

/** The message's fields when the schema would accept it, else undefined (then ask the schema why). */
export function checkSmsMessage(input: unknown): CheckedMessage | undefined {
  if (!isRecord(input)) return undefined;
  const activity = input.activity;
  if (!isRecord(activity)) return undefined;
  const rawId = activity.id;
  let id: string | number;
  if (typeof rawId === 'string') {
    id = rawId.trim();
    if (id.length < 1 || id.length > 255 || LONE_SURROGATE_OR_NUL.test(id)) return undefined;
  } else if (isInteger(rawId)) id = rawId;
  else return undefined;
  for (const key of IDENTIFIERS) {
    const v = activity[key];
    if (typeof v === 'string') {
      if (v.length > 255 || LONE_SURROGATE_OR_NUL.test(v)) return undefined;
    } else if (v !== undefined && !isInteger(v)) return undefined;
  }
  const { content, recipient, provider_name } = input;
  // The CRM's own schema spells the key `enconding` (sic, docs/operator-api.md "Requests"); `encoding` wins if both come.
  const encoding = input.encoding ?? input.enconding;
  if (!isOptionalText(input.enconding)) return undefined;
  if (typeof content !== 'string' || content.length < 1 || content.trim().length === 0 || LONE_SURROGATE_OR_NUL.test(content)) return undefined;
  if (typeof recipient !== 'string' || recipient.length < 1) return undefined;
  const rawSender = input.sender_name;
  let sender: string | null | undefined;
  // Any string, as sent: whether an SMS can carry it (spaces only cannot) is prepare.ts's decision (sms.refuse_unusable_sender).
  if (typeof rawSender === 'string') sender = rawSender;
  else if (rawSender === undefined || rawSender === null) sender = rawSender;
  else return undefined;
  if (!isOptionalText(provider_name) || !isOptionalText(encoding)) return undefined;
  return {
    activity: { id, user_id: activity.user_id as string | number | undefined, brand_id: activity.brand_id as string | number | undefined },
    content,
    recipient,
    sender_name: sender,
    provider_name: provider_name as string | null | undefined,
    encoding: encoding as string | null | undefined,
  };
}
