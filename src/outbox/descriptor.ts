/**
 * An outbox kind as one unit: everything the gateway does with the rows one receiver is owed, exported by the area
 * that owns the flow (conversions: src/delivery/conversions.ts, CRM events: src/events/crm-events.ts, credits:
 * src/operator/credits/credits.ts, held sends: src/sms/held-sends-outbox.ts, price fetches:
 * src/costs/price-fetches-outbox.ts) and listed once in src/outboxes.ts. `serve` (src/gateway.ts), the cron `flush`
 * (src/commands/flush.ts), `/admin`, the console and `/metrics` iterate over that list, as providers/index.ts serves
 * the plugins: adding a kind is a descriptor in its area and one line of the list.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.js';
import type { OutboundClient } from '../http/outbound.js';
import type { MountableRoute } from '../http/route-table.js';
import type { Database } from '../ledger/schema.js';
import type { Tracing } from '../observability/tracing.js';
import type { DeadListDeps, DeadListSpec } from './dead-list.js';
import type { OutboxDeps, OutboxKind } from './outbox.js';
import type { OutboxPanel } from './panel.js';
import type { Wake } from './wake.js';

/** What is left of a kind after a flush: rows still owed, dead rows, and the kind's own counts (`not_routed`). */
export interface Backlog {
  left: number;
  dead: number;
  counts?: Record<string, number>;
}

/** The kind's line in flush's summary: its prefix, the word for rows taken, and what could not be reached. */
export interface FlushLine {
  prefix: string;
  sent: string;
  unreachable: string;
}

/**
 * Where the kind's rows go: a pool of the one HTTP client, a broker's transport, or a provider. Built once per process,
 * before the ledger opens for flush; its release is a stop step of the outboxes' stage, after its loop's.
 */
export interface Receiver<R> {
  client: R;
  /** Ends sends in flight at once (a stopping gateway does not wait for a slow receiver past a quarter of its budget). */
  abort?(): void;
  close?(): Promise<void>;
}

export interface ReceiverContext {
  /**
   * `serve`: the kind's serve-time switch applies (delivery.worker, relay.worker) and its start-up warnings are
   * logged; `flush`: every kind whose receiver is configured.
   */
  purpose: 'serve' | 'flush';
  logger: Logger;
  tracing: Tracing;
  /** The receivers' one HTTP client (src/http/outbound.ts), made and closed by the registry's wiring: ask it for a pool. */
  http: OutboundClient;
}

/** What a kind's outbox is built with: the outbox's own deps, the tracing, and serve's metrics (absent in flush). */
export interface KindDeps<M> extends OutboxDeps {
  tracing: Tracing;
  metrics?: M | undefined;
}

/** What a kind's /admin routes read and write with. */
export interface KindAdminDeps {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  now: () => number;
  wake: Wake;
}

/** `R`: the receiver's client; `M`: what the kind's outbox reports its /metrics through. */
export interface OutboxDescriptor<R = any, M = any> {
  /** The kind's one name: `wake(name)`, the registry's key ("conversions"). */
  name: string;
  flushLine: FlushLine;
  /** The receiver configured for this kind, or undefined: its rows then wait (and this process runs no loop for it). */
  receiver(config: Readonly<Config>, context: ReceiverContext): Receiver<R> | undefined;
  /** The kind's round (src/outbox/outbox.ts) over its receiver. */
  outbox(config: Readonly<Config>, receiver: R, deps: KindDeps<M>): OutboxKind<any>;
  /** What flush reports as left. */
  backlog(db: Kysely<Database>): Promise<Backlog>;
  /** What flush does before draining the kind, and the counts its line adds (the conversions' sweep: `unknown_marked`). */
  beforeFlush?(config: Readonly<Config>, db: Kysely<Database>, now: number): Promise<Record<string, number>>;
  /**
   * The kind's /metrics series on serve's registry, registered once whether or not its loop runs here (its backlog is
   * read at scrape time on the read connection); what its outbox reports through.
   */
  metrics(registry: Registry, sources: { readDb: Kysely<Database>; now: () => number }): M;
  /** Its panel on the console's dashboard, or undefined when this configuration does not show it. */
  panel(config: Readonly<Config>): OutboxPanel | undefined;
  /** Its dead list and replay in the console. */
  deadList(deps: DeadListDeps): DeadListSpec<any, any>;
  /** Its /admin routes (the dead list and replay), behind the one guard of src/auth/admin.ts. */
  adminRoutes(deps: KindAdminDeps): MountableRoute[];
}
