#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 --max-old-space-size=1536
// The setting and the flags above, also the image's (Dockerfile), for a process started as npx, cron or a shell starts
// it (bench/README.md "Memory"). Each measured: MALLOC_ARENA_MAX=2: glibc gives each thread that allocates an arena
// of its own (V8's 4 workers, libuv's 4, the checkpoint thread), each keeps what it once held, and 2 arenas took
// 15–25 MiB off the peaks at the same submit rate. --max-semi-space-size=8: V8 sizes the young generation from the
// machine's memory; on a 24 GiB host Node 24 allowed it 2 × 64 MiB and filled it under load (113 MiB of a 296 MiB
// single-mode peak); with 2 × 8 MiB the peak was 194–213 MiB at the same CPU per message. --max-old-space-size=1536
// is not there as a ceiling (the gateway's live heap is 35–75 MiB) but for the growth it sets: with V8's default on
// such a host (4 GiB) the old generation grew to 4 × what the last full collection kept (35.5 → 141 MiB, one full
// collection in a 20,000-message batch run, --trace-gc), with a ceiling under 2 GiB to about 2 × (36.5 → 83 MiB,
// three), at the same CPU per message: batch peaks 220–232 MiB against 261–282. 2048 already grew 4 ×. The image's
// 384 grows less still, for its memory limit. All of these win over NODE_OPTIONS and the environment; `node
// dist/src/cli.js` reads no first line.
/**
 * The package's bin (`npx crm-sms-gateway …`, cron lines, scripts): runs src/cli.ts on Node 22.19 or newer, which
 * undici 8 needs (package.json engines). The machine's node may be older (Node 20 on many servers): then the command
 * goes through the same shim as `npm start` (.ci/node24: Node 24 from the npm registry, kept in .node24/ of the
 * checkout, or NODE24_DIR), or, where there is no shim (an installed package), says in one line what it needs.
 * Nothing here may need a recent Node: this file only looks at the version and hands over, with the V8 flags it
 * was started with.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const NEEDED = [22, 19] as const;

function recentEnough(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > NEEDED[0] || (major === NEEDED[0] && minor >= NEEDED[1]);
}

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, 'cli.js');
// dist/src/bin.js: the checkout (or package) root is two levels up.
const shim = join(here, '..', '..', '.ci', 'node24');

if (recentEnough(process.versions.node)) {
  await import('./cli.js');
} else if (existsSync(shim)) {
  const child = spawn('sh', [shim, 'node', ...process.execArgv, cli, ...process.argv.slice(2)], { stdio: 'inherit' });
  // serve stops in order on SIGTERM or SIGINT: whoever signals this process (Kubernetes, systemd, cron's kill) reaches it.
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, forward(signal));
  child.on('error', (error) => {
    console.error(`crm-sms-gateway: cannot run ${shim}: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (!signal) process.exit(code ?? 1);
    // Ended by a signal: end the same way, so a supervisor sees what the command saw (exit 1 if it does not end us).
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(1), 1_000);
  });
} else {
  console.error(
    `crm-sms-gateway needs Node.js ${NEEDED.join('.')} or newer and this is ${process.version}: install Node 24 (nodejs.org, or \`npm install --prefix ~/.node24 node@24\` and put ~/.node24/node_modules/node/bin first on PATH)`,
  );
  process.exit(1);
}
