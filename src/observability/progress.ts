/**
 * Progress of long command-line work (import users, migrate): on a terminal one line rewritten in place a few
 * times a second; otherwise (a log file, a CI job) a full line every few seconds, so the log stays readable.
 * The text is a pure function of the counts, for table tests.
 */
export interface ProgressState {
  /** Rows (or other units) done so far. */
  done: number;
  /** Share of the whole finished, 0..1, when it is known (e.g. bytes read of a file). */
  fraction?: number;
  startedAt: number;
  now: number;
}

/** "12 s", "4 min 05 s", "1 h 02 min". */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** `1,204,000 rows, 48,200 rows/s, 42 % (ETA 35 s)`: rows and rate always, share and ETA when the whole is known. */
export function describeProgress(p: ProgressState, unit = 'rows'): string {
  const elapsed = Math.max(1, p.now - p.startedAt);
  const rate = (p.done / elapsed) * 1000;
  let text = `${p.done.toLocaleString('en-US')} ${unit}, ${Math.round(rate).toLocaleString('en-US')} ${unit}/s, ${shortDuration(elapsed)} elapsed`;
  if (p.fraction !== undefined && p.fraction > 0) {
    const eta = p.fraction >= 1 ? 0 : (elapsed / p.fraction) * (1 - p.fraction);
    text += `, ${Math.min(100, Math.floor(p.fraction * 100))} % (ETA ${shortDuration(eta)})`;
  }
  return text;
}

export interface ProgressOutput {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** How often a line goes out: often enough to look alive on a terminal, rarely enough not to flood a log. */
export const TTY_INTERVAL_MS = 250;
export const LOG_INTERVAL_MS = 5_000;

export function createProgressLine(output: ProgressOutput, label: string, now: () => number = Date.now, unit = 'rows') {
  const startedAt = now();
  let lastShown = startedAt;
  let pending = false;
  const interval = output.isTTY ? TTY_INTERVAL_MS : LOG_INTERVAL_MS;
  const show = (done: number, fraction: number | undefined, final: boolean) => {
    const text = `${label}: ${describeProgress({ done, fraction, startedAt, now: now() }, unit)}`;
    if (output.isTTY) output.write(`\r\x1b[2K${text}${final ? '\n' : ''}`);
    else output.write(`${text}\n`);
    pending = !final && Boolean(output.isTTY);
  };
  return {
    /** Shows the counts if the interval has passed since the last line. */
    update(done: number, fraction?: number) {
      if (now() - lastShown < interval) return;
      lastShown = now();
      show(done, fraction, false);
    },
    /** The last line, always shown. */
    finish(done: number, fraction?: number) {
      show(done, fraction, true);
    },
    /** Before printing something else on a terminal: ends the line being rewritten. */
    breakLine() {
      if (pending) output.write('\n');
      pending = false;
    },
  };
}
