/**
 * The hostile mode of `npm run bench` (docs/public-doors.md): the peer benchmark's single-send load, first
 * quiet, then again while strangers knock on the provider callbacks with 20 requests per second of each hostile
 * shape the adversarial review used:
 *
 *   quadratic   one form field repeated ~9,000 times (just under server.callback_body_limit) to /dlr/twilio
 *   distinct    ~7,000 distinct form fields (just under the limit) to /mo/twilio
 *   deep        JSON nesting 30,000 arrays to /mo/vonage
 *   oversized   a 1 MiB form declared by Content-Length to /dlr/twilio
 *   duplicate   a JSON object of 5,000 keys whose last one repeats the first, to /mo/vonage
 *
 * Every hostile request carries a forged signature. They are sent open loop (one every 50 ms per shape whether or
 * not the last was answered), so a gateway that stalls on them piles them up as a real attacker would. /healthz is
 * probed every 20 ms through both phases. The line reports the sends' p99 quiet and under attack (and their
 * ratio), /healthz's p99 in each, and the hostile answers by shape and status; `hostile_not_4xx` must be 0.
 * Printed, never asserted (docs/design.md §7).
 */
import { Agent, request } from 'node:http';
import type { LoadClient } from './load-client.js';
import type { ConfigDoc } from './server-process.js';
import { drive, latencySummary, round, singleMessage, type Measurement } from './workload.js';

const TWILIO = { type: 'twilio', account_sid: `AC${'0'.repeat(32)}`, auth_token: 'bench-twilio-token', from: '+15005550006', base_url: 'http://127.0.0.1:9' };
const VONAGE = {
  type: 'vonage',
  api_key: 'k',
  api_secret: 's',
  base_url: 'http://127.0.0.1:9',
  signature_secret: 'bench-vonage-secret',
  signature_method: 'sha256',
};

/** Requests per second of each shape. */
const RATE = 20;
const HEALTH_PROBE_MS = 20;

interface Shape {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

const formHeaders = { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'Zm9yZ2Vk' };
const jsonHeaders = { 'content-type': 'application/json' };

function fieldsUpTo(bytes: number, field: (i: number) => string): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length + field(i).length + 1 < bytes; i++) {
    parts.push(field(i));
    length += field(i).length + 1;
  }
  return parts.join('&');
}

const SHAPES: Record<string, Shape> = {
  quadratic: { path: '/dlr/twilio', headers: formHeaders, body: Buffer.from(fieldsUpTo(63 * 1024, () => 'Body=v')) },
  distinct: { path: '/mo/twilio', headers: formHeaders, body: Buffer.from(fieldsUpTo(63 * 1024, (i) => `f${i}=v`)) },
  deep: { path: '/mo/vonage', headers: jsonHeaders, body: Buffer.from(`{"a":${'['.repeat(30_000)}${']'.repeat(30_000)}}`) },
  oversized: { path: '/dlr/twilio', headers: formHeaders, body: Buffer.alloc(1024 * 1024, 'a') },
  duplicate: {
    path: '/mo/vonage',
    headers: jsonHeaders,
    body: Buffer.from(`{${Array.from({ length: 5_000 }, (_, i) => `"k${i}":1`).join(',')},"k0":2}`),
  },
};

/** One request; resolves with its status (0 when the connection failed before an answer) and latency. */
export function send(
  agent: Agent | false,
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (status: number) => {
      if (done) return;
      done = true;
      resolve({ status, ms: performance.now() - started });
    };
    const req = request(`${base}${path}`, { method, agent, headers: body ? { ...headers, 'content-length': String(body.length) } : headers }, (res) => {
      res.resume();
      res.on('end', () => finish(res.statusCode ?? 0));
      res.on('error', () => finish(res.statusCode ?? 0));
    });
    // A gateway answering 413 may close before the whole body is written: the answer, if it came, counts.
    req.on('error', () => setTimeout(() => finish(0), 50));
    req.end(body);
  });
}

/** Fires every shape at RATE per second until stopped; counts answers by shape and status. */
function startAttack(base: string) {
  // Oversized bodies get a connection each (the server closes it after its early 413); the others keep theirs.
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const counts: Record<string, Record<string, number>> = {};
  const latencies: Record<string, number[]> = {};
  const inFlight = new Set<Promise<void>>();
  const timers = Object.entries(SHAPES).map(([name, shape]) =>
    setInterval(() => {
      const p = send(name === 'oversized' ? false : agent, base, 'POST', shape.path, shape.headers, shape.body).then(({ status, ms }) => {
        const byStatus = (counts[name] ??= {});
        byStatus[String(status)] = (byStatus[String(status)] ?? 0) + 1;
        (latencies[name] ??= []).push(ms);
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }, 1000 / RATE),
  );
  return {
    async stop() {
      timers.forEach(clearInterval);
      await Promise.all([...inFlight]);
      agent.destroy();
      const all = Object.values(counts).flatMap((byStatus) => Object.entries(byStatus));
      return {
        counts,
        sent: all.reduce((n, [, k]) => n + k, 0),
        notClientError: all.filter(([status]) => !/^4\d\d$/.test(status)).reduce((n, [, k]) => n + k, 0),
        p99Ms: Object.fromEntries(Object.entries(latencies).map(([name, ms]) => [name, latencySummary(ms).p99_ms])),
      };
    },
  };
}

/** Probes /healthz every HEALTH_PROBE_MS until stopped; the latencies of its answers (a failure counts as Infinity). */
function startHealthProbe(base: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const latencies: number[] = [];
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const p = send(agent, base, 'GET', '/healthz', {}).then(({ status, ms }) => void latencies.push(status === 200 ? ms : Infinity));
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }, HEALTH_PROBE_MS);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all([...inFlight]);
      agent.destroy();
      return latencySummary(latencies).p99_ms;
    },
  };
}

interface HostileLoad {
  client: LoadClient;
  options: { connections: number };
  provider: { name: string };
  idPrefix: string;
  urls: string[];
}

async function sends({ client, options, provider, idPrefix }: HostileLoad, from: number, count: number): Promise<Measurement> {
  const m = await drive(count, options.connections, async (k) => {
    const i = from + k;
    const started = performance.now();
    const res = await client.post('/channels/sms/single', JSON.stringify(singleMessage(`${idPrefix}-${i}`, i, provider.name)));
    if (res.status !== 200) throw new Error(`single ${i}: ${res.status} ${res.body.slice(0, 200)}`);
    return performance.now() - started;
  });
  return { ...m, messages: count };
}

export const hostileMode = {
  config: (base: ConfigDoc): ConfigDoc => ({ ...base, providers: { ...(base.providers as ConfigDoc), twilio: TWILIO, vonage: VONAGE } }),
  /** Half the messages quiet, half under attack; the measured latencies are the sends under attack. */
  async run(load: HostileLoad, messages: number): Promise<Measurement & { extra: Record<string, unknown> }> {
    const base = load.urls[0]!;
    const quietHealth = startHealthProbe(base);
    const half = Math.floor(messages / 2);
    const quiet = await sends(load, 0, half);
    const quietHealthP99 = await quietHealth.stop();

    const health = startHealthProbe(base);
    const attack = startAttack(base);
    const loud = await sends(load, half, messages - half);
    const healthP99 = await health.stop();
    const hostile = await attack.stop();

    const quietP99 = latencySummary(quiet.latenciesMs).p99_ms;
    const loudP99 = latencySummary(loud.latenciesMs).p99_ms;
    return {
      messages: loud.messages,
      seconds: loud.seconds,
      latenciesMs: loud.latenciesMs,
      extra: {
        latency: 'single sends under attack',
        quiet_send_p99_ms: quietP99,
        quiet_msgs_per_s: Math.round(quiet.messages / quiet.seconds),
        send_p99_ratio: round(loudP99 / quietP99, 2),
        healthz_p99_quiet_ms: quietHealthP99,
        healthz_p99_ms: healthP99,
        hostile_per_s_per_shape: RATE,
        hostile_sent: hostile.sent,
        hostile_not_4xx: hostile.notClientError,
        hostile_p99_ms_by_shape: hostile.p99Ms,
        hostile: hostile.counts,
      },
    };
  },
};
