/**
 * Sends through SIGKILLs on two instances (docs/crash-windows.md "Sends"), an outside review's method:
 * two `crm-sms-gateway serve` processes on one ledger (a SQLite file both open, or a database of its own on the
 * PostgreSQL server named by --database) send `--activities` single SMS to the Twilio fake (test/fakes/twilio.ts, in
 * this process), each to a number of its own. The CRM here sends each activity.id to one instance and retries it on
 * the other after any answer but 200 or 400 (a 503, a connection cut by a kill), until it has its answer. One
 * instance is killed with SIGKILL `--kills` times (the two in turn), while sends are under way at the fake (it
 * answers each create `--answer-ms` after making the message), and started again at once. `--lease` and `--sweep` set
 * sms.dispatch_lease and delivery.sweep_interval (`default`: the configuration's, 5m and 1m).
 * Prints one JSON line: messages the fake made per activity (twice: `sent_twice`; never: `lost`), the lookups it
 * answered, the retries, and how long the run took.
 *
 *   npm run build && node dist/bench/send-crash.js [--activities 5000] [--kills 3] [--database postgres://…]
 *     [--lease 5s|default] [--sweep default] [--answer-ms 300]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import YAML from 'yaml';
import { startTwilioFake } from '../test/fakes/twilio.js';
import { createBenchDatabase } from './database.js';
import { BENCH_API_KEY, baseConfig, CLI } from './server-process.js';

export interface SendCrashOptions {
  activities: number;
  kills: number;
  /** PostgreSQL server URL, for a database created for the run; absent: one SQLite file. */
  database?: string | undefined;
  /** A ledger to use as it is instead (a test's), left in place after the run. */
  ledgerUrl?: string | undefined;
  /** The built CLI to run (default: the one beside this file's build). */
  cli?: string | undefined;
  /** sms.dispatch_lease, or undefined for the configuration's default. */
  lease?: string | undefined;
  /** delivery.sweep_interval, or undefined for the default. */
  sweep?: string | undefined;
  answerMs: number;
  /** Requests the CRM has open at once. */
  concurrency: number;
}

export interface SendCrashResult {
  database: 'sqlite' | 'postgres';
  activities: number;
  kills: number;
  lease: string;
  sweep: string;
  sent_once: number;
  sent_twice: number;
  lost: number;
  /** Activities answered with more than one sms_id (each must have exactly one). */
  sms_ids_differ: number;
  lookups: number;
  retries: number;
  seconds: number;
}

interface Instance {
  child: ChildProcess;
  url: string;
  pool: Pool;
}

function startInstance(cli: string, configFile: string): Promise<Instance> {
  const child = spawn(process.execPath, [cli, 'serve', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '' } });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${output.slice(-2000)}`)), 30_000);
    const onData = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000);
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        child.stderr!.resume();
        resolve({ child, url: match[1]!, pool: new Pool(match[1]!, { connections: 64 }) });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', () => undefined);
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}:\n${output.slice(-2000)}`)));
  });
}

const recipientOf = (n: number) => `+4477009${String(n).padStart(5, '0')}`;

export async function runSendCrash(options: SendCrashOptions): Promise<SendCrashResult> {
  const twilio = await startTwilioFake({ answerDelayMs: options.answerMs });
  const database = options.ledgerUrl
    ? { url: options.ledgerUrl, kind: options.ledgerUrl.startsWith('sqlite:') ? ('sqlite' as const) : ('postgres' as const), drop: async () => undefined }
    : await createBenchDatabase(options.database);
  const cli = options.cli ?? CLI;
  const dir = join(tmpdir(), `crm-sms-gw-send-crash-${process.pid}-${Date.now().toString(36)}`);
  const { mkdirSync, rmSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, 'config.yaml');
  const base = baseConfig(dir);
  writeFileSync(
    configFile,
    YAML.stringify({
      ...base,
      database: { url: database.url },
      // A short lease needs a provider call and a batch that end sooner (src/config/schema.ts): 2 s each here.
      sms: options.lease ? { dispatch_lease: options.lease, send_timeout: '2s', batch_deadline: '2s' } : {},
      delivery: { ...(options.sweep ? { sweep_interval: options.sweep } : {}) },
      providers: {
        twilio: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilio.url },
      },
    }),
  );
  const instances: Instance[] = [];
  const started = performance.now();
  try {
    instances.push(await startInstance(cli, configFile), await startInstance(cli, configFile));
    const smsIds = new Map<number, Set<string>>();
    let retries = 0;
    const send = async (n: number, instance: number): Promise<'done' | 'again'> => {
      const target = instances[instance % 2]!;
      try {
        const res = await target.pool.request({
          method: 'POST',
          path: '/channels/sms/single',
          headers: { 'content-type': 'application/json', 'x-api-key': BENCH_API_KEY },
          body: JSON.stringify({
            activity: { id: `crash-${n}`, brand_id: 7, user_id: `u-${n}`, activity_id: 11, action_group_id: 3, trigger_hash: 'th', action_id: 5 },
            content: `Your bonus ${n} is waiting`,
            recipient: recipientOf(n),
            sender_name: null,
            provider_name: 'twilio',
            encoding: 'auto',
          }),
        });
        const body = (await res.body.json()) as { sms_id?: string; error?: string };
        if (res.statusCode === 200) {
          (smsIds.get(n) ?? smsIds.set(n, new Set()).get(n)!).add(body.sms_id!);
          return 'done';
        }
        if (res.statusCode === 400) throw new Error(`activity ${n} refused: ${body.error}`);
        return 'again';
      } catch (error) {
        if ((error as Error).message.startsWith('activity')) throw error;
        return 'again';
      }
    };
    let next = 0;
    let settled = 0;
    const client = async () => {
      while (next < options.activities) {
        const n = next++;
        // The first attempt to one instance, each retry to the other, as a CRM behind a balancer might.
        for (let attempt = 0; ; attempt++) {
          if ((await send(n, n + attempt)) === 'done') break;
          retries++;
          await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * (attempt + 1))));
        }
        settled++;
      }
    };
    let failed: unknown;
    const clients = Promise.all(Array.from({ length: options.concurrency }, client)).catch((error: unknown) => {
      failed = error;
    });
    for (let k = 1; k <= options.kills; k++) {
      // Each kill while sends are under way at the fake (made there, not yet answered).
      const at = Math.floor((options.activities * k) / (options.kills + 1));
      while (twilio.creates.length < at && failed === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
      // A refused activity ends the run; the instances are stopped below, not left running.
      if (failed !== undefined) break;
      const victim = k % 2;
      const old = instances[victim]!;
      old.child.kill('SIGKILL');
      await once(old.child, 'exit');
      void old.pool.destroy();
      instances[victim] = await startInstance(cli, configFile);
    }
    await clients;
    if (failed !== undefined) throw failed;
    if (settled !== options.activities) throw new Error(`${settled} of ${options.activities} settled`);
    const made = new Map<string, number>();
    for (const c of twilio.creates) if (c.sid) made.set(c.form.To!, (made.get(c.form.To!) ?? 0) + 1);
    let once_ = 0;
    let twice = 0;
    let lost = 0;
    for (let n = 0; n < options.activities; n++) {
      const count = made.get(recipientOf(n)) ?? 0;
      if (count === 1) once_++;
      else if (count === 0) lost++;
      else twice++;
    }
    return {
      database: database.kind,
      activities: options.activities,
      kills: options.kills,
      lease: options.lease ?? 'default',
      sweep: options.sweep ?? 'default',
      sent_once: once_,
      sent_twice: twice,
      lost,
      sms_ids_differ: [...smsIds.values()].filter((s) => s.size !== 1).length,
      lookups: twilio.lookups.length,
      retries,
      seconds: Math.round((performance.now() - started) / 100) / 10,
    };
  } finally {
    for (const i of instances) {
      i.child.kill('SIGKILL');
      await i.pool.destroy();
    }
    await twilio.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values: args } = parseArgs({
    options: {
      activities: { type: 'string', default: '5000' },
      kills: { type: 'string', default: '3' },
      database: { type: 'string' },
      lease: { type: 'string', default: '5s' },
      sweep: { type: 'string', default: 'default' },
      'answer-ms': { type: 'string', default: '300' },
      concurrency: { type: 'string', default: '64' },
    },
  });
  const result = await runSendCrash({
    activities: Number(args.activities),
    kills: Number(args.kills),
    database: args.database,
    lease: args.lease === 'default' ? undefined : args.lease,
    sweep: args.sweep === 'default' ? undefined : args.sweep,
    answerMs: Number(args['answer-ms']),
    concurrency: Number(args.concurrency),
  });
  console.log(JSON.stringify({ ...result, load1: Math.round(loadavg()[0]! * 100) / 100 }));
}
