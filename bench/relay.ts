/**
 * The relay mode of `npm run bench`: bonus events from many users through /relay/v1/integration/bonus to a sink
 * standing in for the CRM's Integration API. Accepted/s is the accept phase alone; the mode's msgs_per_s is
 * delivered/s (first request to last arrival at the sink); latencies are accept-to-delivery per event (from its 202
 * to its arrival, matched by the Idempotency-Key header the gateway sends).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LoadClient } from './load-client.js';
import { BENCH_API_KEY, type ConfigDoc } from './server-process.js';
import { drive, round, type Measurement } from './workload.js';

/** Users the events are spread over (event i belongs to user i mod USERS). */
const USERS = 1_000;

const sink = {
  url: '',
  arrivals: new Map<string, number>(),
  async start() {
    if (this.url) return;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        sink.arrivals.set(String(req.headers['idempotency-key']), performance.now());
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    server.unref();
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
};

function bonusEvent(i: number, idPrefix: string) {
  return {
    amount: 10,
    bonus_code: 'WELCOME10',
    bonus_id: 'b-1',
    currency: 'EUR',
    exchange_rate: 1,
    origin: 'casino.example.com',
    product: 'Casino',
    status: 'Created',
    timestamp: '2026-11-24T10:00:00+01:00',
    type: 'WelcomeBonus',
    user_bonus_id: `${idPrefix}-${i}`,
    user_id: `bench-user-${i % USERS}`,
  };
}

export const relayMode = {
  prepare: () => sink.start(),
  config: (base: ConfigDoc): ConfigDoc => ({
    ...base,
    relay: { api_keys: [BENCH_API_KEY], poll_interval: '20ms', batch_size: 1_000 },
    crm: { integration: { url: sink.url, max_connections: 64 } },
  }),
  async run({ client, options, idPrefix }: { client: LoadClient; options: { connections: number }; idPrefix: string }, messages: number): Promise<Measurement & { extra: Record<string, unknown> }> {
    const acceptedAt = new Map<string, number>();
    const started = performance.now();
    const accept = await drive(messages, options.connections, async (i) => {
      const t = performance.now();
      const res = await client.post('/relay/v1/integration/bonus', JSON.stringify(bonusEvent(i, idPrefix)));
      if (res.status !== 202) throw new Error(`relay ${i}: ${res.status} ${res.body}`);
      const at = performance.now();
      acceptedAt.set((JSON.parse(res.body) as { event_id: string }).event_id, at);
      return at - t;
    });
    let progressAt = performance.now();
    let missing = messages;
    for (;;) {
      let left = 0;
      for (const id of acceptedAt.keys()) if (!sink.arrivals.has(id)) left++;
      if (left === 0) break;
      if (left < missing) [missing, progressAt] = [left, performance.now()];
      else if (performance.now() - progressAt > 60_000) throw new Error(`relay: ${left} of ${messages} events not delivered after 60 s without progress`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const lastArrival = Math.max(...[...acceptedAt.keys()].map((id) => sink.arrivals.get(id)!));
    return {
      messages,
      seconds: (lastArrival - started) / 1000,
      latenciesMs: [...acceptedAt].map(([id, at]) => Math.max(0, sink.arrivals.get(id)! - at)),
      extra: { latency: 'accept (202) to arrival at the sink', users: USERS, accepted_per_s: Math.round(messages / accept.seconds), delivered_per_s: Math.round(messages / ((lastArrival - started) / 1000)), accept_p50_ms: round([...accept.latenciesMs].sort((a, b) => a - b)[Math.floor(accept.latenciesMs.length / 2)]!, 2) },
    };
  },
};
