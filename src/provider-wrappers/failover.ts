/**
 * Decisions of a failover route (docs/configuration.md "Providers"), as pure functions tested by table (test/provider-wrappers/failover.test.ts):
 * which member to try first, and whether a member's answer lets the same message go on to the next member.
 *
 * The rule that keeps a route from sending twice: only a send that provably never reached the member moves on.
 * A plugin says so by answering transient without `ambiguous` (providers/types.ts: a refused connection, an HTTP
 * 429 or a throttling answer before acceptance, a failed authentication). A 5xx, or a timeout after the request
 * went out, may have reached the member: the message stays with it, uncertain, as for a single provider.
 */
import type { SendResult } from '../../providers/types.js';
import type { BreakerEvent } from './circuit-breaker.js';

/** Codes of answers that come from the gateway itself, not from the member. */
const OURS_RATE_LIMITED = 'rate_limited';
const OURS_SHUTTING_DOWN = 'shutting_down';

export interface MemberVerdict {
  /** True: the message was not handed to this member; try the next one within the same request. */
  tryNext: boolean;
  /** What the answer tells the member's circuit breaker. */
  breaker: BreakerEvent;
}

/**
 * Judges one member's answer. `timedOut`: the request's send timeout has fired, so there is no time left for
 * another member (its answer would come too late for the CRM's request anyway).
 */
export function judgeMemberAnswer(answer: SendResult, timedOut: boolean): MemberVerdict {
  if (answer.ok) return { tryNext: false, breaker: { kind: 'answered' } };
  if (answer.kind === 'permanent') return { tryNext: false, breaker: { kind: 'answered' } };
  if (answer.ambiguous) return { tryNext: false, breaker: { kind: 'failed', reason: answer.error } };
  if (answer.code === OURS_SHUTTING_DOWN) return { tryNext: false, breaker: { kind: 'released' } };
  // Our own rate_per_second / max_concurrency for the member is full: say nothing about its health, spill over.
  if (answer.code === OURS_RATE_LIMITED) return { tryNext: !timedOut, breaker: { kind: 'released' } };
  return { tryNext: !timedOut, breaker: { kind: 'failed', reason: answer.error } };
}

export type RouteStrategy = 'failover' | 'weighted' | 'cheapest_delivering';

/**
 * The order in which a message tries the members. `failover`: as configured. `weighted`: the first member drawn
 * with probability proportional to its weight (`random` in [0, 1)), then the others by descending weight, ties
 * in configured order; a member with weight 0 only ever serves as a fallback. `cheapest_delivering`: as configured
 * here (src/provider-wrappers/cheapest-delivering.ts orders it when the route has its figures).
 */
export function orderMembers(members: readonly string[], strategy: RouteStrategy, weights: ReadonlyMap<string, number>, random: number): string[] {
  // cheapest_delivering is ordered by cheapest-delivering.ts; without its figures, the configured order stands.
  if (strategy !== 'weighted' || members.length < 2) return [...members];
  const weightOf = (m: string) => weights.get(m) ?? 1;
  const total = members.reduce((sum, m) => sum + weightOf(m), 0);
  // Rounding can leave the draw past the last weight: the heaviest member is the fallback.
  let first = members.reduce((best, m) => (weightOf(m) > weightOf(best) ? m : best), members[0]!);
  if (total > 0) {
    let point = random * total;
    for (const m of members) {
      point -= weightOf(m);
      if (point < 0 && weightOf(m) > 0) {
        first = m;
        break;
      }
    }
  }
  const rest = members
    .filter((m) => m !== first)
    .map((m, i) => ({ m, i }))
    .sort((a, b) => weightOf(b.m) - weightOf(a.m) || a.i - b.i);
  return [first, ...rest.map((r) => r.m)];
}
