/** Runs the built CLI (dist/src/cli.js) as a child process, the way cron and operators do. */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';

export const CLI = join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli.js');

export function writeConfig(dir: string, document: Record<string, unknown>, name = 'config.yaml'): string {
  const file = join(dir, name);
  writeFileSync(file, YAML.stringify(document));
  return file;
}

export function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts `serve` and resolves with its URL once it logs that it listens. */
/**
 * `nodeArgs` go before the script (e.g. `--import` a loader hook); `env` is added to this process's; `startTimeoutMs`
 * (15 s) bounds the wait for the "listening" line.
 */
export function startServe(
  configFile: string,
  options: { nodeArgs?: string[]; env?: Record<string, string>; startTimeoutMs?: number } = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI, 'serve', '--config', configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    let output = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${output}`)), options.startTimeoutMs ?? 15_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1]!, output: () => output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}:\n${output}`)));
  });
}
