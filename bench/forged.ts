/**
 * The forged mode of `npm run bench` (docs/public-doors.md): one client floods forged Twilio callbacks of the worst
 * shape on 32 connections while /healthz is probed every 20 ms by a process of its own (bench/healthz-probe.ts), so
 * the probe's figure is the gateway's answer, not the flooding process's event loop.
 *
 * The worst shape is the largest form body the door still reads (the largest of FORGED_BYTES not answered 413,
 * found by one request of each before the flood), signed with a well-formed signature of the right length and
 * X-Twilio-Webhooks-Signature-Settings naming a key the gateway does not hold, so every one of the three shared keys
 * configured below is tried. Three phases, one line:
 *
 *   quiet      /healthz alone for 15 s
 *   one        the flood from one address (what one client costs, per-source limit included)
 *   many       the flood with a new X-Forwarded-For address on every request (the bench's 127.0.0.1 is a trusted
 *              proxy), so no per-source limit applies: the CPU of a callback that reaches the signature check
 *
 * Each flooding phase (at most --messages callbacks or 30 s) reports `/healthz` p99, the answers by status, the
 * server's CPU per refused callback (the CPU of the whole process over the phase, /healthz probes and idle timers
 * included, divided by the callbacks sent) and its CPU per second.
 * Printed, never asserted (docs/design.md §7).
 */
import { fork } from 'node:child_process';
import { Agent } from 'node:http';
import { fileURLToPath } from 'node:url';
import { send } from './hostile.js';
import type { ConfigDoc } from './server-process.js';
import { latencySummary, type Measurement } from './workload.js';

/** /healthz probed every 20 ms by a child process (bench/healthz-probe.ts); `stop` gives its p99. */
async function startHealthProbe(base: string): Promise<{ stop(): Promise<number> }> {
  const child = fork(fileURLToPath(new URL('./healthz-probe.js', import.meta.url)), [base], { stdio: 'inherit' });
  await new Promise<void>((resolve) => child.once('message', () => resolve()));
  return {
    stop: () =>
      new Promise<number>((resolve) => {
        child.once('message', (latencies) => resolve(latencySummary((latencies as Array<number | null>).map((ms) => ms ?? Infinity)).p99_ms));
        child.send('stop');
      }),
  };
}

const SHARED_KEYS = { KS1: 'bench-shared-key-1', KS2: 'bench-shared-key-2', KS3: 'bench-shared-key-3' };
const TWILIO = {
  type: 'twilio',
  account_sid: `AC${'0'.repeat(32)}`,
  auth_token: 'bench-twilio-token',
  from: '+15005550006',
  base_url: 'http://127.0.0.1:9',
  webhook_shared_keys: SHARED_KEYS,
};

const CONNECTIONS = 32;
const QUIET_MS = 15_000;
/** The longest a flooding phase lasts (it also ends after --messages callbacks). */
const PHASE_SECONDS = 30;
/** Body sizes tried, largest first: the flood uses the largest the door reads (not answered 413). */
const FORGED_BYTES = [65_000, 32 * 1024, 16 * 1024, 8 * 1024, 4 * 1024, 1024];

/** A status callback's fields, padded with more fields (at most 200, well under the door's 256) up to `bytes`. */
function forgedForm(bytes: number): Buffer {
  let form = `AccountSid=${TWILIO.account_sid}&ApiVersion=2010-04-01&From=%2B15005550006&MessageSid=SM${'1'.repeat(32)}&MessageStatus=delivered&To=%2B447700900123`;
  const fields = 200;
  const each = Math.max(1, Math.floor((bytes - form.length) / fields) - 6);
  for (let i = 0; form.length + each + 6 < bytes && i < fields; i++) form += `&F${String(i).padStart(3, '0')}=${'x'.repeat(each)}`;
  return Buffer.from(form);
}

const headers = (address?: string) => ({
  'content-type': 'application/x-www-form-urlencoded',
  // 28 characters of base64: the length of an HMAC-SHA1, so no length check can tell it from a real one.
  'x-twilio-signature': 'Zm9yZ2VkLXNpZ25hdHVyZS0yMGI=',
  'x-twilio-webhooks-signature-settings': 'key=KSunknown,algorithm=HMAC_SHA1',
  ...(address ? { 'x-forwarded-for': address } : {}),
});

const PATH = '/dlr/twilio?sms_id=01JBENCHFORGED0000000000000';

/** The largest body of FORGED_BYTES the door reads. */
async function largestRead(base: string): Promise<Buffer> {
  const agent = new Agent({ keepAlive: false });
  try {
    for (const bytes of FORGED_BYTES) {
      const body = forgedForm(bytes);
      const { status } = await send(agent, base, 'POST', PATH, headers('198.51.100.1'), body);
      if (status !== 413) return body;
    }
    return forgedForm(FORGED_BYTES.at(-1)!);
  } finally {
    agent.destroy();
  }
}

interface ForgedLoad {
  urls: string[];
  serverCpuMs: () => number | null;
}

/**
 * Forged callbacks on CONNECTIONS keep-alive connections, each sent when the last was answered, until `count` are
 * sent or `seconds` have passed.
 */
async function flood(base: string, body: Buffer, count: number, seconds: number, manySources: boolean, serverCpuMs: () => number | null) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const health = await startHealthProbe(base);
  const statuses: Record<string, number> = {};
  const cpuBefore = serverCpuMs();
  const started = performance.now();
  let next = 0;
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < count && performance.now() < deadline) {
        const i = next++;
        // A documentation block (RFC 5737) address per request, or one for all.
        const address = manySources ? `203.0.${(i >> 8) & 0xff}.${i & 0xff}` : '198.51.100.7';
        const { status } = await send(agent, base, 'POST', PATH, headers(address), body);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  const took = (performance.now() - started) / 1000;
  const cpuAfter = serverCpuMs();
  const healthP99 = await health.stop();
  agent.destroy();
  const cpuMs = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore;
  return {
    seconds: Math.round(took * 10) / 10,
    callbacks: next,
    healthz_p99_ms: healthP99,
    per_s: Math.round(next / took),
    answers: statuses,
    server_cpu_us_per_callback: cpuMs === null ? null : Math.round((cpuMs * 1000) / next),
    // The whole process's CPU over the phase, /healthz probes and idle timers included: what the flood leaves to others.
    server_cpu_ms_per_s: cpuMs === null ? null : Math.round(cpuMs / took),
  };
}

export const forgedMode = {
  config: (base: ConfigDoc): ConfigDoc => ({
    ...base,
    server: { ...(base.server as ConfigDoc), trusted_proxies: ['127.0.0.1/32'] },
    providers: { ...(base.providers as ConfigDoc), twilio: TWILIO },
  }),
  async run(load: ForgedLoad, messages: number): Promise<Measurement & { extra: Record<string, unknown> }> {
    const base = load.urls[0]!;
    const quiet = await startHealthProbe(base);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    const quietP99 = await quiet.stop();
    const body = await largestRead(base);
    const one = await flood(base, body, messages, PHASE_SECONDS, false, load.serverCpuMs);
    const many = await flood(base, body, messages, PHASE_SECONDS, true, load.serverCpuMs);
    return {
      messages: one.callbacks + many.callbacks,
      seconds: one.seconds + many.seconds,
      latenciesMs: [],
      extra: {
        latency: 'none (see the phases)',
        forged_body_bytes: body.length,
        shared_keys: Object.keys(SHARED_KEYS).length,
        connections: CONNECTIONS,
        healthz_p99_quiet_ms: quietP99,
        one_source: one,
        many_sources: many,
      },
    };
  },
};
