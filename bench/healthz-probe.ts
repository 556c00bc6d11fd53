/**
 * /healthz probed every 20 ms from a process of its own (bench/forged.ts), so what the probe measures is the
 * gateway's answer, not the event loop of the process that floods it. Started with the gateway's base URL as its
 * argument; on the message `stop` it sends back the latencies in ms (a failure as null) and exits.
 */
import { Agent } from 'node:http';
import { send } from './hostile.js';

const base = process.argv[2]!;
const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const latencies: Array<number | null> = [];
const inFlight = new Set<Promise<void>>();
const timer = setInterval(() => {
  const p = send(agent, base, 'GET', '/healthz', {}).then(({ status, ms }) => void latencies.push(status === 200 ? ms : null));
  inFlight.add(p);
  void p.finally(() => inFlight.delete(p));
}, 20);

process.on('message', async (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  await Promise.all([...inFlight]);
  agent.destroy();
  process.send!(latencies, () => process.exit(0));
});
process.send!('ready');
