/**
 * The CRM event outbox as src/outbox/outbox.ts configures a kind: each round claims the oldest unsent event of each
 * user whose turn it is (claimDueEvents in src/ledger/events.ts), sends them all at once through the transport, one
 * request each. A user's next event is claimable only after its previous one was sent, so per-user order holds across
 * rounds, processes and instances; an event the CRM refuses (transport.ts decideFailure) is dead at once and no longer
 * holds back its user's later events. A Retry-After is honoured. Put together with the other kinds by src/outboxes.ts,
 * for `serve`'s loop and the cron `flush`.
 */
import type { Config } from '../config/schema.js';
import { claimDueEvents, markEventsFailed, markEventsSent, type ClaimedEvent } from '../ledger/events.js';
import type { DeadReason } from '../outbox/decisions.js';
import { sendEach, type OutboxDeps, type OutboxKind } from '../outbox/outbox.js';
import { dialectFlagsOf } from '../ledger/engine/flags.js';
import { destinationOf, type Destinations } from './destination.js';
import { decideFailure, type EventTransport } from './transport.js';

export interface EventOutboxDeps extends OutboxDeps {
  transport: EventTransport;
  /** The catalogue with crm.integration.events applied, looked up per event at send time. */
  destinations: Destinations;
  relay: Config['relay'];
  /** Told the accept-to-sent time of each event sent (seconds), for /metrics. */
  onSent?: (count: number, latenciesSeconds: number[]) => void;
  /** Told of dead-lettered events: `refused` by the CRM (a 4xx, at once) or out of relay.max_attempts. */
  onDead?: (count: number, reason: DeadReason) => void;
  /** Told of each attempt the broker took but routed to no queue or partition (transport.ts `notRouted`). */
  onNotRouted?: () => void;
}

export function eventOutbox(deps: EventOutboxDeps): OutboxKind<ClaimedEvent> {
  const { relay } = deps;
  return {
    name: 'event outbox',
    settings: relay,
    claim: (db, limit, now, lease, token) => claimDueEvents(db, dialectFlagsOf(db), limit, now, lease, token),
    attemptsOf: (e) => e.attempts,
    send: sendEach(async (e) => {
      const destined = destinationOf(e, deps.destinations);
      const outcome = destined.ok ? await deps.transport.send(destined.event) : { ok: false as const, status: null, error: destined.error, permanent: true };
      if (!outcome.ok && 'notRouted' in outcome && outcome.notRouted) deps.onNotRouted?.();
      return outcome.ok ? outcome : { ...outcome, refused: decideFailure(outcome, relay.retry_client_errors) === 'dead' };
    }),
    markSent: markEventsSent,
    markFailed: markEventsFailed,
    // Dead-lettered heads free their players' next events: look again at once, as after a send.
    again: (round) => round.sent.length + round.dead > 0,
    report(round) {
      const { sent, failed, at } = round;
      if (sent.length > 0)
        deps.onSent?.(
          sent.length,
          sent.map((e) => (at - e.created_at) / 1000),
        );
      const dead = failed.filter((f) => f.plan.dead);
      if (failed.length > 0)
        deps.logger.warn(
          { count: failed.length, dead: dead.length, error: failed[failed.length - 1]!.error, target: deps.transport.target },
          'CRM events not taken; backing off',
        );
      for (const d of dead)
        deps.logger.warn({ event: d.row.event_id, status: d.status, error: d.error }, 'CRM event dead-lettered; replay it from /admin/events');
    },
    onDead: (count, reason) => deps.onDead?.(count, reason),
  };
}
