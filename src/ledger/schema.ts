/** Row types of the ledger (docs/design.md §5). Times are epoch milliseconds. */
import type { Generated } from 'kysely';
import type { DeliveryStatus } from '../../providers/types.js';

/**
 * Send state of a message, separate from its delivery status:
 * `dispatching` row committed, provider call under way (or its process died: see sms.dispatch_lease);
 * `submitted` provider accepted it; `rejected` permanent failure, the same answer is repeated to retries;
 * `retryable` transient failure that sent nothing, a retry of the same activity.id sends again;
 * `uncertain` transient failure that may have sent it (SendResult.ambiguous): a receipt makes it `submitted`, and a
 * retry sends again only after sms.ambiguous_retry_after without one.
 */
/**
 * What became of one message's send, in the one vocabulary the send path uses from the provider plugin's answer to
 * the ledger's row and the metrics (src/sms/outcome.ts derives it; only src/sms/routes.ts speaks the CRM's words):
 * `submitted` the provider took it; `rejected` never sendable as it is; `retryable` not sent, free to send again;
 * `uncertain` maybe sent (no answer, or an ambiguous one): sent again only after a wait for a receipt.
 */
export type SendOutcome = 'submitted' | 'rejected' | 'retryable' | 'uncertain';
/**
 * `dispatching`: claimed and being handed to the provider; `held`: accepted inside its quiet hours, owed to the
 * provider by the held sends outbox (src/sms/held-sends.ts) once its window opens; then the send's outcome.
 */
export type SendState = 'dispatching' | 'held' | SendOutcome;

export interface MessagesTable {
  sms_id: string;
  /** String form of activity.id: the idempotency key. */
  activity_key: string;
  /** activity exactly as received, echoed unchanged in conversions. */
  activity_json: string;
  /** activity.user_id as text (null when the CRM sent none): the console searches by player. */
  user_id: string | null;
  /** X-Request-Id of the request that first sent it (the log lines about it carry the same id). */
  request_id: string | null;
  provider: string;
  provider_message_id: string | null;
  recipient: string;
  sender: string | null;
  encoding: 'gsm7' | 'ucs2';
  segments: number;
  content: string | null;
  state: SendState;
  error: string | null;
  error_code: string | null;
  attempts: number;
  /** Last raw provider status seen (from the send or a receipt). */
  provider_status: string | null;
  /** Terminal status reported to the CRM; null while none is known. */
  delivery_status: DeliveryStatus | null;
  /** `timeout` marks a delivery_unknown from the sweep, which a later real receipt may replace. */
  delivery_source: 'receipt' | 'timeout' | null;
  created_at: number;
  updated_at: number;
  dispatched_at: number;
  submitted_at: number | null;
  completed_at: number | null;
  /**
   * The provider's answer when asked whether it has a send left uncertain by a lost process (src/delivery/lookups.ts):
   * `pending` until asked, then `found`, `absent` or `unknown` (it cannot tell); null for every other message.
   */
  lookup_result: LookupResultState | null;
  /** When the provider was asked for the status of this silent message (delivery.status_query_after). */
  status_queried_at: number | null;
  /**
   * W3C traceparent of the message's send span when tracing was on (docs/tracing.md): its receipt and conversion,
   * which arrive in other requests, are traced as children of it. Null otherwise.
   */
  traceparent: string | null;
  /**
   * What the gateway read otherwise than the CRM sent it, so that the message was not lost (src/sms/prepare.ts): a
   * sender_name no SMS can carry, an unknown encoding. One sentence per field; null for most messages.
   */
  intake_note: string | null;
  /** The recipient's ISO 3166 country as read (src/sms/recipient-reading.ts); null when no country holds the number. */
  country: string | null;
  /**
   * What the message cost, in micro-units of `cost_currency` (src/kit/money.ts; docs/costs.md): `estimate` from the
   * rate table, or `reported` by its provider (which replaces an estimate). Null while not counted: not yet claimed
   * to send, sent nothing, or no rate and no price known (then cost_source is `none`).
   */
  cost_micros: number | string | null;
  cost_currency: string | null;
  cost_source: CostSource | null;
  /** The route whose rules chose the members (src/provider-wrappers/route-rules.ts); null when sent to a provider directly. */
  route: string | null;
  /** The rule's 1-based position in the route's `rules`, 0 for the route's own members (the catch-all). */
  route_rule: number | null;
  /** The rule's name, when it has one. */
  route_rule_name: string | null;
  /** When its quiet hours end and the held sends outbox releases it (src/sms/quiet-hours.ts); null unless it was held. */
  held_until: number | null;
  /**
   * 1 when its provider's receipts name its sms_id (SmsProvider.receiptsNameSmsId), so they find it by its id; 0 when
   * they may carry only the provider's message id, and the message has an entry in messages_provider_id_only.
   */
  receipts_name_sms_id: number;
}

/** An admin change to routing in force (src/ledger/routing-controls.ts): its target, as a key, and its value as JSON. */
export interface RoutingControlsTable {
  target: string;
  value: string;
  /** Who set it: `admin-key:<hash>` or `console:<session>`. */
  set_by: string;
  set_at: number;
}

export interface RoutingControlAuditTable {
  id: Generated<number>;
  at: number;
  actor: string;
  target: string;
  /** The value in force before, as JSON; null when none was. */
  from_value: string | null;
  /** The value after; null when the change cleared it. */
  to_value: string | null;
}

/** Where a message's cost came from: its provider's report, the rate table, or neither (counted with no amount). */
export type CostSource = 'reported' | 'estimate' | 'none';

export type LookupResultState = 'pending' | 'found' | 'absent' | 'unknown';

/** Every part id of a multipart send, for providers that report per part (Vonage SMS API). */
export interface MessagePartsTable {
  provider: string;
  provider_message_id: string;
  sms_id: string;
  part_index: number;
  status: string | null;
}

export interface ReceiptsTable {
  id: Generated<number>;
  provider: string;
  /** Identical receipts (provider retries) share this key and are stored once. */
  dedup_key: string;
  sms_id: string | null;
  provider_message_id: string | null;
  provider_status: string;
  mapped_status: string;
  error_code: string | null;
  /**
   * 0 while parked (no message known yet: matched again by later sends and by the sweep), 1 once applied to its
   * message, 2 when set aside after delivery.parked_receipt_ttl without a message (kept for the record).
   */
  matched: number;
  received_at: number;
  /** 1 when the receipt reports one part of a concatenated message (ReceiptEvent.perPart), else 0. */
  per_part: Generated<number>;
  /** A parked receipt's reported price (micro-units of price_currency), applied when its message is found; else null. */
  price_micros: number | string | null;
  price_currency: string | null;
}

export interface ConversionsTable {
  id: Generated<number>;
  sms_id: string;
  delivery_status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  /** A worker or flush that claimed the row owns it until this time. */
  claimed_until: number;
  claim_token: string | null;
  posted_at: number | null;
  last_error: string | null;
  dead: number;
  created_at: number;
  /**
   * The claim that first took the row into a post: a later claim posts the rows of one group together again, so a
   * post repeated after a crash carries the same conversions, and so the same Idempotency-Key (src/delivery/webhook.ts).
   */
  post_group: string | null;
}

export interface ConversionAttemptsTable {
  id: Generated<number>;
  conversion_id: number;
  attempted_at: number;
  ok: number;
  http_status: number | null;
  error: string | null;
}

/** Player data of the sql operator backend (src/operator/api/sql-backend.ts). Flags are 0/1 on both dialects. */
export interface OperatorUsersTable {
  user_id: string;
  /** The user record exactly as GET /userdetails answers it. */
  record_json: string;
  is_blocked: number;
  is_excluded: number;
  block_note: string;
  exclusion_note: string;
  updated_at: number;
  /** mobile_prefix + mobile in E.164 (src/operator/players/player-phone.ts), to match inbound SMS senders; null if unknown. */
  mobile_e164: string | null;
}

export interface OperatorConsentsTable {
  user_id: string;
  /** One of the six consent types of docs/crm-interface.md §1 (email, sms, telephone, postMail, …). */
  type: string;
  opted_in: number;
  updated_at: number;
  /** Who made the last change: null the operator's data or the CRM, `sms` a STOP/START keyword, `provider` a provider's opt-out error. */
  source: ConsentSource | null;
  /** UK product-level consents: a JSON array of product names the channel is opted in for; null for no split. */
  products: string | null;
}

export type ConsentSource = 'sms' | 'provider';

/** Inbound SMS received at /mo/{provider} (src/consents/routes.ts). */
export interface InboundMessagesTable {
  id: Generated<number>;
  provider: string;
  provider_message_id: string;
  /** The sender's number in E.164, as the provider reported it. */
  from_number: string;
  to_number: string;
  /** The text, only with ledger.store_content. */
  content: string | null;
  /** What the text asked for: `opt_out`, `opt_in`, or null for anything else. */
  action: 'opt_out' | 'opt_in' | null;
  /** JSON array of the user_ids whose mobile matched the sender. */
  matched_user_ids: string;
  received_at: number;
}

export interface OperatorBonusesTable {
  value: string;
  text: string;
  position: number;
}

/**
 * `pending` a credit is being forwarded to the operator platform (http backend); `done` credited, repeats answer
 * `answer_json`; `failed` not credited, a repeat tries again.
 */
export type CreditState = 'pending' | 'done' | 'failed';

export interface OperatorCreditsTable {
  id: Generated<number>;
  dedup_key: string | null;
  kind: 'bonus' | 'funds';
  user_id: string;
  bonus_code: string;
  amount: number | null;
  currency: string | null;
  request_json: string;
  crm_id: string | null;
  crm_action_id: string | null;
  crm_action_group_id: string | null;
  crm_action_communication_profile_id: string | null;
  crm_activity_id: string | null;
  crm_trigger_hash: string | null;
  crm_player_origin_id: string | null;
  state: CreditState;
  http_status: number | null;
  answer_json: string | null;
  created_at: number;
  updated_at: number;
  /** Push to operator.credits.url (sql backend): null not meant for it, then due, delivered or dead. */
  delivery: 'due' | 'delivered' | 'dead' | null;
  delivery_attempts: Generated<number>;
  next_delivery_at: number | null;
  delivery_claimed_until: Generated<number>;
  delivery_claim_token: string | null;
  delivered_at: number | null;
  delivery_error: string | null;
}

/**
 * Counters per time bucket, provider and outcome: a send outcome (the message's state after the provider
 * answered) or a terminal delivery status. `n` only grows, except that a real receipt replacing a timeout's
 * delivery_unknown takes that one back from the bucket where it was counted.
 */
/** Why a message was not sent to its player (src/consents/suppression.ts). */
export type SuppressionReason = 'blocked' | 'excluded' | 'opted_out' | 'no_consent';
/** Suppressed sends are counted beside the send outcomes, one outcome per reason. */
export type SuppressedOutcome = `suppressed_${SuppressionReason}`;

export interface DeliveryStatsTable {
  period: 'minute' | 'hour';
  bucket_start: number;
  provider: string;
  /** Send outcomes (an uncertain one counts as retryable) and delivery statuses. */
  outcome: Exclude<SendState, 'dispatching' | 'held' | 'uncertain'> | DeliveryStatus | SuppressedOutcome;
  n: number;
}

/** A console session signed out before its cookie expired (src/console/session.ts): refused from then on. */
export interface ConsoleSessionsRevokedTable {
  /** The session's random nonce, as in its cookie. */
  nonce: string;
  /** When the cookie would have expired; the row is useless after it. */
  expires_at: number;
}

/**
 * One real-time event owed to the CRM (docs/crm-interface.md §7). `id` orders acceptance: one user_id's events go out in
 * that order. `source` is `relay` (received on /relay/…) or `gateway` (caused by the gateway's own data change).
 * Unsent while sent_at is null and dead is 0; `dead` rows stopped after relay.max_attempts and wait for a replay.
 */
export interface CrmEventsTable {
  id: Generated<number>;
  event_id: string;
  /** The CRM's queue type (USER_CONSENTS_V2, BONUS, …): the RabbitMQ `type` property. */
  type: string;
  method: 'POST' | 'PUT';
  /** The Integration API path, e.g. /v2/integration/user/consents. */
  path: string;
  user_id: string;
  /** The body exactly as it is sent. */
  payload_json: string;
  source: 'relay' | 'gateway';
  /** Set for events that may be sent only once: a player's bonus status change other than Ongoing (bonusOnceKey). */
  dedup_key: string | null;
  /**
   * With dedup_key: SHA-256 of the body as received, canonical (src/events/body-fingerprint.ts), to tell a retry
   * from another body under the same key; null for other events and for those accepted before it was kept.
   */
  body_fingerprint: string | null;
  attempts: number;
  next_attempt_at: number;
  claimed_until: number;
  claim_token: string | null;
  sent_at: number | null;
  http_status: number | null;
  last_error: string | null;
  dead: number;
  created_at: number;
  /** The message whose send caused the event (a provider's opt-out error), else null. */
  sms_id: string | null;
  /** W3C traceparent of the request (or send) that queued it when tracing was on; sent with the event. */
  traceparent: string | null;
  /**
   * Whether the event is its player's oldest owed (1) or waits behind one (0); null until the relay decided it
   * (src/ledger/events.ts), and for good for one claimed as soon as it came and sent. Only an owed row's value means
   * anything.
   */
  head: number | null;
}

/** One gateway process on this database (docs/shared-limits.md): alive while its heartbeat is recent. */
export interface GatewayInstancesTable {
  instance_id: string;
  heartbeat_at: number;
  started_at: number;
}

/**
 * Every (player, number) some message went to (migration 2026-11-24-81-search-keys): the search by player. On SQLite
 * the pairs of the days not over yet are in message_user_recipients_recent.
 */
export interface MessageUserRecipientsTable {
  user_id: string;
  recipient: string;
}

/**
 * SQLite only: the (player, number) pairs of the days not moved into message_user_recipients yet, by the hour
 * (migration 2026-12-01-20-recent-player-numbers): a send records its pair here, in the current hour's part, and the
 * serving process moves each day's into message_user_recipients once the day is over (src/ledger/number-messages.ts).
 */
export interface RecentMessageUserRecipientsTable {
  /** created_at / 3600000 of the message that recorded it */
  hour: number;
  user_id: string;
  recipient: string;
}

/**
 * PostgreSQL, partitioned by day only (`crm-sms-gateway partition`, src/ledger/engine/partitions.ts): each activity's message, so an activity is stored once
 * (messages, partitioned by day, can hold no unique key on activity_key) and is found by its key without reading every
 * day's table.
 */
export interface MessageKeysTable {
  activity_key: string;
  sms_id: string;
}

/**
 * Each message's number by its UTC day (migration 2026-11-29-95-recipient-messages): the search by number and by
 * player. On SQLite a table whose rows are written with their message into recipient_messages_recent, moved here once
 * their day is over, and deleted a day at a time by retention, so one
 * whose message is gone or whose number was blanked or changed may remain until its day goes: readers join the message
 * and check its number. On PostgreSQL a view over messages and messages_recipient_time.
 */
export interface RecipientMessagesTable {
  /** created_at / 86400000 */
  day: number;
  recipient: string;
  created_at: number;
  sms_id: string;
}

/**
 * SQLite only: the numbers' entries of the days not moved into recipient_messages yet, by the hour (migration
 * 2026-12-01-10-recent-number-entries): a send writes its entry here, into the current hour's part of the tree, and
 * the serving process moves each day's into recipient_messages once the day is over (src/ledger/number-messages.ts).
 */
export interface RecentRecipientMessagesTable {
  /** created_at / 3600000 */
  hour: number;
  recipient: string;
  created_at: number;
  sms_id: string;
}

/**
 * Spend per UTC day and dimension (docs/costs.md), kept in the transactions that change a message's cost or delivery.
 * '' stands for none in a dimension; amounts in micro-units (PostgreSQL's driver reads BIGINT as text).
 */
export interface CostDailyTable {
  day: number;
  provider: string;
  country: string;
  brand_id: string;
  activity_id: string;
  action_group_id: string;
  currency: string;
  messages: number | string;
  segments: number | string;
  delivered: number | string;
  cost_micros: number | string;
  /** The part of cost_micros its providers reported (the rest is estimated). */
  reported_micros: number | string;
}

/** What one budget's period has spent so far, in micro-units of its currency (src/costs/budgets.ts). */
export interface BudgetSpendTable {
  budget: string;
  period_start: number;
  currency: string;
  spent_micros: number | string;
}

/** A message whose price is still to be asked of its provider (the price fetches outbox, src/costs/price-fetch.ts). */
export interface PriceFetchesTable {
  sms_id: string;
  provider: string;
  provider_message_id: string;
  attempts: Generated<number>;
  next_attempt_at: number;
  claimed_until: Generated<number>;
  /** 0 while owed (or dead: next_attempt_at PRICE_FETCH_DEAD, src/ledger/price-fetches.ts), 1 once the price is recorded. */
  done: Generated<number>;
  last_error: string | null;
}

/** A held message owed to its provider (the held sends outbox, src/sms/held-sends.ts). */
export interface HeldSendsTable {
  id: Generated<number>;
  sms_id: string;
  /** The quiet_hours window that held it. */
  quiet_window: string;
  /** The text to send; blanked once the row is done. */
  content: string | null;
  release_at: number;
  /** Never sent after this (quiet_hours.max_wait): the message ends `failed`. */
  expires_at: number;
  attempts: number;
  next_attempt_at: number;
  claimed_until: number;
  claim_token: string | null;
  last_error: string | null;
  dead: number;
  /** When it was handed to the send path, or expired. */
  done_at: number | null;
  created_at: number;
}

export interface Database {
  cost_daily: CostDailyTable;
  budget_spend: BudgetSpendTable;
  price_fetches: PriceFetchesTable;
  held_sends: HeldSendsTable;
  gateway_instances: GatewayInstancesTable;
  messages: MessagesTable;
  message_user_recipients: MessageUserRecipientsTable;
  message_user_recipients_recent: RecentMessageUserRecipientsTable;
  recipient_messages: RecipientMessagesTable;
  recipient_messages_recent: RecentRecipientMessagesTable;
  message_keys: MessageKeysTable;
  message_parts: MessagePartsTable;
  receipts: ReceiptsTable;
  conversions: ConversionsTable;
  conversion_attempts: ConversionAttemptsTable;
  operator_users: OperatorUsersTable;
  operator_consents: OperatorConsentsTable;
  operator_bonuses: OperatorBonusesTable;
  operator_credits: OperatorCreditsTable;
  delivery_stats: DeliveryStatsTable;
  console_sessions_revoked: ConsoleSessionsRevokedTable;
  crm_events: CrmEventsTable;
  inbound_messages: InboundMessagesTable;
  routing_controls: RoutingControlsTable;
  routing_control_audit: RoutingControlAuditTable;
}
