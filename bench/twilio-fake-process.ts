/**
 * The Twilio fake (test/fakes/twilio.ts) in a child process of its own, so its CPU is neither the client's nor the
 * gateway's. Shared by provider-client.ts (creates only) and run.ts --provider twilio, where the fake also posts
 * signed status callbacks to each message's StatusCallback URL after answering the create, as Twilio does.
 *
 * The child is this module, forked; it keeps counters instead of the fake's per-call records, so its memory stays
 * flat over long runs, and answers `stats` requests over IPC.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { procCpuMs, procPeakRssMb } from './server-process.js';

export interface TwilioFakeInfo {
  url: string;
  accountSid: string;
  authToken: string;
}

export interface TwilioFakeStats {
  /** Create calls that passed authentication. */
  creates: number;
  /** Status callbacks the gateway answered, and those of them it did not answer with a 2xx. */
  callbacksAnswered: number;
  callbacksRefused: number;
}

export interface TwilioFakeProcess {
  info: TwilioFakeInfo;
  pid: number;
  /** CPU (user + system) the fake's process has used so far, in ms (Linux only). */
  cpuMs(): number | null;
  peakRssMb(): number | null;
  stats(): Promise<TwilioFakeStats>;
  /** Waits for callbacks in flight, then ends the child. */
  stop(): Promise<void>;
}

const MODULE = fileURLToPath(import.meta.url);

/** `callbackStatuses`: what the fake posts to each created message's StatusCallback (none by default). */
export async function startTwilioFakeProcess(options: { callbackStatuses?: string[] } = {}): Promise<TwilioFakeProcess> {
  const child = fork(MODULE, [JSON.stringify(options.callbackStatuses ?? [])], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const [info] = (await Promise.race([
    once(child, 'message'),
    exited.then(([code]) => Promise.reject(new Error(`the Twilio fake exited (${code}) before listening`))),
  ])) as [TwilioFakeInfo];
  return {
    info,
    pid: child.pid!,
    cpuMs: () => procCpuMs(child.pid!),
    peakRssMb: () => procPeakRssMb(child.pid!),
    async stats() {
      const answer = once(child, 'message');
      child.send('stats');
      return (await answer)[0] as TwilioFakeStats;
    },
    async stop() {
      if (child.connected) child.disconnect();
      await exited;
    },
  };
}

async function runChild(callbackStatuses: string[]): Promise<void> {
  // The fakes are compiled with the rest (tsconfig includes test/fakes) and imported at run time only.
  const { startTwilioFake } = (await import('../test/fakes/twilio.js')) as typeof import('../test/fakes/twilio.js');
  const fake = await startTwilioFake({ callbackStatuses });
  const stats: TwilioFakeStats = { creates: 0, callbacksAnswered: 0, callbacksRefused: 0 };
  fake.creates.push = () => ++stats.creates;
  fake.callbacks.push = (...callbacks) => {
    for (const c of callbacks) {
      stats.callbacksAnswered++;
      if (c.status < 200 || c.status >= 300) stats.callbacksRefused++;
    }
    return stats.callbacksAnswered;
  };
  process.on('message', (message) => message === 'stats' && process.send!(stats));
  process.on('disconnect', () => void fake.close().then(() => process.exit(0)));
  process.send!({ url: fake.url, accountSid: fake.accountSid, authToken: fake.authToken } satisfies TwilioFakeInfo);
}

if (process.argv[1] === MODULE) void runChild(JSON.parse(process.argv[2] ?? '[]') as string[]);
