/**
 * How an event leaves the gateway: over the CRM's Integration API (http-transport.ts), to a RabbitMQ connector
 * (rabbitmq-transport.ts) or a Kafka connector (kafka-transport.ts). A transport never throws: it answers whether
 * the CRM has the event, and if not, what it answered (an OutboxOutcome, src/outbox/outcome.ts, as every receiver's).
 * Whether to try again is decided here, once, for all of them.
 */
import type { ClaimedEvent } from '../ledger/events.js';
import type { OutboxOutcome } from '../outbox/outcome.js';
import type { EventChannel } from '../crm/event-catalogue.js';

/** What the event outbox hands a transport: the stored event with its destination as configured now. */
export interface OutgoingEvent extends ClaimedEvent {
  /** Kafka topic configured for this kind, if any. */
  topic?: string | undefined;
  /** `push_webhook`: the push conversion webhook, always over HTTP (src/crm/event-catalogue.ts). */
  channel: EventChannel;
}

export interface EventTransport {
  /** Where events go, for logs: the Integration API base or the broker's host. */
  readonly target: string;
  send(event: OutgoingEvent): Promise<OutboxOutcome>;
  /** Ends sends in flight at once (they fail and are retried later): a stopping gateway does not wait for a slow CRM. */
  abort(): void;
  close(): Promise<void>;
}

/**
 * Any 2xx means the CRM has the event. Its docs only name 200, but a 202 or 204 (from the CRM or a proxy in front
 * of it) is still a taken request; treating it as a failure sent the same event again for ever (docs/events.md).
 */
export function isDelivered(status: number): boolean {
  return status >= 200 && status < 300;
}

/** Statuses that mean "not now" rather than "never": timeout, too early, too many requests. */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 425, 429]);

/**
 * What to do with an event the CRM did not take. A 4xx other than 408, 425 and 429 says the payload itself will
 * never be taken: sending it again cannot help, and retrying it for ever is how one bad event used to hold back a
 * player's whole stream. It is dead-lettered at once (kept, shown, replayable), unless relay.retry_client_errors
 * asks for the docs' "retry until 200". No answer, 5xx and anything else are retried.
 */
export function decideFailure(outcome: { status: number | null; permanent?: boolean | undefined }, retryClientErrors: boolean): 'retry' | 'dead' {
  if (outcome.permanent) return 'dead';
  const { status } = outcome;
  if (status === null || status >= 500 || status < 400 || RETRYABLE_CLIENT_STATUSES.has(status)) return 'retry';
  return retryClientErrors ? 'retry' : 'dead';
}

/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP date. Answers milliseconds from `now`, or undefined
 * when absent or not readable (then the backoff alone decides).
 */
export function parseRetryAfter(value: string | undefined | null, now: number): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[A-Za-z]/.test(text)) return undefined;
  return Math.max(0, at - now);
}
