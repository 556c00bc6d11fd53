/**
 * The outboxes put together from configuration, once, for both `serve` (their loops, woken by `wake(kind)`) and the
 * cron `flush` (each kind drained until nothing is due): conversions to crm.webhook_url (src/delivery/), CRM events
 * to crm.integration (src/events/), credits to operator.credits.url with the sql backend (src/operator/). Each kind's
 * rules live in its area; here are the receivers' clients, which kinds run, their metrics and their stop steps.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { conversionOutbox } from './delivery/conversion-outbox.js';
import { createWebhookClient, type WebhookClient } from './delivery/webhook.js';
import { createEventTransport } from './events/create-transport.js';
import { createDestinations } from './events/destination.js';
import { eventOutbox } from './events/event-outbox.js';
import { registerEventMetrics } from './events/metrics.js';
import type { EventTransport } from './events/transport.js';
import type { Shutdown } from './kit/shutdown.js';
import { countOutboxBacklog } from './ledger/conversions.js';
import { countCreditBacklog } from './ledger/credit-delivery.js';
import { countEventBacklog } from './ledger/events.js';
import type { Database } from './ledger/schema.js';
import type { GatewayMetrics } from './observability/metrics.js';
import type { Tracing } from './observability/tracing.js';
import { creditOutbox } from './operator/credit-outbox.js';
import { registerCreditMetrics } from './operator/credit-metrics.js';
import type { DeadReason } from './outbox/decisions.js';
import type { OutboxLoop } from './outbox/loop.js';
import { drainOutbox, startOutbox, type Drained, type OutboxDeps, type OutboxKind } from './outbox/outbox.js';
import type { OutboxKindName, Wake } from './outbox/wake.js';

export interface OutboxesDeps {
  db: Kysely<Database>;
  logger: Logger;
  now: () => number;
  /** Each posted conversion a span under its message's send span when on (docs/tracing.md). */
  tracing: Tracing;
}

/** What serve counts on /metrics about the kinds; flush counts nothing. */
interface Observers {
  metrics?: GatewayMetrics;
  eventsSent?: (count: number, latenciesSeconds: number[]) => void;
  eventsDead?: (count: number, reason: DeadReason) => void;
  eventsNotRouted?: () => void;
  creditsDelivered?: (count: number) => void;
  creditsDead?: (count: number) => void;
}

/** What is left of a kind after a flush: rows still owed, dead rows, and the kind's own counts (`not_routed`). */
export interface Backlog {
  left: number;
  dead: number;
  counts?: Record<string, number>;
}

/** One kind whose receiver is configured: its loop, its drain, and what is left of it (flush's summary line). */
export interface ConfiguredOutbox {
  name: OutboxKindName;
  start(): OutboxLoop;
  drain(): Promise<Drained>;
  backlog(): Promise<Backlog>;
}

function configured<Row extends { id: number }>(
  name: OutboxKindName,
  kind: OutboxKind<Row>,
  deps: OutboxDeps,
  backlog: () => Promise<Backlog>,
): ConfiguredOutbox {
  return { name, start: () => startOutbox(kind, deps), drain: () => drainOutbox(kind, deps), backlog };
}

/** The kinds whose receivers are given, in the order flush reports them: conversions, events, credits. */
function configuredOutboxes(
  config: Readonly<Config>,
  deps: OutboxesDeps,
  receivers: { webhook?: WebhookClient | undefined; transport?: EventTransport | undefined; creditsUrl?: string | undefined },
  observers: Observers,
): ConfiguredOutbox[] {
  const { db } = deps;
  const { webhook, transport, creditsUrl } = receivers;
  const kinds: ConfiguredOutbox[] = [];
  if (webhook?.url) {
    const kind = conversionOutbox({ ...deps, webhook, delivery: config.delivery, metrics: observers.metrics });
    kinds.push(
      configured('conversions', kind, deps, async () => (({ due, retrying, dead }) => ({ left: due + retrying, dead }))(await countOutboxBacklog(db))),
    );
  }
  if (transport) {
    const destinations = createDestinations(config.crm.integration);
    const kind = eventOutbox({
      ...deps,
      transport,
      destinations,
      relay: config.relay,
      onSent: observers.eventsSent,
      onDead: observers.eventsDead,
      onNotRouted: observers.eventsNotRouted,
    });
    kinds.push(
      configured('events', kind, deps, async () =>
        (({ unsent, notRouted, dead }) => ({ left: unsent, dead, counts: { not_routed: notRouted } }))(await countEventBacklog(db)),
      ),
    );
  }
  if (creditsUrl) {
    const credits = { ...config.operator.credits, url: creditsUrl };
    const kind = creditOutbox({ ...deps, credits, onDelivered: observers.creditsDelivered, onDead: observers.creditsDead });
    kinds.push(configured('credits', kind, deps, async () => (({ due, dead }) => ({ left: due, dead }))(await countCreditBacklog(db))));
  }
  return kinds;
}

/** operator.credits.url, where credits are pushed: only the sql backend commits credits of its own. */
const creditsUrlOf = (config: Readonly<Config>) => (config.operator.backend === 'sql' ? config.operator.credits.url : undefined);

export interface RunningOutboxes {
  wake: Wake;
  /** Whether this process runs a kind's loop ('gateway listening' says whether it posts conversions). */
  running(kind: OutboxKindName): boolean;
}

/**
 * `serve`'s outboxes: a kind's loop runs when its receiver is configured and, for conversions and events, its switch
 * (delivery.worker, relay.worker) is on. Their stop steps: each loop in turn (an event round past a quarter of the
 * shutdown budget has its sends cut off, retried later), then the receivers' clients.
 */
export function startOutboxes(
  config: Readonly<Config>,
  deps: OutboxesDeps & { readDb: Kysely<Database>; metrics: GatewayMetrics },
  shutdown: Shutdown,
): RunningOutboxes {
  const { logger, metrics } = deps;
  const webhook = createWebhookClient(config.crm);
  if (config.delivery.worker && !webhook.url) logger.warn('crm.webhook_url is not set: conversions wait in the outbox');
  // Real-time events to the CRM (docs/relay.md): delivered like conversions; claims keep instances apart.
  const transport = config.relay.worker ? createEventTransport(config.crm.integration, deps.tracing) : undefined;
  const destinations = createDestinations(config.crm.integration);
  const untyped = [...destinations.byStoredKind.values()].filter((r) => r.channel === 'integration' && !r.queueTypeKnown).map((r) => r.kind);
  if (transport && destinations.queue && untyped.length > 0) {
    logger.warn(
      { kinds: untyped },
      'no queue type name is documented for these events: set crm.integration.events.<kind>.type, or they are dead-lettered (docs/events.md)',
    );
  }
  if (config.relay.worker && !transport && config.relay.api_keys.length > 0) {
    logger.warn('crm.integration has no url (or rabbitmq, kafka): relayed events wait in the outbox');
  }
  // Scrape-time reads on the read connection, so a scrape never waits behind a write (src/ledger/engine/db.ts).
  const eventMetrics = registerEventMetrics(metrics.registry, () => countEventBacklog(deps.readDb), deps.now);
  const creditMetrics = registerCreditMetrics(metrics.registry, () => countCreditBacklog(deps.readDb));
  const kinds = configuredOutboxes(
    config,
    deps,
    { webhook: config.delivery.worker ? webhook : undefined, transport, creditsUrl: creditsUrlOf(config) },
    {
      metrics,
      eventsSent: eventMetrics.eventsSent,
      eventsDead: eventMetrics.eventsDead,
      eventsNotRouted: eventMetrics.eventsNotRouted,
      creditsDelivered: creditMetrics.delivered,
      creditsDead: creditMetrics.dead,
    },
  );
  const loops = new Map(kinds.map((k) => [k.name, k.start()]));

  shutdown.add('outboxes', 'stopping the conversion outbox', () => loops.get('conversions')?.stop());
  shutdown.add('outboxes', 'stopping the credit outbox', () => loops.get('credits')?.stop());
  shutdown.add('outboxes', 'stopping the event outbox', async () => {
    // A round waits for its sends; past a quarter of the shutdown budget they are cut off (and retried later).
    const cutOff = setTimeout(() => transport?.abort(), shutdown.budgetMs / 4);
    await loops.get('events')?.stop();
    clearTimeout(cutOff);
    await transport?.close();
  });
  shutdown.add('outboxes', 'closing the webhook client', () => webhook.close());
  return { wake: (kind) => loops.get(kind)?.wake(), running: (kind) => loops.has(kind) };
}

export interface FlushableOutboxes {
  /** Whether any receiver is configured: flush refuses to run for nothing, before it opens the ledger. */
  any: boolean;
  kinds(deps: OutboxesDeps): ConfiguredOutbox[];
  /** Ends the receivers' clients. */
  close(): Promise<void>;
}

/** The cron `flush`'s outboxes: every kind whose receiver is configured, whatever the serve-time switches. */
export function flushableOutboxes(config: Readonly<Config>, tracing: Tracing): FlushableOutboxes {
  const webhook = createWebhookClient(config.crm);
  const transport = createEventTransport(config.crm.integration, tracing);
  const receivers = { webhook, transport, creditsUrl: creditsUrlOf(config) };
  return {
    any: Boolean(webhook.url || transport || receivers.creditsUrl),
    kinds: (deps) => configuredOutboxes(config, deps, receivers, {}),
    async close() {
      await transport?.close();
      await webhook.close();
    },
  };
}
