/**
 * Prometheus metrics (prom-client), with one Registry per gateway: tests run several gateways in one process,
 * and the global default registry would mix their counts. Names follow the Prometheus conventions (`_total`
 * counters, `_seconds` histograms, base units). Each part receives the narrow interface it reports through, as an
 * optional dependency, and calls it once per event; the parked-receipt gauge is read from the ledger at scrape time
 * with an index-only query. Each outbox kind registers its own series on the same registry (src/outbox/descriptor.ts).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DeliveryStatus, MappedStatus } from '../../providers/types.js';
import type { SendOutcome, SuppressionReason } from '../ledger/schema.js';

export interface SendMetrics {
  /** One provider call (or a message given up at the deadline) and what became of it. */
  sendCompleted(provider: string, outcome: SendOutcome, segments: number, seconds: number): void;
  /** A message refused before any provider call because of its player's standing (src/consents/suppression.ts). */
  sendSuppressed(reason: SuppressionReason): void;
  /** A field of an SMS read otherwise than sent so the message is not lost (src/sms/prepare.ts): sender_name, encoding. */
  intakeFallback(field: 'sender_name' | 'encoding'): void;
  /** A recipient read otherwise than as written, or refused for its reading (src/sms/recipient-reading.ts). */
  recipientRead(reading: RecipientReadingLabel): void;
}

/** sms_gateway_recipient_readings_total's one label: a national reading and what decided it, or the refusal's code. */
export type RecipientReadingLabel = 'national_by_record' | 'national_by_default_region' | 'recipient_ambiguous' | 'recipient_country_mismatch';
const RECIPIENT_READINGS: RecipientReadingLabel[] = ['national_by_record', 'national_by_default_region', 'recipient_ambiguous', 'recipient_country_mismatch'];

export interface ReceiptMetrics {
  receiptStored(provider: string, status: MappedStatus): void;
  receiptDuplicate(provider: string): void;
  receiptParked(provider: string): void;
  /** A receipt dropped because its message already has delivery.max_receipts_per_message. */
  receiptCapped(provider: string): void;
  /** Parked receipts set aside by the sweep after delivery.parked_receipt_ttl. */
  receiptsExpired(provider: string, count: number): void;
  /** Parked receipts set aside, oldest first, because their provider's bound on parked receipts was full. */
  parkedReceiptsDropped(provider: string, count: number): void;
  /** A terminal status from a receipt; `secondsSinceDispatch` from the ledger's dispatched_at. */
  deliveryReported(provider: string, status: DeliveryStatus, secondsSinceDispatch: number): void;
  deliveryTimedOut(provider: string): void;
  /**
   * A provider asked about one of our sends (src/delivery/lookups.ts): `lost_send` whether it has one whose answer
   * was lost, `status` the status of a silent one; `cannot_tell` when its API has no lookup.
   */
  lookupAnswered(provider: string, purpose: 'lost_send' | 'status', answer: 'found' | 'absent' | 'unknown' | 'cannot_tell'): void;
}

/** What retention (src/delivery/retention.ts) removed: rows deleted, or rows whose personal data was blanked. */
export interface RetentionMetrics {
  retentionRows(table: RetentionTable, action: 'deleted' | 'blanked', count: number): void;
}

export type RetentionTable = 'messages' | 'receipts' | 'crm_events' | 'inbound_messages' | 'costs';

export interface HttpMetrics {
  /** `limited`: refused by the failed-authentication limiter (src/auth/failure-limit.ts) with a 429 or a 503. */
  /**
   * `limited`: refused by the failed-authentication limiter; `sessionRefused`: a 401 about a player's session at
   * POST /authenticate, not about the caller's credential (src/auth/failure-limit.ts), so not a refusal of credentials.
   */
  httpRequest(method: string, route: string, status: number, seconds: number, limited?: boolean, sessionRefused?: boolean): void;
}

/** Ledger reads behind the scrape-time gauges. */
export interface LedgerGaugeSources {
  countParkedReceipts(): Promise<Array<{ provider: string; parked: number }>>;
  /** PostgreSQL partitioned by day: where each table's day tables end (epoch ms); undefined on any other ledger. */
  dayTablesEnd?(): Promise<Record<string, number> | undefined>;
}

export const FAST_CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Receipts come back in a second from a sandbox and in hours from a phone that was off. */
const DELIVERY_BUCKETS = [0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400, 259200];
const SEND_OUTCOMES: SendOutcome[] = ['submitted', 'rejected', 'retryable', 'uncertain'];
const SUPPRESSION_REASONS: SuppressionReason[] = ['blocked', 'excluded', 'opted_out', 'no_consent'];
const DELIVERY_STATUSES: DeliveryStatus[] = ['delivered', 'undelivered', 'failed', 'delivery_unknown'];

export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** What `sms_gateway_build_info` says: the package's version and the Node.js version running it. */
export interface BuildInfo {
  version: string;
  node: string;
}

export function createGatewayMetrics(providers: readonly string[], ledger: LedgerGaugeSources, build?: BuildInfo) {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  // The usual info-metric shape: always 1, the facts in labels, so a dashboard can join on it or show a rollout.
  if (build) {
    new Gauge({
      name: 'sms_gateway_build_info',
      help: 'Always 1; the gateway version and the Node.js version in labels',
      labelNames: ['version', 'node'],
      registers,
    }).set({ version: build.version, node: build.node }, 1);
  }

  const httpRequests = new Counter({
    name: 'sms_gateway_http_requests_total',
    help: 'HTTP requests answered, by route pattern and status class',
    labelNames: ['method', 'route', 'status_class'],
    registers,
  });
  const authRefusals = new Counter({
    name: 'sms_gateway_http_auth_refusals_total',
    help: 'Requests refused for their credentials (401), their standing (403), or by the failed-authentication limiter (429, 503 on the single send), by route pattern and status',
    labelNames: ['route', 'status'],
    registers,
  });
  const httpDuration = new Histogram({
    name: 'sms_gateway_http_request_duration_seconds',
    help: 'Time to answer an HTTP request',
    labelNames: ['method', 'route'],
    buckets: HTTP_BUCKETS,
    registers,
  });
  const messagesSent = new Counter({
    name: 'sms_gateway_messages_sent_total',
    help: 'Messages handed to a provider, by outcome (submitted, rejected = permanent, retryable = transient and not sent, uncertain = transient and maybe sent)',
    labelNames: ['provider', 'outcome'],
    registers,
  });
  const segmentsSent = new Counter({
    name: 'sms_gateway_segments_sent_total',
    help: 'SMS segments of the messages handed to a provider, by outcome',
    labelNames: ['provider', 'outcome'],
    registers,
  });
  const providerDuration = new Histogram({
    name: 'sms_gateway_provider_send_duration_seconds',
    help: 'Provider send call latency',
    labelNames: ['provider', 'outcome'],
    buckets: FAST_CALL_BUCKETS,
    registers,
  });
  const receipts = new Counter({
    name: 'sms_gateway_receipts_total',
    help: 'Delivery receipts stored (duplicates excluded), by mapped status',
    labelNames: ['provider', 'status'],
    registers,
  });
  const receiptDuplicates = new Counter({
    name: 'sms_gateway_receipts_duplicate_total',
    help: 'Delivery receipts received again and ignored',
    labelNames: ['provider'],
    registers,
  });
  const receiptsParked = new Counter({
    name: 'sms_gateway_receipts_parked_total',
    help: 'Receipts that matched no message when they arrived and were parked',
    labelNames: ['provider'],
    registers,
  });
  const parkedDropped = new Counter({
    name: 'sms_gateway_parked_receipts_dropped_total',
    help: 'Parked receipts set aside (oldest first) because their provider held its max_parked_receipts already',
    labelNames: ['provider'],
    registers,
  });
  const receiptsCapped = new Counter({
    name: 'sms_gateway_receipts_capped_total',
    help: 'Receipts dropped because their message already had delivery.max_receipts_per_message',
    labelNames: ['provider'],
    registers,
  });
  const retentionRows = new Counter({
    name: 'sms_gateway_retention_rows_total',
    help: 'Rows the retention pass deleted, or whose text and numbers it blanked, by table',
    labelNames: ['table', 'action'],
    registers,
  });
  for (const table of ['messages', 'receipts', 'crm_events', 'inbound_messages'] as const) retentionRows.inc({ table, action: 'deleted' }, 0);
  for (const table of ['messages', 'inbound_messages'] as const) retentionRows.inc({ table, action: 'blanked' }, 0);
  const receiptsExpired = new Counter({
    name: 'sms_gateway_receipts_expired_total',
    help: 'Parked receipts set aside after delivery.parked_receipt_ttl without a message',
    labelNames: ['provider'],
    registers,
  });
  const deliveryStatuses = new Counter({
    name: 'sms_gateway_delivery_statuses_total',
    help: 'Terminal statuses queued for the CRM, by source (receipt or timeout)',
    labelNames: ['provider', 'status', 'source'],
    registers,
  });
  const deliveryDuration = new Histogram({
    name: 'sms_gateway_delivery_duration_seconds',
    help: 'Time from handing a message to the provider to its terminal receipt',
    labelNames: ['provider', 'status'],
    buckets: DELIVERY_BUCKETS,
    registers,
  });
  const lookups = new Counter({
    name: 'sms_gateway_provider_lookups_total',
    help: 'Providers asked about our sends: lost_send (did it get one whose answer was lost) or status (of a silent one), by answer (found, absent, unknown, cannot_tell = no lookup in its API: the send stays uncertain)',
    labelNames: ['provider', 'purpose', 'answer'],
    registers,
  });
  const suppressed = new Counter({
    name: 'sms_gateway_sends_suppressed_total',
    help: "Messages refused before any provider call because of the player's standing (sms.suppression), by reason",
    labelNames: ['reason'],
    registers,
  });
  for (const reason of SUPPRESSION_REASONS) suppressed.inc({ reason }, 0);
  const intakeFallbacks = new Counter({
    name: 'sms_gateway_sms_fallbacks_total',
    help: 'SMS taken with a field read otherwise than sent, so the message is not lost: a sender_name no SMS can carry (sent under the next sender of the chain), an unknown encoding (read as auto)',
    labelNames: ['field'],
    registers,
  });
  for (const field of ['sender_name', 'encoding']) intakeFallbacks.inc({ field }, 0);
  const recipientReadings = new Counter({
    name: 'sms_gateway_recipient_readings_total',
    help: 'Digits-only recipients read as a national number (by the player\'s record or sms.default_region) rather than after "+", and recipients refused for their reading (recipient_ambiguous, recipient_country_mismatch)',
    labelNames: ['reading'],
    registers,
  });
  for (const reading of RECIPIENT_READINGS) recipientReadings.inc({ reading }, 0);
  new Gauge({
    name: 'sms_gateway_receipts_parked',
    help: 'Receipts waiting for their message to become known',
    labelNames: ['provider'],
    registers,
    async collect() {
      const parked = await ledger.countParkedReceipts();
      this.reset();
      for (const provider of providers) this.set({ provider }, 0);
      for (const row of parked) this.set({ provider: row.provider }, row.parked);
    },
  });

  new Gauge({
    name: 'sms_gateway_day_tables_ahead_seconds',
    help: 'PostgreSQL laid out by day (crm-sms-gateway partition): how far past now each table has its day tables; a send into a day without one fails (no series on other ledgers)',
    labelNames: ['table'],
    registers,
    async collect() {
      const ends = await ledger.dayTablesEnd?.();
      this.reset();
      for (const [table, end] of Object.entries(ends ?? {})) this.set({ table }, (end - Date.now()) / 1000);
    },
  });

  // Series that exist from the start, so rate() and absent-series alerts work before the first event.
  for (const provider of providers) {
    for (const outcome of SEND_OUTCOMES) {
      messagesSent.inc({ provider, outcome }, 0);
      segmentsSent.inc({ provider, outcome }, 0);
    }
    for (const status of DELIVERY_STATUSES) deliveryStatuses.inc({ provider, status, source: 'receipt' }, 0);
    receiptsParked.inc({ provider }, 0);
    receiptsExpired.inc({ provider }, 0);
    parkedDropped.inc({ provider }, 0);
    receiptsCapped.inc({ provider }, 0);
  }

  return {
    registry,
    httpRequest(method: string, route: string, status: number, seconds: number, limited = false, sessionRefused = false) {
      httpRequests.inc({ method, route, status_class: statusClass(status) });
      if (((status === 401 || status === 403) && !sessionRefused) || limited) authRefusals.inc({ route, status: String(status) });
      httpDuration.observe({ method, route }, seconds);
    },
    sendCompleted(provider: string, outcome: SendOutcome, segments: number, seconds: number) {
      messagesSent.inc({ provider, outcome });
      segmentsSent.inc({ provider, outcome }, segments);
      providerDuration.observe({ provider, outcome }, seconds);
    },
    sendSuppressed: (reason: SuppressionReason) => suppressed.inc({ reason }),
    intakeFallback: (field: 'sender_name' | 'encoding') => intakeFallbacks.inc({ field }),
    recipientRead: (reading: RecipientReadingLabel) => recipientReadings.inc({ reading }),
    receiptStored: (provider: string, status: MappedStatus) => receipts.inc({ provider, status }),
    receiptDuplicate: (provider: string) => receiptDuplicates.inc({ provider }),
    receiptParked: (provider: string) => receiptsParked.inc({ provider }),
    receiptCapped: (provider: string) => receiptsCapped.inc({ provider }),
    retentionRows: (table: RetentionTable, action: 'deleted' | 'blanked', count: number) => retentionRows.inc({ table, action }, count),
    receiptsExpired: (provider: string, count: number) => receiptsExpired.inc({ provider }, count),
    parkedReceiptsDropped: (provider: string, count: number) => parkedDropped.inc({ provider }, count),
    deliveryReported(provider: string, status: DeliveryStatus, secondsSinceDispatch: number) {
      deliveryStatuses.inc({ provider, status, source: 'receipt' });
      deliveryDuration.observe({ provider, status }, Math.max(0, secondsSinceDispatch));
    },
    deliveryTimedOut: (provider: string) => deliveryStatuses.inc({ provider, status: 'delivery_unknown', source: 'timeout' }),
    lookupAnswered: (provider: string, purpose: 'lost_send' | 'status', answer: 'found' | 'absent' | 'unknown' | 'cannot_tell') =>
      lookups.inc({ provider, purpose, answer }),
  } satisfies SendMetrics & ReceiptMetrics & HttpMetrics & RetentionMetrics & { registry: Registry };
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
