/** Turns one SMS message object from the CRM into a message ready to dispatch, or an error naming the field. */
import type { Config } from '../config/schema.js';
import { activitySources, identifierText, RawJson, type ActivitySource } from '../http/exact-json.js';
import type { SmsProvider } from '../../providers/types.js';
import type { DispatchResult } from './outcome.js';
import { parseRequestedEncoding, planEncoding, type Encoding, type RequestedEncoding } from './encoding.js';
import { checkSmsMessage, type CheckedMessage } from './message-check.js';
import { describeFirstIssue } from '../http/zod-issue.js';
import { isUsableSender, smsMessageSchema, USABLE_SENDER_RULE } from './message-schema.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';
import { decideRecipient, readingFields, type RecipientReadingNote } from './recipient-reading.js';
import type { RoutingVerdict } from './routing-verdict.js';

/** A message checked and planned (provider, recipient, encoding, segments): what the send path takes. */
export interface PreparedMessage {
  /** The idempotency key: activity.id as text, an integer beyond 2^53 by its digits as received (identifierText). */
  activityKey: string;
  activityJson: string;
  /** activity.user_id as text (identifierText), or null: the player sms.suppression looks up. */
  userId: string | null;
  provider: SmsProvider;
  /** E.164, as read by recipient-reading.ts; for a refused reading, its first reading (stored on the refused row). */
  recipient: string;
  /** The recipient's country as read (senders.by_country); undefined when the metadata places it nowhere. */
  country: string | undefined;
  /** How the recipient was read when not as written, or why it is refused: stored on the message (claim.ts). */
  reading: RecipientReadingNote | undefined;
  /**
   * The recipient as the CRM wrote it, kept for a message naming a player: when the player's record is held
   * (operator.backend sql), the record decides how it is read, before the claim (player-records.ts).
   */
  recipientAsSent: string | undefined;
  sender: string | null;
  text: string;
  encoding: Encoding;
  segments: number;
  /** What was read otherwise than sent (a sender no SMS can carry, an unknown encoding): stored for the timeline. */
  notes: IntakeNote[];
  /** activity.brand_id as text (identifierText), or null: what `routing.brands`, a rule's `match.brands`, quiet-hours windows and budgets read. */
  brand: string | null;
  /** The provider_name the CRM sent (else sms.default_provider), lower case: what a rule's `match.provider_names` reads. */
  providerName: string | null;
  /**
   * Where it may go and which rule of its route takes it (routing-verdict.ts), decided before the claim; absent when
   * there is nothing to decide (no country list, no route).
   */
  verdict?: RoutingVerdict;
  /**
   * Its recipient was read with its player's record before the claim, for a routing verdict decided on that reading
   * (dispatch.ts): the claim keeps it rather than read it again with the record its own statement sees, so the
   * recipient sent is the one the verdict allowed.
   */
  recordRead?: true;
  /**
   * When the message was accepted (its row's created_at), for a held message released later: its validity counts
   * from then, so the time it was held is part of it (send.ts). Absent: it counts from the send.
   */
  acceptedAt?: number;
}

/** A field of the CRM's message read otherwise than sent, so that the message is not lost (docs/operator-api.md). */
export interface IntakeNote {
  field: 'sender_name' | 'encoding';
  /** The value as the CRM sent it. */
  value: string;
  /** One sentence for the timeline. */
  text: string;
}

const shownValue = (v: string) => {
  const json = JSON.stringify(v);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
};

/**
 * The sender to hand on, or the refusal, for the CRM's sender_name. A name no SMS can carry is left out (the
 * provider's chain then gives the sender: senders.by_country, senders.default, the provider's own `from`) and
 * noted, unless sms.refuse_unusable_sender asks for today's refusal. Pure.
 */
export function decideSender(
  name: string | null | undefined,
  refuse: boolean,
): { ok: true; sender: string | null; note?: IntakeNote } | { ok: false; error: string } {
  const trimmed = name?.trim() ?? '';
  // Absent or "" asks for no sender; spaces only ask for one that no SMS can carry, which is read otherwise and noted.
  const blank = trimmed === '' && typeof name === 'string' && name !== '';
  if (isUsableSender(trimmed) && !blank) return { ok: true, sender: trimmed || null };
  const value = blank ? name : trimmed;
  if (refuse) return { ok: false, error: `sender_name: ${USABLE_SENDER_RULE} (got ${shownValue(value)})` };
  return {
    ok: true,
    sender: null,
    note: {
      field: 'sender_name',
      value,
      text: `sender_name ${shownValue(value)} ${blank ? 'is blank' : 'cannot be carried by SMS'}: sent under the next sender of the chain`,
    },
  };
}

/** The encoding asked for, or the refusal: an unknown one is read as auto and noted unless sms.refuse_unknown_encoding. Pure. */
export function decideEncoding(
  value: string | null | undefined,
  refuse: boolean,
): { ok: true; requested: RequestedEncoding; note?: IntakeNote } | { ok: false; error: string } {
  // null is how many serialisers write an absent optional field; the schema accepts it, so it means auto too. "" is a
  // value sent, none of the four: read as auto and noted like any other (parseRequestedEncoding).
  const requested = parseRequestedEncoding(value ?? undefined);
  if (requested) return { ok: true, requested };
  if (refuse) return { ok: false, error: `encoding: ${JSON.stringify(value)} is not one of auto, gsm7, usc2, ucs2` };
  const shown = String(value);
  return {
    ok: true,
    requested: 'auto',
    note: { field: 'encoding', value: shown, text: `encoding ${shownValue(shown)} is not one of auto, gsm7, usc2, ucs2: read as auto` },
  };
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
  const encoding = decideEncoding(m.encoding, sms.refuse_unknown_encoding);
  if (!encoding.ok) return encoding;
  const sender = decideSender(m.sender_name, sms.refuse_unusable_sender);
  if (!sender.ok) return sender;
  const route = router.resolve(m.provider_name);
  if (!route.ok) return route;
  // Read without the player's record here (no I/O in this step): sms.default_region decides, until a record does.
  const recipient = decideRecipient(m.recipient, { defaultRegion: sms.default_region });
  if (recipient.outcome === 'invalid') return { ok: false, error: recipient.error };
  const plan = planEncoding(m.content, encoding.requested, { smartEncoding: sms.smart_encoding, maxSegments: sms.max_segments });
  if (!plan.ok) return plan;

  // Ids as text with every digit the CRM sent: a 64-bit id parsed to a double may read as its neighbour (identifierText).
  const texts = source?.numberTexts;
  const { id, user_id, brand_id } = m.activity;
  const userId = user_id === undefined || user_id === '' ? null : identifierText(user_id, texts?.user_id);
  return {
    ok: true,
    message: {
      activityKey: identifierText(id, texts?.id),
      // The activity exactly as it arrived (keys, JSON types and every digit), for the conversion webhook.
      activityJson: source?.json ?? JSON.stringify((input as { activity: unknown }).activity),
      // The player the suppression check looks up (suppression.ts); "" names nobody.
      userId,
      provider: route.provider,
      ...readingFields(recipient),
      recipientAsSent: userId === null ? undefined : m.recipient,
      sender: sender.sender,
      text: plan.plan.text,
      encoding: plan.plan.encoding,
      segments: plan.plan.segments,
      notes: [encoding.note, sender.note].filter((n) => n !== undefined),
      brand: brand_id === undefined ? null : identifierText(brand_id, texts?.brand_id),
      providerName: (m.provider_name?.trim() || sms.default_provider)?.toLowerCase() ?? null,
    },
  };
}

/** The id to echo in a batch answer: activity.id with the JSON type and text it arrived with, or null when absent. */
export function echoedActivityId(input: unknown, source?: ActivitySource): string | number | RawJson | null {
  const activity = (input as { activity?: { id?: unknown } } | null)?.activity;
  const id = activity && typeof activity === 'object' ? activity.id : undefined;
  const idText = source?.numberTexts.id;
  if (typeof id === 'number' && idText !== undefined) return new RawJson(idText);
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** A batch entry refused before dispatch (not an object, a field the schema refuses, too deep, a key given twice). */
export type Invalid = { outcome: 'invalid'; error: string };

/** A batch body prepared: the messages to dispatch, where each one's answer goes, and the ids to echo. */
export interface PreparedBatch {
  /** One per entry: the refusal of an invalid entry now, a dispatched one's answer once the route fills it in. */
  results: Array<DispatchResult | Invalid>;
  valid: PreparedMessage[];
  /** validIndex[k]: the entry that valid[k] came from. */
  validIndex: number[];
  /** activity.id of each entry as received (echoedActivityId). */
  ids: Array<string | number | RawJson | null>;
  /** The body holds numbers a double cannot keep exactly: the answer needs stringifyExact. */
  exact: boolean;
}

/**
 * Prepares each entry of a batch body. What it returns holds none of the body's text or parsed entries, so they are
 * garbage once this returns: while the batch is dispatched only the prepared messages stay. (The peak under 40
 * batches of 500 in flight moved within noise: bench/README.md "Memory, third round".)
 */
export function prepareBatch(
  entries: unknown[],
  text: string,
  refusedEntries: ReadonlyMap<number, string> | undefined,
  router: ProviderRouter,
  sms: Config['sms'],
): PreparedBatch {
  const sources = activitySources(text);
  const results: PreparedBatch['results'] = new Array(entries.length);
  const valid: PreparedMessage[] = [];
  const validIndex: number[] = [];
  const ids: PreparedBatch['ids'] = new Array(entries.length);
  for (const [i, entry] of entries.entries()) {
    ids[i] = echoedActivityId(entry, sources?.[i]);
    const refused = refusedEntries?.get(i);
    if (refused !== undefined) {
      results[i] = { outcome: 'invalid', error: refused };
      continue;
    }
    const prepared = prepareMessage(entry, router, sms, sources?.[i]);
    if (prepared.ok) {
      valid.push(prepared.message);
      validIndex.push(i);
    } else results[i] = { outcome: 'invalid', error: prepared.error };
  }
  return { results, valid, validIndex, ids, exact: sources !== undefined };
}
