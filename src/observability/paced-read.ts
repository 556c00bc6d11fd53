/**
 * A gauge's count read from the ledger at scrape time, paced by what it costs. Such a count grows with what it
 * counts: a backlog of a million owed conversions takes a few hundred milliseconds to count, more under load
 * (bench/README.md, "The outboxes' gauges at a backlog of a million"). A paced read runs again only once the time since
 * its last run began is its duration divided by `share`, and answers that run's value meanwhile. So its reads take at
 * most `share` of the gateway's time whatever the backlog, a count that took under `freshUnderMs` (a backlog of a few
 * thousand rows) is read afresh at every scrape, and no value is older than `maxAgeMs`, well inside the `for:` of the
 * alerts that read these gauges (deploy/prometheus/alerts.yml).
 */

export interface PacedReadOptions {
  /** The share of the time the reads may take: 0.01 reads a count that takes 300 ms at most every 30 s. */
  share?: number;
  /** The oldest a value answered may be, however long its read takes. */
  maxAgeMs?: number;
  /** A read that took less is run again at every call: at one scrape a second, under 2.5% of one core. */
  freshUnderMs?: number;
  now?: () => number;
}

export const PACED_READ_DEFAULTS = { share: 0.01, maxAgeMs: 120_000, freshUnderMs: 25 } as const;

type Pace = Required<Omit<PacedReadOptions, 'now'>>;

/** The last completed run: when it began and how long it took. */
export interface LastRead {
  startedAt: number;
  tookMs: number;
}

/** Whether the read runs again at `now`, or its last value is answered. */
export function readIsDue(last: LastRead | undefined, now: number, pace: Pace): boolean {
  if (!last || last.tookMs < pace.freshUnderMs) return true;
  const wait = Math.min(last.tookMs / pace.share, pace.maxAgeMs);
  return now - last.startedAt >= wait;
}

/**
 * Wraps `read`: concurrent callers (two Prometheus servers scraping at once) share one run, and a run that fails is
 * not remembered, so the next scrape reads again.
 */
export function pacedRead<T>(read: () => Promise<T>, options: PacedReadOptions = {}): () => Promise<T> {
  const { now = Date.now, ...given } = options;
  const pace: Pace = { ...PACED_READ_DEFAULTS, ...given };
  let last: (LastRead & { value: T }) | undefined;
  let running: Promise<T> | undefined;
  return () => {
    if (running) return running;
    if (last && !readIsDue(last, now(), pace)) return Promise.resolve(last.value);
    const startedAt = now();
    running = read()
      .then((value) => {
        last = { startedAt, tookMs: now() - startedAt, value };
        return value;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}
