/**
 * The relay mode of `npm run bench`: mixed events (bonus, payment, casino, login, custom, balance) from 1,000 users
 * through /relay to a sink standing in for the CRM's Integration API. Accepted/s is the accept phase alone; the
 * mode's msgs_per_s is delivered/s (first request to last arrival at the sink); latencies are accept-to-delivery
 * per event (from its 202 to its arrival, matched by the Idempotency-Key header the gateway sends).
 * order_violations counts pairs of one user's events where the first was answered 202 before the second was sent,
 * yet the second reached the sink first (it must be 0).
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

const MIXED: Array<{ path: string; body: (i: number, idPrefix: string) => Record<string, unknown> }> = [
  { path: '/v1/integration/bonus', body: bonusEvent },
  {
    path: '/v1/integration/payment',
    body: (i) => ({ ...player(i), amount: 20, currency: 'EUR', exchange_rate: 1, payment_id: i, vendor_id: 'psp', status: 'Approved', type: 'Credit' }),
  },
  {
    path: '/v1/integration/casino',
    body: (i) => ({
      ...player(i),
      amount: 1,
      currency: 'EUR',
      exchange_rate: 1,
      activity_id: `a-${i}`,
      game_id: 7,
      game_name: 'Book',
      is_round_end: true,
      round_id: `r-${i}`,
      status: 'Approved',
      type: 'Bet',
      vendor_id: 3,
    }),
  },
  { path: '/v2/integration/login', body: (i) => ({ ...player(i), ip_address: '192.0.2.10', is_impersonated: false }) },
  { path: '/v1/integration/custom', body: (i) => ({ ...player(i), notification_type: 'level_up', data: { level: String(i % 50) } }) },
  { path: '/v1/integration/user/balances', body: (i) => ({ ...player(i), balances: [{ amount: 100, currency: 'EUR', key: 'real_money', exchange_rate: 1 }] }) },
];

function player(i: number) {
  return { user_id: `bench-user-${i % USERS}`, timestamp: '2026-11-24T10:00:00+01:00', origin: 'casino.example.com' };
}

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
  // The defaults of relay.batch_size and crm.integration.max_connections unless the run names others.
  config: (base: ConfigDoc, options: { relayBatchSize?: number | undefined; relayConnections?: number | undefined }): ConfigDoc => ({
    ...base,
    relay: { api_keys: [BENCH_API_KEY], poll_interval: '20ms', ...(options.relayBatchSize ? { batch_size: options.relayBatchSize } : {}) },
    crm: { integration: { url: sink.url, ...(options.relayConnections ? { max_connections: options.relayConnections } : {}) } },
  }),
  async run(
    {
      client,
      options,
      idPrefix,
    }: { client: LoadClient; options: { connections: number; relayBatchSize?: number | undefined; relayConnections?: number | undefined }; idPrefix: string },
    messages: number,
  ): Promise<Measurement & { extra: Record<string, unknown> }> {
    const acceptedAt = new Map<string, number>();
    const perUser = new Map<number, Array<{ id: string; sentAt: number; acceptedAt: number }>>();
    const started = performance.now();
    const accept = await drive(messages, options.connections, async (i) => {
      const t = performance.now();
      const kind = MIXED[Math.floor(i / USERS) % MIXED.length]!;
      const res = await client.post(`/relay${kind.path}`, JSON.stringify(kind.body(i, idPrefix)));
      if (res.status !== 202) throw new Error(`relay ${i}: ${res.status} ${res.body}`);
      const at = performance.now();
      const id = (JSON.parse(res.body) as { event_id: string }).event_id;
      acceptedAt.set(id, at);
      const list = perUser.get(i % USERS) ?? [];
      list.push({ id, sentAt: t, acceptedAt: at });
      perUser.set(i % USERS, list);
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
    let orderViolations = 0;
    for (const events of perUser.values()) {
      const sorted = [...events].sort((a, b) => a.sentAt - b.sentAt);
      for (let k = 1; k < sorted.length; k++) {
        const [before, after] = [sorted[k - 1]!, sorted[k]!];
        if (before.acceptedAt < after.sentAt && sink.arrivals.get(before.id)! > sink.arrivals.get(after.id)!) orderViolations++;
      }
    }
    return {
      messages,
      seconds: (lastArrival - started) / 1000,
      latenciesMs: [...acceptedAt].map(([id, at]) => Math.max(0, sink.arrivals.get(id)! - at)),
      extra: {
        latency: 'accept (202) to arrival at the sink',
        users: USERS,
        kinds: MIXED.length,
        order_violations: orderViolations,
        // null: the config's default (relay.batch_size, crm.integration.max_connections).
        relay_batch_size: options.relayBatchSize ?? null,
        relay_connections: options.relayConnections ?? null,
        accepted_per_s: Math.round(messages / accept.seconds),
        delivered_per_s: Math.round(messages / ((lastArrival - started) / 1000)),
        accept_p50_ms: round([...accept.latenciesMs].sort((a, b) => a - b)[Math.floor(accept.latenciesMs.length / 2)]!, 2),
      },
    };
  },
};
