/**
 * A small parser for the Prometheus text exposition format (what prom-client's registry.metrics() writes), so
 * tests read /metrics the way a scraper does instead of grepping strings.
 * https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# TYPE name counter` lines: metric family name → type. */
  types: Map<string, string>;
}

/** Prometheus reads values with Go's ParseFloat, which takes NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(text: string): number {
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`not a sample value: ${text}`);
  return value;
}

/** Reads `{a="x",b="y\"z"}` starting at `start` (the `{`); returns the labels and the index after `}`. */
function parseLabels(line: string, start: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  while (line[i] !== '}') {
    const eq = line.indexOf('=', i);
    const name = line.slice(i, eq).trim();
    if (line[eq + 1] !== '"') throw new Error(`label ${name} has no quoted value: ${line}`);
    let value = '';
    let j = eq + 2;
    for (; line[j] !== '"'; j++) {
      if (j >= line.length) throw new Error(`unterminated label value: ${line}`);
      if (line[j] === '\\') {
        j++;
        value += line[j] === 'n' ? '\n' : line[j];
      } else value += line[j];
    }
    labels[name] = value;
    i = j + 1;
    if (line[i] === ',') i++;
  }
  return { labels, end: i + 1 };
}

export function parsePrometheusText(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const nameEnd = line.search(/[{\s]/);
    const name = line.slice(0, nameEnd);
    let rest = nameEnd;
    let labels: Record<string, string> = {};
    if (line[nameEnd] === '{') ({ labels, end: rest } = parseLabels(line, nameEnd));
    const [value] = line.slice(rest).trim().split(/\s+/);
    samples.push({ name, labels, value: parseValue(value!) });
  }
  return { samples, types };
}

/** The value of the one sample named `name` whose labels include `labels` (an error when not exactly one). */
export function valueOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = exposition.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length !== 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples, not one`);
  return found[0]!.value;
}
