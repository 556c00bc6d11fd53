/**
 * The contract between the gateway and an SMS provider plugin (docs/design.md §2, §4).
 *
 * A plugin is one file exporting a `ProviderPlugin`: a zod schema for its `providers.<name>` config block and a
 * factory. The gateway wraps every provider once, outside it, with timing, rate limits and the ledger; a plugin
 * only speaks its provider's wire protocol and classifies what comes back.
 */
import { z } from 'zod';
import type { Logger } from 'pino';

/** Statuses the CRM understands, plus `intermediate` (store, never report). */
export type DeliveryStatus = 'delivered' | 'undelivered' | 'failed' | 'delivery_unknown';
export type MappedStatus = DeliveryStatus | 'intermediate';

export interface SendRequest {
  /** Our id. Put it into whatever the provider echoes back (callback URL, client reference) so receipts match. */
  smsId: string;
  /** Recipient in E.164 with the leading `+`. */
  to: string;
  /** The recipient's ISO 3166 country as the gateway read the number (src/sms/recipient-reading.ts), when known. */
  country?: string;
  /** Sender from the CRM's `sender_name`; the plugin falls back to its configured default. */
  from: string | undefined;
  text: string;
  encoding: 'gsm7' | 'ucs2';
  segments: number;
  /** Where the provider must send receipts for this message: `{public_url}/dlr/{name}?sms_id=…`. */
  callbackUrl: string;
  /**
   * Epoch ms: the latest moment this message may still wait for provider capacity (rate_per_second,
   * max_concurrency). Past it the throttle answers transient instead of waiting. Absent: wait until `signal` aborts.
   */
  deadline?: number;
  /**
   * Aborts a wait for provider capacity, never the provider call itself (which `signal` bounds): the gateway is
   * stopping, and a message not yet handed over is better answered transient now than cut off mid-send later.
   */
  waitSignal?: AbortSignal;
  /**
   * False: answer transient at once when the provider's rate or concurrency limit is full, instead of waiting up
   * to `deadline` (a route's member that is not the last, so the message can move on to the next one in time).
   */
  waitForCapacity?: boolean;
  /**
   * Epoch ms after which the message is no use to its recipient (a route's or rule's `validity`, docs/routing.md):
   * a plugin whose provider takes a validity passes what is left of it, within the provider's own bounds, so the
   * provider stops trying then. Absent: the plugin's configured validity, else the provider's default.
   */
  validUntil?: number;
}

/**
 * `permanent`: this message will never succeed as it is (single 400, batch `failed`).
 * `transient`: a retry may succeed (single 5xx, batch `fatal`); the ledger lets a retry of the same id send again.
 * `ambiguous` (transient only): the provider may have accepted the message anyway (an HTTP 5xx, or no answer after
 * the request went out). A retry of the same id then first waits `sms.ambiguous_retry_after` for a receipt proving
 * acceptance, instead of sending a second SMS at once.
 */
/**
 * A price the provider reported for a whole message (all its parts), in micro-units of `currency` (src/kit/money.ts):
 * what the gateway records instead of its estimate (docs/costs.md). Plugins read it from the provider's own fields.
 */
export interface ReportedPrice {
  micros: bigint;
  currency: string;
}

export type SendResult =
  | {
      ok: true;
      providerMessageIds: string[];
      providerStatus?: string;
      carrier?: string;
      price?: ReportedPrice;
      /** What the account has left after this send, where the answer says (Vonage's `remaining-balance`). */
      balance?: ReportedPrice;
    }
  | {
      ok: false;
      kind: 'permanent' | 'transient';
      error: string;
      code?: string;
      ambiguous?: boolean;
      /** The provider refuses because the recipient opted out with it (Twilio 21610): the gateway opts the player out. */
      recipientOptedOut?: boolean;
      carrier?: string;
    };
// `carrier` is set by a route (src/provider-wrappers/failover-route.ts) only: the member that carried the message, or that last
// held it when the send failed there; the ledger records it as the message's provider, so receipts match at
// /dlr/{carrier}. Plugins leave it unset.

/** A failed send, its error prefixed with the plugin type; `ambiguous` only counts for a transient failure. */
export function sendFailure(type: string, kind: 'permanent' | 'transient', error: string, code: string, ambiguous = false): SendResult {
  return { ok: false, kind, error: `${type}: ${error}`, code, ...(kind === 'transient' && ambiguous ? { ambiguous } : {}) };
}

/** The answer for a message that was not handed to its provider because the gateway is stopping (never sent). */
/**
 * The longest message id any provider hands us, and so the longest a receipt or inbound SMS may name: Twilio's SIDs
 * are 34 characters and Vonage's message ids 36; ours are shorter still (src/ledger/ids.ts).
 */
export const MAX_PROVIDER_ID_LENGTH = 128;

export const NOT_SENT_SHUTTING_DOWN: Extract<SendResult, { ok: false }> = {
  ok: false,
  kind: 'transient',
  error: 'not sent: the gateway is shutting down; retry',
  code: 'shutting_down',
};

/** A receipt request as the plugin sees it: raw enough to verify signatures over exactly what was received. */
export interface IncomingReceipt {
  method: string;
  /** The public URL the provider called (built from `server.public_url`, never from the Host header). */
  publicUrl: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  contentType: string;
  rawBody: Buffer;
}

export interface ReceiptEvent {
  /** Our sms_id when the provider echoed it back (the reliable way to match). */
  smsId?: string;
  /** The provider's id for the message or, for multipart sends, for one part. */
  providerMessageId?: string;
  providerStatus: string;
  status: MappedStatus;
  errorCode?: string;
  /**
   * True when the provider reports each SMS part of a concatenated message on its own (Vonage SMS API, SMPP): the
   * delivery module then rolls the parts up into one status with aggregatePartStatuses (src/delivery/parts.ts).
   */
  perPart?: boolean;
  /**
   * The price the receipt reports. With perPart, the price of that one part: the gateway takes it only for a message of
   * one part (a multipart message keeps the price of its send answer, or its estimate).
   */
  price?: ReportedPrice;
}

/** `rejected` receipts fail verification: the route answers 403 and records nothing. */
export type ReceiptParse = { ok: true; events: ReceiptEvent[] } | { ok: false; reason: string };

/** An inbound SMS (a player's reply): numbers in E.164 with `+`. */
export interface InboundSms {
  /** The provider's id of the inbound message: a provider retry carries the same one. */
  providerMessageId: string;
  from: string;
  to: string;
  text: string;
}

/**
 * `ok` with `message: null`: authentic, but nothing to keep (e.g. a Vonage inbound with no text). Not ok: the
 * route answers 403 and stores nothing, as for receipts.
 */
export type InboundParse = { ok: true; message: InboundSms | null } | { ok: false; reason: string };

/**
 * A question to the provider about one of our sends: "do you have it, and what is its status?". Asked when the
 * answer to a send was lost (its process died mid-call) and when a sent message stays silent too long.
 */
export interface LookupRequest {
  smsId: string;
  /** Recipient in E.164 with `+`. */
  to: string;
  /** Epoch ms: the provider created it (if at all) between these two moments. */
  sentAfter: number;
  sentBefore: number;
  /** The provider's id when the send's answer was recorded (a status query); absent when it was lost. */
  providerMessageId?: string;
  /** The text, when the ledger kept it (ledger.store_content): a plugin matching by content may use it. */
  text?: string;
  /**
   * The provider's ids of our other messages to the same number in the window: a plugin that matches by number and
   * time must not take one of those for this one.
   */
  otherProviderIds: readonly string[];
}

/**
 * `found`: the provider has it, with its id(s) and current status. `absent`: the provider says it never got it, so
 * sending it again cannot double it. `unknown`: the provider cannot tell now (its API failed, or several of its
 * messages could be this one); nothing is concluded.
 */
export type LookupResult =
  | { answer: 'found'; providerMessageIds: string[]; providerStatus: string; status: MappedStatus; errorCode?: string }
  | { answer: 'absent' }
  | { answer: 'unknown'; reason: string };

/**
 * The provider's price of one of our messages, asked after its final status (Twilio fills it in later, and reports it
 * in no callback): `priced`; `not_yet` (the provider has no price for it yet: ask again later); `failed` (the ask
 * failed: ask again later, up to costs.twilio_price_fetch.max_attempts).
 */
export type PriceFetch = { answer: 'priced'; price: ReportedPrice } | { answer: 'not_yet' } | { answer: 'failed'; reason: string };

export interface SmsProvider {
  readonly name: string;
  readonly type: string;
  send(request: SendRequest, signal: AbortSignal): Promise<SendResult>;
  parseReceipt(receipt: IncomingReceipt): ReceiptParse | Promise<ReceiptParse>;
  /** Verifies and reads the provider's inbound-SMS webhook (`/mo/{name}`); absent when the plugin takes none. */
  parseInbound?(request: IncomingReceipt): InboundParse;
  /**
   * Asks the provider whether it has one of our sends and its status (LookupRequest). Absent when the provider's
   * API cannot tell (the gateway then keeps such a send `uncertain`: it never concludes either way). Never throws.
   */
  lookup?(request: LookupRequest, signal: AbortSignal): Promise<LookupResult>;
  /** Asks the provider what one message (by its provider message id) cost (PriceFetch). Absent: none to ask. Never throws. */
  fetchPrice?(providerMessageId: string, signal: AbortSignal): Promise<PriceFetch>;
  /**
   * True when the provider's receipts for a message name the `sms_id` the plugin was handed (SendRequest.smsId): in
   * the receipt URL it gave the provider, or in a reference the provider echoes. The ledger then finds their messages
   * by the sms_id alone and keeps no entry for them in its index of providers' message ids, one random write less a
   * send (docs/ledger.md). A receipt that lacks it finds only messages sent before migration 2026-11-29-90 (still in
   * that index), else it is parked. Absent (SMPP): receipts are found by the provider's message id.
   */
  readonly receiptsNameSmsId?: boolean;
  /**
   * The largest body the provider really sends to `/dlr/{name}` (receipts) and `/mo/{name}` (players' messages), in
   * bytes: a larger one cannot be the provider's and is answered 413 before it is read or verified, so a forged
   * callback never makes the plugin hash more than this (docs/public-doors.md). Absent: server.callback_body_limit.
   */
  readonly callbackBodyLimit?: { dlr: number; mo: number };
  /** The body the provider expects in answer to an inbound webhook (Twilio: TwiML); JSON `{received}` otherwise. */
  readonly inboundAnswer?: { contentType: string; body: string };
  close?(): Promise<void>;
}

export interface ProviderDeps {
  logger: Logger;
  now: () => number;
  /**
   * Random bytes shared by this process (and the workers of its cluster), for a plugin that needs a key when none
   * is configured (the sandbox's receipt signatures). Another instance has other bytes.
   */
  processSecret?: Buffer;
  /**
   * For a plugin that receives receipts over its own connection instead of `/dlr/{name}` (SMPP's deliver_sm):
   * hands its events to the same intake as the route (matched by sms_id or provider message id, parked until
   * their message is known, parts rolled up, status moved forward only) and resolves once they are committed,
   * so the plugin acknowledges only what is stored. The plugin must have authenticated where they came from.
   * Absent in processes that take in nothing (tools, benchmarks of the plugin alone): such a plugin refuses them.
   * `maxParked`: the most of this provider's receipts left parked (matching no message yet); past it the oldest are
   * set aside and counted (sms_gateway_parked_receipts_dropped_total), checked once per tenth of it parked.
   */
  deliverReceipts?: (events: ReceiptEvent[], limits?: { maxParked?: number }) => Promise<void>;
  /**
   * For a plugin that receives players' messages over its own connection (SMPP deliver_sm without a receipt flag):
   * hands the message to the same inbound handling as `/mo/{name}` (kept once, STOP/START keywords applied) and
   * resolves once committed. Absent where nothing is taken in: such a plugin refuses the message, so it is offered again.
   */
  deliverInbound?: (message: InboundSms) => Promise<void>;
}

/**
 * `senders`: the sender per recipient country (ISO 3166 alpha-2), and a default for when the CRM sends no
 * sender_name. Applied outside the plugin by src/provider-wrappers/sender-rules.ts, which documents which sender wins when.
 */
export const sendersConfig = z.strictObject({
  default: z.string().min(1).optional().describe("The sender when neither a country rule nor the CRM's sender_name gives one."),
  by_country: z
    .record(z.string().regex(/^[A-Z]{2}$/, 'country codes are two capital letters (ISO 3166), e.g. GB'), z.string().min(1))
    .default({})
    .describe('The sender per recipient country (ISO 3166 alpha-2), e.g. `{US: "+15550100", GB: "Brand"}`.'),
});

/** Keys every provider block accepts besides its own. */
export const providerCommonConfig = {
  aliases: z.array(z.string().min(1)).default([]).describe('Other provider_name values that pick this provider (any case).'),
  base_url: z.url().optional().describe("Overrides the provider's API host (tests, proxies, regions)."),
  rate_per_second: z
    .number()
    .positive()
    .optional()
    .describe(
      'SMS parts per second sent through this provider, shared by single and batch traffic and split among live instances. Over it a batch entry waits until sms.batch_deadline or sms.send_timeout (then `fatal`), a single send until sms.single_wait (then 503).',
    ),
  max_concurrency: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Sends in flight at once through this provider, split among live instances like rate_per_second.'),
  senders: sendersConfig.optional().describe('The sender per recipient country, and a default ("Senders per country" below).'),
};

export interface ProviderPlugin<Schema extends z.ZodType = z.ZodType> {
  type: string;
  configSchema: Schema;
  create(name: string, config: z.infer<Schema>, deps: ProviderDeps): SmsProvider;
}
