/** The event part of `flush`: rounds until nothing is due, stopping at the first round the CRM took nothing of. */
import { countEventBacklog } from '../ledger/events.js';
import { deliverDueEvents, type EventOutboxDeps } from './event-outbox.js';

export async function flushEvents(deps: EventOutboxDeps): Promise<{ line: string; reachable: boolean }> {
  const totals = { sent: 0, failed: 0, dead: 0 };
  let reachable = true;
  for (;;) {
    const round = await deliverDueEvents(deps);
    totals.sent += round.sent;
    totals.failed += round.failed;
    totals.dead += round.dead;
    if (round.claimed > 0 && round.sent === 0 && round.dead === 0) reachable = false;
    if (round.claimed === 0 || round.sent + round.dead === 0) break;
  }
  const backlog = await countEventBacklog(deps.db);
  return {
    line: `flush events: sent=${totals.sent} failed=${totals.failed} dead=${totals.dead} left=${backlog.unsent} dead_total=${backlog.dead}${reachable ? '' : ' (CRM unreachable)'}`,
    reachable,
  };
}
