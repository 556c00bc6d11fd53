/**
 * The floors under the single-mode figures of run.ts: the same load (the same message bodies, the same lean
 * client, 50 keep-alive connections) against servers that do less and less of the gateway's work, so a
 * figure of the gateway can be read against what this machine gives the layers it stands on.
 *
 *   node          node:http alone: read the body, JSON.parse it, answer {"sms_id"}
 *   hono          the same through Hono on @hono/node-server (the gateway's HTTP stack)
 *   hono-sqlite   hono, plus what "committed before the answer" costs at least: each message inserted into a
 *                 SQLite table in WAL mode (synchronous=NORMAL, an index on a text key, as the ledger's activity
 *                 key), requests of one event-loop turn sharing a transaction
 *
 * Usage: node dist/bench/http-floor.js [--floor node|hono|hono-sqlite]... [--messages N] [--connections N]
 * Prints one JSON line per floor: {floor, messages, msgs_per_s, p50_ms, p99_ms, server_cpu_us_per_msg,
 * client_cpu_us_per_msg}. The server runs in a child process (this file, with --serve), as the gateway does.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serve } from '@hono/node-server';
import BetterSqlite3 from 'better-sqlite3';
import { Hono } from 'hono';
import { LoadClient } from './load-client.js';
import { procCpuMs } from './server-process.js';
import { drive, latencySummary, singleMessage } from './workload.js';

const FLOORS = ['node', 'hono', 'hono-sqlite'] as const;
type Floor = (typeof FLOORS)[number];

/** A transaction per event-loop turn: the inserts queued during one turn commit together. */
function groupCommitter(file: string) {
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('create table messages (sms_id text primary key, activity_key text not null unique, body text not null)');
  const insert = db.prepare('insert into messages (sms_id, activity_key, body) values (?, ?, ?)');
  let queue: Array<{ row: [string, string, string]; done: () => void }> = [];
  const commit = db.transaction((rows: typeof queue) => rows.forEach(({ row }) => insert.run(...row)));
  return (row: [string, string, string]) =>
    new Promise<void>((resolve) => {
      if (queue.length === 0) {
        setImmediate(() => {
          const batch = queue;
          queue = [];
          commit(batch);
          batch.forEach((q) => q.done());
        });
      }
      queue.push({ row, done: resolve });
    });
}

async function runServer(floor: Floor, dir: string): Promise<void> {
  const announce = (port: number) => process.stdout.write(`${JSON.stringify({ port })}\n`);
  if (floor === 'node') {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const answer = JSON.stringify({ sms_id: randomUUID() });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) }).end(answer);
      });
    });
    server.listen(0, '127.0.0.1', () => announce((server.address() as AddressInfo).port));
    return;
  }
  const commit = floor === 'hono-sqlite' ? groupCommitter(join(dir, 'floor.db')) : undefined;
  const app = new Hono().post('/channels/sms/single', async (c) => {
    const body = await c.req.text();
    const message = JSON.parse(body) as { activity: { id: string } };
    const smsId = randomUUID();
    await commit?.([smsId, message.activity.id, body]);
    return c.json({ sms_id: smsId });
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => announce(info.port));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

async function measure(floor: Floor, messages: number, connections: number, warmup: number) {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sms-floor-'));
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', floor, '--dir', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the ${floor} floor server exited (${code})`)));
      child.stdout!.once('data', (line: Buffer) => resolve((JSON.parse(line.toString('utf8')) as { port: number }).port));
    });
    const client = new LoadClient([`http://127.0.0.1:${port}`], connections, { 'content-type': 'application/json' });
    const run = (prefix: string, count: number) =>
      drive(count, connections, async (i) => {
        const started = performance.now();
        const res = await client.post('/channels/sms/single', JSON.stringify(singleMessage(`${prefix}-${i}`, i, 'sandbox')));
        if (res.status !== 200) throw new Error(`${floor} ${i}: ${res.status} ${res.body}`);
        return performance.now() - started;
      });
    await run('warmup', warmup);
    const cpuBefore = procCpuMs(child.pid!);
    const clientBefore = process.cpuUsage();
    const measured = await run('measured', messages);
    const cpuAfter = procCpuMs(child.pid!);
    const clientCpu = process.cpuUsage(clientBefore);
    client.close();
    return {
      floor,
      messages,
      msgs_per_s: Math.round(messages / measured.seconds),
      ...latencySummary(measured.latenciesMs),
      server_cpu_us_per_msg: cpuBefore === null || cpuAfter === null ? null : Math.round(((cpuAfter - cpuBefore) * 1000) / messages),
      client_cpu_us_per_msg: Math.round((clientCpu.user + clientCpu.system) / messages),
    };
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      serve: { type: 'string' },
      dir: { type: 'string' },
      floor: { type: 'string', multiple: true },
      messages: { type: 'string', default: '20000' },
      connections: { type: 'string', default: '50' },
      warmup: { type: 'string', default: '1000' },
    },
  });
  if (values.serve) return runServer(values.serve as Floor, values.dir!);
  const floors = (values.floor ?? [...FLOORS]) as Floor[];
  for (const f of floors) if (!FLOORS.includes(f)) throw new Error(`unknown floor "${f}" (floors: ${FLOORS.join(', ')})`);
  for (const floor of floors) {
    console.log(JSON.stringify(await measure(floor, Number(values.messages), Number(values.connections), Number(values.warmup))));
  }
}

main().catch((error: unknown) => {
  console.error(`http-floor: ${(error as Error)?.stack ?? String(error)}`);
  process.exit(1);
});
