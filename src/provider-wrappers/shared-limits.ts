/**
 * Provider limits that hold for every gateway instance on one database together (docs/shared-limits.md).
 *
 * Each process records a heartbeat in the ledger every server.instance_heartbeat and counts the instances whose
 * heartbeat is younger than server.instance_expiry; each provider's throttle (src/provider-wrappers/throttle.ts) then applies
 * rate_per_second / live and max_concurrency / live (rounded down, at least one). Nothing is asked of the database
 * per message: the count is re-read on the timer, and the throttles read the last one.
 *
 * While the instance count changes (one starts, or one dies and its heartbeat has not yet expired) the instances may
 * together be off their limit for up to an expiry: over it by a newcomer's share until the others' next heartbeat, under it by
 * a dead one's share until its heartbeat expires.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { Config } from '../config/schema.js';
import { countLiveInstances, deleteSilentInstances, recordInstanceHeartbeat, removeInstance } from '../ledger/instances.js';
import type { Database } from '../ledger/schema.js';

/** A provider's rate_per_second for one of `instances` instances. */
export function rateShare(ratePerSecond: number, instances: number): number {
  return ratePerSecond / Math.max(1, instances);
}

/**
 * A provider's max_concurrency for one of `instances` instances: rounded down so the instances' sum stays within it,
 * but at least one, so each instance can still send (more instances than slots then exceed it: the docs say so).
 */
export function concurrencyShare(maxConcurrency: number, instances: number): number {
  return Math.max(1, Math.floor(maxConcurrency / Math.max(1, instances)));
}

/** Whether any provider has a rate or concurrency limit to share (a route has none of its own). */
export function hasProviderLimits(config: Readonly<Config>): boolean {
  return Object.values(config.providers).some((p) => p.type !== 'route' && (p.rate_per_second !== undefined || p.max_concurrency !== undefined));
}

/** `sms_gateway_instances`: the live instances this one counts, i.e. how many ways the provider limits are split. */
export function registerInstanceMetric(registry: Registry, instances: () => number): void {
  new Gauge({
    name: 'sms_gateway_instances',
    help: 'Live gateway instances on the database that split each provider rate_per_second and max_concurrency',
    registers: [registry],
    collect() {
      this.set(instances());
    },
  });
}

/** Rows silent for this many expiries are deleted by the next heartbeat of any instance. */
const FORGET_AFTER_EXPIRIES = 60;

export interface InstanceHeartbeatOptions {
  db: Kysely<Database>;
  now: () => number;
  intervalMs: number;
  expiryMs: number;
  logger: Logger;
}

export interface InstanceHeartbeat {
  /** The live instances sharing the limits, this one included (at least 1). */
  instances(): number;
  /** Stops beating and removes this instance's row. */
  stop(): Promise<void>;
}

export async function startInstanceHeartbeat(options: InstanceHeartbeatOptions): Promise<InstanceHeartbeat> {
  const { db, now, logger } = options;
  const id = randomUUID();
  const startedAt = now();
  let live = 1;

  const beat = async () => {
    const at = now();
    await recordInstanceHeartbeat(db, id, at, startedAt);
    const counted = await countLiveInstances(db, at - options.expiryMs);
    if (counted !== live) logger.info({ instances: Math.max(1, counted), instance_id: id }, 'instances sharing the provider limits changed');
    live = Math.max(1, counted);
    await deleteSilentInstances(db, at - FORGET_AFTER_EXPIRIES * options.expiryMs);
  };
  // The first beat is awaited, so the throttles start from the right share; a failure here fails the start.
  await beat();
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return; // a slow database: skip a beat rather than pile them up
    running = beat()
      .catch((error: unknown) => logger.warn({ err: error }, 'instance heartbeat failed; keeping the last instance count'))
      .finally(() => (running = undefined));
  }, options.intervalMs);
  timer.unref();

  return {
    instances: () => live,
    async stop() {
      clearInterval(timer);
      await running;
      await removeInstance(db, id).catch((error: unknown) => logger.warn({ err: error }, 'could not remove this instance from gateway_instances'));
    },
  };
}
