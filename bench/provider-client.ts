/**
 * CPU cost per message of the Twilio send path: our plugin (pooled undici form POST) against the official SDK's
 * messages.create, both talking to the Twilio fake (test/fakes/twilio.ts) in a child process, so only the
 * client's CPU is counted (process.cpuUsage of this process). docs/design.md §6 budget: ≤ 100 µs per message for ours.
 *
 *   npm run build && node dist/bench/provider-client.js [--count 20000] [--concurrency 50] [--sdk-count N]
 *
 * Prints one JSON line per client, plus the floor: the same POST through a bare undici Pool.
 */
import { setMaxListeners } from 'node:events';
import { createRequire } from 'node:module';
import pino from 'pino';
import twilioSdk from 'twilio';
import { Pool } from 'undici';
import type RequestClient from 'twilio/lib/base/RequestClient.js';
import { twilio as twilioPlugin } from '../providers/twilio/index.js';
import type { SendRequest } from '../providers/types.js';
import { startTwilioFakeProcess, type TwilioFakeInfo } from './twilio-fake-process.js';

const sdkVersion = (createRequire(import.meta.url)('twilio/package.json') as { version: string }).version;
const SENDER = '+15005550006';
const RECIPIENT = '+447700900123';
const CALLBACK = 'https://gateway.example/dlr/twilio?sms_id=';

/**
 * The send timeout signal the way src/sms/dispatch.ts hands it out: one AbortSignal.timeout shared by the sends
 * whose deadlines fall in the same 50 ms window (a signal per message costs about as much as the HTTP call).
 */
let windowSignal: { window: number; signal: AbortSignal } | undefined;
function sendSignal(timeoutMs = 10_000): AbortSignal {
  const window = Math.ceil((Date.now() + timeoutMs) / 50) * 50;
  if (windowSignal?.window !== window) {
    const signal = AbortSignal.timeout(window - Date.now());
    setMaxListeners(0, signal);
    windowSignal = { window, signal };
  }
  return windowSignal.signal;
}

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

/** Runs `count` sends with `concurrency` in flight; returns CPU µs per message and messages per second. */
async function measure(count: number, concurrency: number, sendOne: (i: number) => Promise<void>) {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await sendOne(next++);
    }),
  );
  const wallNs = Number(process.hrtime.bigint() - started);
  const used = process.cpuUsage(cpu);
  const perMessage = (us: number) => Math.round((us / count) * 10) / 10;
  return {
    cpu_us_per_msg: perMessage(used.user + used.system),
    // The kernel's share (loopback TCP, epoll) shows how much of the floor is the machine rather than the client.
    cpu_user_us_per_msg: perMessage(used.user),
    cpu_system_us_per_msg: perMessage(used.system),
    msgs_per_s: Math.round(count / (wallNs / 1e9)),
  };
}

/** The SDK has no base-URL option; a RequestClient that rewrites scheme and host is the robust hook (docs/providers.md §0.1, §7.1). */
function sdkClientFor(info: TwilioFakeInfo) {
  const target = new URL(info.url);
  const Base = twilioSdk.RequestClient as unknown as typeof RequestClient;
  class ToFake extends Base {
    override request<T>(opts: RequestClient.RequestOptions<T>) {
      const uri = new URL(opts.uri);
      uri.protocol = target.protocol;
      uri.host = target.host;
      return super.request<T>({ ...opts, uri: uri.toString() });
    }
  }
  return twilioSdk(info.accountSid, info.authToken, { httpClient: new ToFake({ keepAlive: true }), autoRetry: false });
}

async function main(): Promise<void> {
  const count = option('count', 20_000);
  const sdkCount = option('sdk-count', count);
  const concurrency = option('concurrency', 50);
  const fake = await startTwilioFakeProcess();
  const { info } = fake;
  try {
    const config = twilioPlugin.configSchema.parse({
      type: 'twilio',
      account_sid: info.accountSid,
      auth_token: info.authToken,
      from: SENDER,
      base_url: info.url,
      max_concurrency: concurrency,
    });
    const plugin = twilioPlugin.create('twilio', config, { logger: pino({ level: 'silent' }), now: Date.now });
    const request = (i: number): SendRequest => ({
      smsId: `bench-${i}`,
      to: RECIPIENT,
      from: SENDER,
      text: `Bench message ${i}`,
      encoding: 'gsm7',
      segments: 1,
      callbackUrl: CALLBACK + i,
    });
    const ours = async (i: number) => {
      const result = await plugin.send(request(i), sendSignal());
      if (!result.ok) throw new Error(`plugin send failed: ${result.error}`);
    };
    // The floor on this machine: the same form POST through a bare undici Pool, no plugin around it.
    const bare = new Pool(info.url, { connections: concurrency });
    const path = `/2010-04-01/Accounts/${info.accountSid}/Messages.json`;
    const headers = {
      authorization: `Basic ${Buffer.from(`${info.accountSid}:${info.authToken}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    };
    const floor = async (i: number) => {
      const res = await bare.request({
        method: 'POST',
        path,
        headers,
        signal: sendSignal(),
        body: new URLSearchParams({ To: RECIPIENT, From: SENDER, Body: `Bench message ${i}`, StatusCallback: CALLBACK + i }).toString(),
      });
      JSON.parse(await res.body.text());
    };
    await measure(1_000, concurrency, floor);
    const floorResult = await measure(count, concurrency, floor);
    console.log(JSON.stringify({ bench: 'provider-client', client: 'bare undici Pool POST (floor)', count, concurrency, ...floorResult }));
    await bare.close();

    await measure(1_000, concurrency, ours); // warm-up: JIT and connections
    const oursResult = await measure(count, concurrency, ours);
    console.log(
      JSON.stringify({
        bench: 'provider-client',
        client: 'crm-sms-gateway twilio plugin (undici pool)',
        count,
        concurrency,
        ...oursResult,
        target_cpu_us_per_msg: 100,
      }),
    );
    await plugin.close?.();

    const sdk = sdkClientFor(info);
    const viaSdk = async (i: number) => {
      await sdk.messages.create({ to: RECIPIENT, from: SENDER, body: `Bench message ${i}`, statusCallback: CALLBACK + i });
    };
    await measure(1_000, concurrency, viaSdk);
    const sdkResult = await measure(sdkCount, concurrency, viaSdk);
    console.log(JSON.stringify({ bench: 'provider-client', client: `twilio SDK ${sdkVersion} messages.create`, count: sdkCount, concurrency, ...sdkResult }));
  } finally {
    await fake.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
