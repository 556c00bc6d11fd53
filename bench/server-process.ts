/**
 * The gateway under benchmark, in its own process (`node dist/src/cli.js serve`), so the client's CPU and the
 * server's never mix. Port 0 is discovered from the `gateway listening` log line; peak RSS is read from
 * /proc/<pid>/status (VmHWM) just before the server is stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

export const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const BIN = fileURLToPath(new URL('../src/bin.js', import.meta.url));
/** The environment that tells a probe preloaded through BENCH_SERVER_NODE_OPTIONS where to write. */
const PROBE_OUTPUTS = ['MEMORY_PROBE_OUT', 'STATEMENT_PROBE_OUT'];

/**
 * How the package's bin starts the gateway (its first line, src/bin.ts: the environment and the V8 flags operators
 * run with), so the server under benchmark uses the same memory settings: without them a single-mode run peaked at
 * 261–275 MiB where the bin's process, measured by ../shared/bench (which starts the bin), peaked at 181–188 MiB.
 */
function binStart(): { env: Record<string, string>; nodeArgs: string[] } {
  const first = readFileSync(BIN, 'utf8').split('\n', 1)[0] ?? '';
  const words = first
    .replace(/^#!\S*env\s+-S\s+/, '')
    .split(/\s+/)
    .filter(Boolean);
  const node = words.indexOf('node');
  const env = Object.fromEntries(words.slice(0, Math.max(node, 0)).map((w) => w.split('=', 2) as [string, string]));
  return { env, nodeArgs: node < 0 ? [] : words.slice(node + 1) };
}
export const BENCH_API_KEY = 'bench-crm-key';

/** USER_HZ: the unit of /proc/<pid>/stat times, 100 on every mainstream Linux build. */
const CLOCK_TICKS_PER_SECOND = 100;

export type ConfigDoc = Record<string, any>;

export interface ServerOptions {
  /** The config to serve, given the run's fresh temporary directory (for the SQLite file). */
  config: (dir: string) => ConfigDoc;
  /** Directory for a V8 CPU profile of the server (`node --cpu-prof`), written when it exits. */
  cpuProfDir?: string;
}

export interface ServerProcess {
  url: string;
  pid: number;
  dir: string;
  /** Peak resident set size so far, in MiB (VmHWM; Linux only). */
  peakRssMb(): number | null;
  /** CPU time (user + system) the server has used so far, in ms (Linux only). */
  cpuMs(): number | null;
  stop(): Promise<void>;
}

/** A config for the sandbox on a fresh temporary SQLite ledger; modes adjust it before the server starts. */
export function baseConfig(dir: string): ConfigDoc {
  return {
    // A bench key and a loopback URL: development runs them with a warning (production would exit 78).
    server: { environment: 'development', host: '127.0.0.1', port: 0 },
    database: { url: `sqlite:${join(dir, 'ledger.db')}` },
    auth: { mode: 'api_key', api_keys: [BENCH_API_KEY] },
    // No receipts: the send path measured alone. (Receipts due an hour on were held in the sandbox, inside the
    // served process, and added some 9 MiB to a single run's peak RSS: bench/README.md "The sandbox's held receipts".)
    providers: { sandbox: { type: 'sandbox', receipts: false } },
    // info: the `gateway listening` line carries the url; the send path logs nothing per message at this level.
    log: { level: 'info' },
  };
}

/** Peak resident set size of a process so far, in MiB (VmHWM; Linux only, null elsewhere or once it exited). */
export function procPeakRssMb(pid: number): number | null {
  try {
    const kb = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round((Number(kb) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a process has used so far, in ms (Linux only, null elsewhere or once it exited). */
export function procCpuMs(pid: number): number | null {
  try {
    // Fields after the command name (which is in parentheses and may hold spaces): utime and stime are 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Resolves with the url once the gateway has logged `gateway listening`. */
function waitForListening(child: ChildProcess, stderr: () => string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => fail(new Error(`the gateway did not log its url within ${timeoutMs} ms`)), timeoutMs);
    const onExit = (code: number | null) => fail(new Error(`the gateway exited (${code}) before listening:\n${stderr()}`));
    function fail(error: Error) {
      clearTimeout(timer);
      child.off('exit', onExit);
      reject(error);
    }
    child.on('exit', onExit);
    child.stdout!.on('data', (chunk: string) => {
      buffered += chunk;
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (!line.startsWith('{')) continue;
        const record = JSON.parse(line) as { msg?: string; url?: string };
        if (record.msg === 'gateway listening' && record.url) {
          clearTimeout(timer);
          child.off('exit', onExit);
          resolve(record.url);
        }
      }
    });
  });
}

/** The gateways this process started and has not stopped yet, each with its directory. */
const running = new Map<ChildProcess, string>();
let killsOnSignal = false;

/**
 * Keeps `child` in `running` until it exits. A bench stopped by SIGINT or SIGTERM kills them first: by default the
 * signal ends this process alone, and its gateway went on serving its ledger (inside a memory group, beside the next
 * runs: bench/README.md "The relay's claim without waits").
 */
function stopWithThisProcess(child: ChildProcess, dir: string): void {
  if (!killsOnSignal)
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const)
      process.once(signal, () => {
        for (const [c, d] of running) {
          c.kill('SIGKILL');
          rmSync(d, { recursive: true, force: true });
        }
        process.exit(code);
      });
  killsOnSignal = true;
  running.set(child, dir);
  child.once('exit', () => running.delete(child));
}

export async function startServer(options: ServerOptions): Promise<ServerProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-bench-'));
  const configFile = join(dir, 'config.yaml');
  writeFileSync(configFile, YAML.stringify(options.config(dir)));

  const bin = binStart();
  const nodeArgs = [...bin.nodeArgs, ...(options.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`] : [])];
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // BENCH_SERVER_NODE_OPTIONS: node options for the server alone (a --require'd tracer, say), never the client's;
    // the preloaded probes' output files with them (memory-probe.ts, statement-probe.ts).
    env: {
      PATH: process.env.PATH ?? '',
      ...bin.env,
      ...(process.env.BENCH_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS } : {}),
      ...Object.fromEntries(PROBE_OUTPUTS.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : []))),
    },
  });
  stopWithThisProcess(child, dir);
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-10_000)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));

  let url: string;
  try {
    url = await waitForListening(child, () => stderr, 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  // serve installs its SIGTERM handler just after logging the url; one answered request proves it has.
  await fetch(`${url}/healthz`).then((r) => r.arrayBuffer());

  return {
    url,
    pid: child.pid!,
    dir,
    peakRssMb: () => procPeakRssMb(child.pid!),
    cpuMs: () => procCpuMs(child.pid!),
    async stop() {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
