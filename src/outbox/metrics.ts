/**
 * The /metrics series every outbox kind has, named by the kind (the names are the deployment kit's, checked by
 * test/deploy/deploy-kit.test.ts): rows the receiver took, rows dead-lettered (by reason where the kind dead-letters for
 * more than one), and the backlog by state, read at scrape time and paced by its cost (pacedRead).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { pacedRead } from '../observability/paced-read.js';
import type { DeadReason } from './decisions.js';

export interface OutboxMetricNames<B> {
  sent: { name: string; help: string };
  /** `byReason`: labelled `reason` (refused, attempts). */
  dead: { name: string; help: string; byReason?: boolean };
  /** Labelled `state`: the states and their counts, in the order shown. */
  backlog: { name: string; help: string; states: (backlog: B) => Record<string, number> };
}

export function registerOutboxMetrics<B>(registry: Registry, names: OutboxMetricNames<B>, countBacklog: () => Promise<B>) {
  const registers = [registry];
  const sent = new Counter({ ...names.sent, registers });
  const { byReason, ...deadName } = names.dead;
  const dead = new Counter({ ...deadName, ...(byReason ? { labelNames: ['reason'] } : {}), registers });
  const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
  const readBacklog = pacedRead(countBacklog, (backlog) => sum(names.backlog.states(backlog)));
  new Gauge({
    name: names.backlog.name,
    help: names.backlog.help,
    labelNames: ['state'],
    registers,
    async collect() {
      for (const [state, count] of Object.entries(names.backlog.states(await readBacklog()))) this.set({ state }, count);
    },
  });
  return {
    sent: (count: number) => sent.inc(count),
    dead: (count: number, reason: DeadReason) => (byReason ? dead.inc({ reason }, count) : dead.inc(count)),
  };
}
