/**
 * Top self-time functions of a V8 CPU profile (`node --cpu-prof`, or `npm run bench -- --cpu-prof DIR`):
 *   node dist/bench/profile-top.js FILE.cpuprofile [N]
 * Prints one line per function: self ms, share of all samples, name and location (trimmed to the package or file).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function where(url: string, line: number): string {
  if (!url) return '';
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  const path = inPackage ? `${inPackage[1]}:${inPackage[2]}` : url.replace(/^file:\/\/.*?\/dist\//, 'dist/');
  return `${path}:${line + 1}`;
}

export function topSelfTime(profile: Profile, count: number): Array<{ name: string; ms: number; share: number }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'} ${where(url, lineNumber)}`.trim();
    const delta = profile.timeDeltas[i] ?? 0;
    selfUs.set(key, (selfUs.get(key) ?? 0) + delta);
    total += delta;
  });
  return [...selfUs]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: Math.round((us / total) * 1000) / 10 }));
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const [file, n] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node dist/bench/profile-top.js FILE.cpuprofile [N]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  for (const row of topSelfTime(profile, Number(n ?? 10))) console.log(`${String(row.ms).padStart(7)} ms ${String(row.share).padStart(5)}%  ${row.name}`);
}
