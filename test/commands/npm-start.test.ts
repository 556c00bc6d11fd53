/**
 * The README's quick start as an operator runs it: `npm start` (the exact script of package.json, with the shipped
 * config.yaml) on a PORT other than 8080 and no PUBLIC_URL, the README's curl request, and the conversion that the
 * sandbox's receipt causes, posted to a CRM webhook; then SIGTERM to the PID of `npm start`, as a supervisor or a
 * shell's `kill` sends it, after which no process of its group may be left (`serve` used to outlive npm).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/source-files.js';
import { waitFor } from '../helpers/gateway.js';
import { testDatabaseUrl } from '../helpers/database.js';

/** The README's "send a message as the CRM would" request: path, headers and body of its curl line. */
function readmeCurl(): { path: string; headers: Record<string, string>; body: string } {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const command = /^curl -s localhost:8080(\/\S+)((?:.|\\\n)*?)$/m.exec(readme.replace(/\\\n\s*/g, ' '));
  if (!command) throw new Error('README.md has no `curl -s localhost:8080/…` line');
  const headers = Object.fromEntries([...command[2]!.matchAll(/-H '([^:']+): ([^']*)'/g)].map((m) => [m[1]!, m[2]!]));
  const body = /-d '([^']*)'/.exec(command[2]!)?.[1];
  if (!body) throw new Error('the README curl line has no -d body');
  return { path: command[1]!, headers, body };
}

/** A free TCP port other than 8080, taken from the kernel and released for the gateway. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port === 8080 ? freePort() : port;
}

/** Whether any process of the group `pgid` is still there (signal 0 only checks). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

describe('npm start (README "Two commands")', () => {
  let dir: string;
  let crm: Server;
  let crmUrl: string;
  const conversions: unknown[] = [];
  let npm: ChildProcess | undefined;
  let output = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-npm-start-'));
    crm = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        if (req.url === '/sms/conversion') conversions.push(...(JSON.parse(body) as unknown[]));
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => crm.listen(0, '127.0.0.1', resolve));
    crmUrl = `http://127.0.0.1:${(crm.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    // A failed assertion must not leave the gateway running: the whole group, by its id.
    if (npm?.pid && groupAlive(npm.pid)) process.kill(-npm.pid, 'SIGKILL');
    await new Promise<void>((resolve) => crm.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves on PORT with public_url following it, so the sandbox receipt becomes a conversion; SIGTERM to npm leaves no process', async () => {
    const port = await freePort();
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: testDatabaseUrl(dir),
      CRM_WEBHOOK_URL: crmUrl,
      LOG_LEVEL: 'info',
    };
    delete env.PUBLIC_URL;
    delete env.GATEWAY_ENV;
    // Its own process group (pgid = npm's pid), so what npm starts can be found, and killed if the test fails.
    npm = spawn('npm', ['start'], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    npm.stdout!.on('data', (d) => (output += d));
    npm.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => npm!.on('exit', (code) => resolve(code)));

    const listening = await waitFor(() => /"public_url":"([^"]+)"/.exec(output), 20_000, `serve's start line:\n${output}`);
    expect(listening[1]).toBe(`http://127.0.0.1:${port}`);

    const request = readmeCurl();
    expect(request.path).toBe('/channels/sms/single');
    const sent = await fetch(`http://127.0.0.1:${port}${request.path}`, { method: 'POST', headers: request.headers, body: request.body });
    expect(sent.status).toBe(200);
    const { sms_id } = (await sent.json()) as { sms_id: string };
    const conversion = await waitFor(() => conversions.find((c) => (c as { sms_id?: string }).sms_id === sms_id), 20_000, 'the conversion');
    expect(conversion).toMatchObject({ sms_id, delivery_status: 'delivered' });

    const pgid = npm.pid!;
    process.kill(pgid, 'SIGTERM');
    // npm exits once its child did; then nothing of the group may be left (an orphaned serve keeps the group alive).
    await exited;
    await waitFor(() => !groupAlive(pgid), 10_000, `no process left in group ${pgid}`);
    expect(output).toContain('"msg":"shutting down"');
  }, 60_000);
});
