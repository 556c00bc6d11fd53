/**
 * Where a gateway's peak resident memory goes, sampled from inside the served process (bench/README.md "Memory").
 * Preloaded into `serve` through NODE_OPTIONS, so any build can be measured under any benchmark:
 *
 *   MEMORY_PROBE_OUT=/tmp/peak.json NODE_OPTIONS="--import=$PWD/dist/bench/memory-probe.js" <the benchmark>
 *
 * Every 100 ms it reads VmRSS; whenever the RSS is 1 MiB or more above the last peak it takes a full sample
 * (process.memoryUsage(), v8.getHeapSpaceStatistics(), /proc/self/smaps grouped, the threads by name) and writes it
 * to MEMORY_PROBE_OUT, so the file holds the sample at the run's peak. Idle in any other process (npx, the load
 * client, the CRM sink): only a process whose arguments include `serve` samples.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';

const out = process.env.MEMORY_PROBE_OUT;
const MiB = 1024 * 1024;
const round = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;

function statusKiB(key: string): number {
  const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : 0;
}

interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  path: string;
  rssKiB: number;
  anonKiB: number;
}

function readMappings(): Mapping[] {
  const mappings: Mapping[] = [];
  let current: Mapping | undefined;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      current = { start: BigInt(`0x${header[1]}`), end: BigInt(`0x${header[2]}`), perms: header[3]!, path: header[4]!, rssKiB: 0, anonKiB: 0 };
      mappings.push(current);
      continue;
    }
    const field = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line);
    if (field && current) {
      if (field[1] === 'Rss') current.rssKiB = Number(field[2]);
      else current.anonKiB = Number(field[2]);
    }
  }
  return mappings;
}

const ARENA = 64n * BigInt(MiB);

/**
 * Groups the mappings' RSS. Anonymous mappings carry no name, so they are told apart by shape: glibc puts a thread's
 * stack right above a one-page `---p` guard; a malloc arena is a 64 MiB-aligned reservation whose used part is
 * `rw-p` and the rest `---p`. What is left anonymous is V8's heap pages (and any other mmap).
 */
function groupMappings(mappings: Mapping[]): Record<string, number> {
  const groups: Record<string, number> = {};
  const add = (group: string, kib: number) => {
    groups[group] = (groups[group] ?? 0) + kib;
  };
  for (const [i, m] of mappings.entries()) {
    const before = mappings[i - 1];
    const after = mappings[i + 1];
    if (m.path.endsWith('/node') || m.path.endsWith('/nodejs')) add('node binary', m.rssKiB);
    else if (m.path.endsWith('.node')) add('native addons (.node)', m.rssKiB);
    else if (/\.so(\.|$)/.test(m.path)) add('shared libraries', m.rssKiB);
    else if (m.path === '[heap]') add('malloc: brk heap', m.rssKiB);
    else if (m.path === '[stack]') add('main thread stack', m.rssKiB);
    else if (m.path.startsWith('[')) add(`other ${m.path}`, m.rssKiB);
    else if (m.path !== '') add(m.anonKiB > 0 ? 'files (private copies)' : 'mapped files', m.rssKiB);
    else if (m.perms.startsWith('rw') && before && before.end === m.start && before.perms === '---p' && before.end - before.start <= 65_536n)
      add('thread stacks', m.rssKiB);
    else if (m.perms.startsWith('rw') && m.start % ARENA === 0n && after && after.start === m.end && after.perms === '---p') add('malloc: arenas', m.rssKiB);
    else add('anonymous (V8 heap, other mmap)', m.rssKiB);
  }
  return Object.fromEntries(Object.entries(groups).map(([k, kib]) => [k, Math.round((kib / 1024) * 10) / 10]));
}

function threads(): Record<string, number> {
  const names: Record<string, number> = {};
  for (const tid of readdirSync('/proc/self/task')) {
    let name = 'gone';
    try {
      name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
    } catch {
      // the thread ended between the listing and the read
    }
    names[name] = (names[name] ?? 0) + 1;
  }
  return names;
}

function sample() {
  const usage = process.memoryUsage();
  const heap = v8.getHeapStatistics();
  return {
    at: new Date().toISOString(),
    uptime_s: Math.round(process.uptime() * 10) / 10,
    rss_mib: round(usage.rss),
    hwm_mib: Math.round((statusKiB('VmHWM') / 1024) * 10) / 10,
    rss_anon_mib: Math.round((statusKiB('RssAnon') / 1024) * 10) / 10,
    rss_file_mib: Math.round((statusKiB('RssFile') / 1024) * 10) / 10,
    memory_usage_mib: {
      heapTotal: round(usage.heapTotal),
      heapUsed: round(usage.heapUsed),
      external: round(usage.external),
      arrayBuffers: round(usage.arrayBuffers),
    },
    v8_mib: {
      total_physical: round(heap.total_physical_size),
      malloced: round(heap.malloced_memory),
      peak_malloced: round(heap.peak_malloced_memory),
      external: round(heap.external_memory),
    },
    heap_spaces_mib: Object.fromEntries(
      v8.getHeapSpaceStatistics().map((s) => [s.space_name, { physical: round(s.physical_space_size), used: round(s.space_used_size) }]),
    ),
    smaps_mib: groupMappings(readMappings()),
    threads: threads(),
  };
}

if (out && process.argv.includes('serve')) {
  let peakKiB = 0;
  let samples = 0;
  const timer = setInterval(() => {
    const rssKiB = statusKiB('VmRSS');
    if (rssKiB < peakKiB + 1024) return;
    peakKiB = rssKiB;
    samples += 1;
    writeFileSync(out, `${JSON.stringify({ samples, ...sample() }, null, 1)}\n`);
  }, 100);
  timer.unref();
}
