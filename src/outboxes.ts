/**
 * The registry of outbox kinds: one descriptor per kind (src/outbox/descriptor.ts), each written in the area that owns
 * its flow, in the order flush reports them. `serve` (startOutboxes, src/gateway.ts), the cron `flush`
 * (flushableOutboxes, src/commands/flush.ts), `/admin`, the console and `/metrics` iterate over this list, as
 * providers/index.ts serves the plugins: a new kind is its descriptor and one line here.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from './config/schema.js';
import { conversions } from './delivery/conversions.js';
import { crmEvents } from './events/crm-events.js';
import { createOutboundClient } from './http/outbound.js';
import type { Shutdown } from './kit/shutdown.js';
import type { Database } from './ledger/schema.js';
import type { Tracing } from './observability/tracing.js';
import { credits } from './operator/credits/credits.js';
import { priceFetches } from './costs/price-fetches-outbox.js';
import { heldSends } from './sms/held-sends-outbox.js';
import type { Backlog, OutboxDescriptor, Receiver } from './outbox/descriptor.js';
import { drainOutbox, startOutbox, type Drained } from './outbox/outbox.js';
import type { OutboxKindName, Wake } from './outbox/wake.js';

export const OUTBOXES: readonly OutboxDescriptor[] = [conversions, crmEvents, credits, heldSends, priceFetches];

export interface OutboxesDeps {
  db: Kysely<Database>;
  logger: Logger;
  now: () => number;
  /** Each row's sending a span linked to what caused it, when on (docs/tracing.md). */
  tracing: Tracing;
}

/** The wake of a registry: a kind that is not in it is a mistake in code, not a kind whose loop does not run here. */
function wakeOf(outboxes: readonly OutboxDescriptor[], loops: ReadonlyMap<string, { wake(): void }>): Wake {
  const names = new Set(outboxes.map((d) => d.name));
  return (kind) => {
    if (!names.has(kind)) throw new Error(`no outbox kind is named ${kind} (src/outboxes.ts)`);
    loops.get(kind)?.wake();
  };
}

export interface RunningOutboxes {
  wake: Wake;
  /** Whether this process runs a kind's loop ('gateway listening' says whether it posts conversions). */
  running(kind: OutboxKindName): boolean;
  /**
   * The receiver's client of a kind whose loop runs here, for a part built later that it stands in for (the held
   * sends' port, which the dispatcher binds: src/sms/held-sends.ts).
   */
  client<R>(descriptor: OutboxDescriptor<R>): R | undefined;
}

/**
 * `serve`'s outboxes: every kind's /metrics series, and a loop for each kind whose receiver is configured (and whose
 * switch, delivery.worker or relay.worker, is on). The stop steps, beside each start: the loop (its sends cut off at a
 * quarter of the shutdown budget when its receiver can abort them, and retried later), then its receiver.
 */
export function startOutboxes(
  config: Readonly<Config>,
  deps: OutboxesDeps & { readDb: Kysely<Database>; registry: Registry },
  shutdown: Shutdown,
  outboxes: readonly OutboxDescriptor[] = OUTBOXES,
): RunningOutboxes {
  const loops = new Map<string, { wake(): void }>();
  // The receivers' one HTTP client; its stop step comes after every loop's (below).
  const http = createOutboundClient();
  const clients = new Map<string, unknown>();
  const context = { purpose: 'serve' as const, logger: deps.logger, tracing: deps.tracing, http };
  for (const descriptor of outboxes) {
    // Scrape-time reads on the read connection, so a scrape never waits behind a write (src/ledger/engine/db.ts).
    const metrics = descriptor.metrics(deps.registry, { readDb: deps.readDb, now: deps.now });
    const receiver = descriptor.receiver(config, context);
    if (!receiver) continue;
    const kind = descriptor.outbox(config, receiver.client, { ...deps, metrics });
    const loop = startOutbox(kind, deps);
    loops.set(descriptor.name, loop);
    clients.set(descriptor.name, receiver.client);
    shutdown.add('outboxes', `stopping the ${kind.name}`, async () => {
      const cutOff = receiver.abort && setTimeout(() => receiver.abort?.(), shutdown.budgetMs / 4);
      await loop.stop();
      clearTimeout(cutOff);
    });
    shutdown.add('outboxes', `closing the ${kind.name}'s receiver`, () => receiver.close?.());
  }
  shutdown.add('outboxes', "closing the receivers' HTTP client", () => http.close());
  return {
    wake: wakeOf(outboxes, loops),
    running: (kind) => loops.has(kind),
    client: <R>(descriptor: OutboxDescriptor<R>) => clients.get(descriptor.name) as R | undefined,
  };
}

/** One kind whose receiver is configured, for flush: its summary line, its drain, and what is left of it. */
export interface FlushableOutbox {
  name: OutboxKindName;
  line: OutboxDescriptor['flushLine'];
  /** The counts the kind's line adds, from what it does before draining (descriptor.beforeFlush). */
  beforeFlush(): Promise<Record<string, number>>;
  drain(): Promise<Drained>;
  backlog(): Promise<Backlog>;
}

export interface FlushableOutboxes {
  /** Whether any receiver is configured: flush refuses to run for nothing, before it opens the ledger. */
  any: boolean;
  kinds(deps: OutboxesDeps): FlushableOutbox[];
  /** Ends the receivers' clients. */
  close(): Promise<void>;
}

/** The cron `flush`'s outboxes: every kind whose receiver is configured, whatever the serve-time switches. */
export function flushableOutboxes(
  config: Readonly<Config>,
  context: { logger: Logger; tracing: Tracing },
  outboxes: readonly OutboxDescriptor[] = OUTBOXES,
): FlushableOutboxes {
  const http = createOutboundClient();
  const configured = outboxes.flatMap((descriptor) => {
    const receiver: Receiver<unknown> | undefined = descriptor.receiver(config, { purpose: 'flush', ...context, http });
    return receiver ? [{ descriptor, receiver }] : [];
  });
  return {
    any: configured.length > 0,
    kinds: (deps) =>
      configured.map(({ descriptor, receiver }) => {
        const kind = descriptor.outbox(config, receiver.client, deps);
        return {
          name: descriptor.name,
          line: descriptor.flushLine,
          beforeFlush: async () => (descriptor.beforeFlush ? descriptor.beforeFlush(config, deps.db, deps.now()) : {}),
          drain: () => drainOutbox(kind, deps),
          backlog: () => descriptor.backlog(deps.db),
        };
      }),
    async close() {
      for (const { receiver } of configured.reverse()) await receiver.close?.();
      await http.close();
    },
  };
}
