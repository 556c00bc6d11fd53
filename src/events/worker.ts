/**
 * The event delivery worker: claims the oldest unsent event of each user whose turn it is (claimDueEvents), sends
 * them all at once through the transport, marks each sent or backs it off. A user's next event is claimable only
 * after its previous one was sent, so per-user order holds across rounds, processes and instances. `serve` runs it
 * in a loop; the cron `flush` runs rounds until nothing is due or the CRM refuses.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { inTransaction, type DialectFlags } from '../ledger/db.js';
import { claimDueEvents, markEventsFailed, markEventsSent, type FailedEvent } from '../ledger/events.js';
import type { Database } from '../ledger/schema.js';
import { destinationOf, type Destinations } from './destination.js';
import { planRetry } from './retry.js';
import { decideFailure, type EventTransport, type SendOutcome } from './transport.js';
import { startWorkerLoop, type WorkerLoop } from '../kit/worker-loop.js';

export interface EventWorkerDeps {
  db: Kysely<Database>;
  flags: DialectFlags;
  transport: EventTransport;
  /** The catalogue with crm.integration.events applied, looked up per event at send time. */
  destinations: Destinations;
  relay: Config['relay'];
  logger: Logger;
  now: () => number;
  random?: () => number;
  /** Told the accept-to-sent time of each event sent (seconds), for /metrics. */
  onSent?: (count: number, latenciesSeconds: number[]) => void;
  /** Told of dead-lettered events: `refused` by the CRM (a 4xx, at once) or out of relay.max_attempts. */
  onDead?: (count: number, reason: 'refused' | 'attempts') => void;
}

export interface EventRound {
  claimed: number;
  sent: number;
  failed: number;
  dead: number;
}

export async function deliverDueEvents(deps: EventWorkerDeps): Promise<EventRound> {
  const { db, relay, now } = deps;
  const token = randomUUID();
  const events = await claimDueEvents(db, deps.flags, relay.batch_size, now(), relay.lease, token);
  if (events.length === 0) return { claimed: 0, sent: 0, failed: 0, dead: 0 };
  const outcomes = await Promise.all(
    events.map((e): Promise<SendOutcome> => {
      const destined = destinationOf(e, deps.destinations);
      return destined.ok ? deps.transport.send(destined.event) : Promise.resolve({ ok: false, status: null, error: destined.error, permanent: true });
    }),
  );
  const at = now();
  const sentIds: number[] = [];
  const failed: FailedEvent[] = [];
  const policy = { initialMs: relay.retry_initial_ms, maxMs: relay.retry_max_ms, maxAttempts: relay.max_attempts };
  let lastError = '';
  let refused = 0;
  events.forEach((event, i) => {
    const outcome = outcomes[i]!;
    if (outcome.ok) sentIds.push(event.id);
    else {
      lastError = outcome.error;
      // A payload the CRM will never take is dead at once and no longer holds back its player's later events.
      if (decideFailure(outcome, relay.retry_client_errors) === 'dead') {
        refused++;
        failed.push({ id: event.id, httpStatus: outcome.status, error: outcome.error, dead: true, nextAttemptAt: at });
      } else
        failed.push({
          id: event.id,
          httpStatus: outcome.status,
          error: outcome.error,
          ...planRetry(event.attempts, at, policy, deps.random, outcome.retryAfterMs),
        });
    }
  });
  await inTransaction(db, async (trx) => {
    await markEventsSent(trx, sentIds, token, at, outcomes.find((o) => o.ok)?.status ?? null);
    await markEventsFailed(trx, failed, token);
  });
  const dead = failed.filter((f) => f.dead);
  if (sentIds.length > 0 && deps.onSent) {
    const acceptedAt = new Map(events.map((e) => [e.id, e.created_at]));
    deps.onSent(
      sentIds.length,
      sentIds.map((id) => (at - acceptedAt.get(id)!) / 1000),
    );
  }
  if (failed.length > 0)
    deps.logger.warn({ count: failed.length, dead: dead.length, error: lastError, target: deps.transport.target }, 'CRM events not taken; backing off');
  for (const d of dead)
    deps.logger.warn(
      { event: events.find((e) => e.id === d.id)?.event_id, status: d.httpStatus, error: d.error },
      'CRM event dead-lettered; replay it from /admin/events',
    );
  if (refused > 0) deps.onDead?.(refused, 'refused');
  if (dead.length > refused) deps.onDead?.(dead.length - refused, 'attempts');
  return { claimed: events.length, sent: sentIds.length, failed: failed.length - dead.length, dead: dead.length };
}

/** Runs rounds until stopped: at once while there is work, else every relay.poll_interval or on `wake()`. */
export function startEventWorker(deps: EventWorkerDeps): WorkerLoop {
  return startWorkerLoop(
    async () => {
      const round = await deliverDueEvents(deps);
      // Dead-lettered heads free their players' next events: look again at once, as after a send.
      return round.claimed > 0 && round.sent + round.dead > 0;
    },
    { idleMs: deps.relay.poll_interval, logger: deps.logger, name: 'event worker' },
  );
}
