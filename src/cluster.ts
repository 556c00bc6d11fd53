/**
 * `server.workers` > 1: one gateway process per worker on the same port (node:cluster gives each new connection to
 * the next worker), so one host's cores all serve. The primary migrates once, forks the workers, restarts one that
 * dies, passes signals on, and gathers every worker's metrics when one of them is asked for /metrics.
 *
 * Worker 0 also runs what a host needs once: the conversion worker, the unknown-timeout sweep and the WAL checkpoint
 * thread (a restarted worker 0 takes them up again). Every worker gets an equal share of each provider's
 * `rate_per_second` and `max_concurrency`, so together they keep the configured limits: counted by heartbeat with
 * every other instance on the database (docs/shared-limits.md), and never fewer ways than this host's workers. Everything else that must
 * happen once already holds across processes (docs/operations.md "Several instances"): the ledger decides, not a process.
 */
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Config } from './config/schema.js';

/** The environment variable that tells a forked worker its index (0 … count-1). */
const WORKER_INDEX_ENV = 'CRM_SMS_GATEWAY_WORKER';
/**
 * Random bytes (hex) the primary hands every worker, so the keys a gateway draws at random when none is configured
 * (sandbox receipt signatures, OAuth tokens) are the same in each worker: a receipt or token from one is good at all.
 */
const CLUSTER_SECRET_ENV = 'CRM_SMS_GATEWAY_CLUSTER_SECRET';
const METRICS_MESSAGE = 'crm-sms-gateway:metrics';
/** More restarts than this within a minute is a crash loop: the primary gives up and exits 1. */
const MAX_RESTARTS_PER_MINUTE = 10;

export interface ClusterRole {
  index: number;
  count: number;
  /** The cluster's shared random secret (CLUSTER_SECRET_ENV); absent only if the primary did not pass one. */
  secret?: Buffer;
}

export function workerCount(config: Readonly<Config>): number {
  return config.server.workers === 'auto' ? availableParallelism() : config.server.workers;
}

/** This process's place in a cluster, or undefined when it runs alone. */
export function clusterRole(config: Readonly<Config>): ClusterRole | undefined {
  if (!cluster.isWorker) return undefined;
  const secret = process.env[CLUSTER_SECRET_ENV];
  return { index: Number(process.env[WORKER_INDEX_ENV] ?? 0), count: workerCount(config), ...(secret ? { secret: Buffer.from(secret, 'hex') } : {}) };
}

/** A provider limit split over the workers (never below 1, so a low limit still lets each worker send). */
export function shareOfLimit(limit: number | undefined, role: ClusterRole | undefined): number | undefined {
  if (limit === undefined || !role) return limit;
  return Math.max(1, limit / role.count);
}

/**
 * In a worker: answers the primary's requests for this registry's metrics (prom-client's cluster protocol) and
 * returns what /metrics should serve, the metrics of every worker, gathered by the primary.
 */
export function clusterMetricsRenderer(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // adds the worker's listener for the primary's requests
  let nextId = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  process.on('message', (message: { type?: string; id?: number; text?: string; error?: string }) => {
    if (message?.type !== METRICS_MESSAGE || message.id === undefined) return;
    const request = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) request?.reject(new Error(message.error));
    else request?.resolve(message.text ?? '');
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the cluster primary did not answer with metrics within 10 s'));
      }, 10_000);
      waiting.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      process.send!({ type: METRICS_MESSAGE, id });
    });
}

/**
 * The primary: forks `count` workers and keeps them running until SIGTERM/SIGINT, which it passes on; resolves with
 * the exit code once they have all stopped (1 if one had to be killed or kept failing).
 */
export function runClusterPrimary(count: number, logger: Logger, shutdownTimeoutMs: number): Promise<number> {
  const aggregator = new AggregatorRegistry();
  const indexOf = new Map<Worker, number>();
  const listening = new Set<Worker>();
  const restarts: number[] = [];
  let stopping = false;
  let exitCode = 0;
  const secret = randomBytes(32).toString('hex');

  const fork = (index: number) => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index), [CLUSTER_SECRET_ENV]: secret });
    indexOf.set(worker, index);
    worker.on('message', (message: { type?: string; id?: number }) => {
      if (message?.type !== METRICS_MESSAGE) return;
      aggregator.clusterMetrics().then(
        (text) => worker.isConnected() && worker.send({ type: METRICS_MESSAGE, id: message.id, text }),
        (error: Error) => worker.isConnected() && worker.send({ type: METRICS_MESSAGE, id: message.id, error: error.message }),
      );
    });
  };

  return new Promise<number>((resolve) => {
    const stop = (reason: string) => {
      if (!stopping) {
        stopping = true;
        logger.info({ reason, workers: indexOf.size }, 'stopping workers');
        for (const worker of indexOf.keys()) worker.process.kill('SIGTERM');
        // Each worker gives up after server.shutdown_timeout itself; this covers one that cannot even do that.
        setTimeout(() => {
          if (indexOf.size === 0) return;
          logger.error({ workers: [...indexOf.values()] }, 'workers did not stop in time; killing them');
          exitCode = 1;
          for (const worker of indexOf.keys()) worker.process.kill('SIGKILL');
        }, shutdownTimeoutMs + 5_000).unref();
      }
      if (indexOf.size === 0) resolve(exitCode);
    };
    cluster.on('listening', (worker) => listening.add(worker));
    cluster.on('exit', (worker, code, signal) => {
      const index = indexOf.get(worker)!;
      indexOf.delete(worker);
      const started = listening.delete(worker);
      if (stopping) return stop('worker stopped');
      const now = Date.now();
      restarts.push(now);
      while (restarts[0]! < now - 60_000) restarts.shift();
      // A worker that never listened cannot start (config, database, port): restarting it would only loop.
      if (!started || restarts.length > MAX_RESTARTS_PER_MINUTE) {
        logger.error(
          { worker: index, code, signal, restarts_last_minute: restarts.length },
          started ? 'workers keep failing; stopping the gateway' : 'worker failed to start; stopping the gateway',
        );
        exitCode = 1;
        return stop('worker failure');
      }
      logger.error({ worker: index, code, signal }, 'worker exited; starting a new one');
      fork(index);
    });
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    for (let index = 0; index < count; index++) fork(index);
    logger.info({ workers: count }, 'cluster started');
  });
}
