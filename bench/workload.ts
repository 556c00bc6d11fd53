/** What the bench's load is made of, shared by run.ts (the gateway) and http-floor.ts (the layers under it). */
import { prefillPlayer } from '../src/ledger/prefill-rows.js';

/** What a run measured: request latencies in ms and the messages they carried. */
export interface Measurement {
  messages: number;
  seconds: number;
  latenciesMs: number[];
}

/**
 * An SMS message object as the CRM sends it. Recipients end in 1000–8999, so none hits the sandbox's 0001–0005 outcome
 * rules nor the fake SMSC's refused destinations (SMPP_MAGIC_DESTINATIONS, test/fakes/smpp.ts: 99xx).
 * - Without `players`, each message goes to a new player (`u-<i>`), its number one of 80,000 in one narrow range, so
 *   the run's keys land together in the number's and the player's trees.
 * - With `players`, as production sends to a prefilled ledger's players (src/ledger/prefill-rows.ts): player i's
 *   (scattered by a multiplicative hash) user_id and number, their keys anywhere in those trees.
 */
export function singleMessage(id: string, i: number, provider: string, players?: number) {
  const { userId, recipient } = players ? playerOf(i, players) : { userId: `u-${i}`, recipient: `+4477009${Math.floor(i / 8_000) % 10}${1_000 + (i % 8_000)}` };
  return {
    activity: { id, brand_id: 7, user_id: userId, activity_id: 11, action_group_id: 3, trigger_hash: 'bench', action_id: 5 },
    content: 'Your weekly bonus is waiting: 20 free spins on Starburst. Reply STOP to opt out.',
    recipient,
    sender_name: 'Casino',
    provider_name: provider,
    encoding: 'auto',
  };
}

/** The i-th message's player among `players`; the next player where a number would end outside 1000–8999. */
function playerOf(i: number, players: number): { userId: string; recipient: string } {
  for (let player = Number((BigInt(i) * 2_654_435_761n) % BigInt(players)); ; player = (player + 1) % players) {
    const chosen = prefillPlayer(player);
    const last = Number(chosen.recipient.slice(-4));
    if (last >= 1_000 && last < 9_000) return chosen;
  }
}

/** Runs `count` tasks on `workers` concurrent loops; each task returns its latency. */
export async function drive(count: number, workers: number, task: (i: number) => Promise<number>): Promise<Measurement & { messages: 0 }> {
  const latenciesMs: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(workers, count) }, async () => {
      while (next < count) latenciesMs.push(await task(next++));
    }),
  );
  return { messages: 0, seconds: (performance.now() - started) / 1000, latenciesMs };
}

export const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function latencySummary(latenciesMs: number[]) {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return {
    p50_ms: round(percentile(sorted, 50), 2),
    p99_ms: round(percentile(sorted, 99), 2),
    p999_ms: round(percentile(sorted, 99.9), 2),
    max_ms: round(sorted.at(-1) ?? NaN, 2),
  };
}
