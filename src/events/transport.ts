/**
 * How an event leaves the gateway: over the CRM's Integration API (http-transport.ts) or to a RabbitMQ connector
 * (rabbitmq-transport.ts). A transport never throws: it answers whether the CRM has the event.
 */
import type { ClaimedEvent } from '../ledger/events.js';

export type SendOutcome = { ok: true; status: number | null } | { ok: false; status: number | null; error: string };

export interface EventTransport {
  /** Where events go, for logs: the Integration API base or the broker's host. */
  readonly target: string;
  send(event: ClaimedEvent): Promise<SendOutcome>;
  /** Ends sends in flight at once (they fail and are retried later): a stopping gateway does not wait for a slow CRM. */
  abort(): void;
  close(): Promise<void>;
}

/**
 * The CRM's rule is "if the Integration API does not answer 200, keep retrying until it does" (docs/crm-interface.md §7),
 * so 200 alone marks an event sent; any other answer, 2xx included, is retried.
 */
export function isDelivered(status: number): boolean {
  return status === 200;
}
