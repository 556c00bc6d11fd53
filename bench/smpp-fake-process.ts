/**
 * The fake SMSC (test/fakes/smpp.ts) in a child process of its own, so its CPU is neither the client's nor the
 * gateway's (as twilio-fake-process.ts does for Twilio). With receipts, it sends one `DELIVRD` deliver_sm per
 * submit_sm right after the submit_sm_resp, on the bind the message came in on, as an SMSC does.
 *
 * The child keeps counters instead of the fake's per-PDU records, so its memory stays flat over long runs, and
 * answers `stats` requests over IPC.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { procCpuMs, procPeakRssMb } from './server-process.js';

export interface SmppFakeInfo {
  host: string;
  port: number;
  systemId: string;
  password: string;
}

export interface SmppFakeStats {
  submits: number;
  /** Receipts the gateway acknowledged, and those it answered with a non-zero command_status. */
  receiptsAnswered: number;
  receiptsRefused: number;
  maxOutstanding: number;
  /** Binds currently up (one per gateway process). */
  bound: number;
}

export interface SmppFakeProcess {
  info: SmppFakeInfo;
  cpuMs(): number | null;
  peakRssMb(): number | null;
  stats(): Promise<SmppFakeStats>;
  stop(): Promise<void>;
}

const MODULE = fileURLToPath(import.meta.url);

export async function startSmppFakeProcess(options: { receipts: boolean }): Promise<SmppFakeProcess> {
  const child = fork(MODULE, [options.receipts ? 'receipts' : 'none'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const [info] = (await Promise.race([
    once(child, 'message'),
    exited.then(([code]) => Promise.reject(new Error(`the SMPP fake exited (${code}) before listening`))),
  ])) as [SmppFakeInfo];
  return {
    info,
    cpuMs: () => procCpuMs(child.pid!),
    peakRssMb: () => procPeakRssMb(child.pid!),
    async stats() {
      const answer = once(child, 'message');
      child.send('stats');
      return (await answer)[0] as SmppFakeStats;
    },
    async stop() {
      if (child.connected) child.disconnect();
      await exited;
    },
  };
}

async function runChild(receipts: boolean): Promise<void> {
  const { startSmppFake } = (await import('../test/fakes/smpp.js')) as typeof import('../test/fakes/smpp.js');
  // Ids that no earlier run gave, as a real SMSC's never repeat: a run on a ledger that earlier runs filled (--ledger)
  // must not find their messages by its receipts' ids.
  const fake = await startSmppFake({ receipts: receipts ? 'after' : 'none', firstMessageId: Date.now() * 1_000 });
  const stats: SmppFakeStats = { submits: 0, receiptsAnswered: 0, receiptsRefused: 0, maxOutstanding: 0, bound: 0 };
  fake.submits.push = () => ++stats.submits;
  fake.receiptAnswers.push = (...statuses) => {
    for (const s of statuses) {
      stats.receiptsAnswered++;
      if (s !== 0) stats.receiptsRefused++;
    }
    return stats.receiptsAnswered;
  };
  process.on('message', (message) => message === 'stats' && process.send!({ ...stats, maxOutstanding: fake.maxOutstanding, bound: fake.boundSessions() }));
  process.on('disconnect', () => void fake.close().then(() => process.exit(0)));
  process.send!({ host: fake.host, port: fake.port, systemId: fake.systemId, password: fake.password } satisfies SmppFakeInfo);
}

if (process.argv[1] === MODULE) void runChild(process.argv[2] === 'receipts');
