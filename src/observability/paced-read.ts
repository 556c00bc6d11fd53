/**
 * A gauge's count read from the ledger at scrape time, paced by what it costs. Such a count grows with what it
 * counts: a backlog of a million owed conversions takes a few hundred milliseconds to count, more under load
 * (bench/README.md, "The outboxes' gauges at a backlog of a million"). A paced read of a large count runs again only
 * once the time since its last run began is its duration divided by `share`, and answers that run's value meanwhile.
 * So its reads take at most `share` of the gateway's time whatever the backlog, and no value is older than
 * `maxAgeMs`, well inside the `for:` of the alerts that read these gauges (deploy/prometheus/alerts.yml). A count of
 * fewer than `freshBelow` rows (a few milliseconds of reading) is read afresh at every scrape: it is decided by the
 * rows counted, not by the time taken, so a busy machine does not make a small count stale.
 */

export interface PacedReadOptions {
  /** The share of the time the reads may take: 0.01 reads a count that takes 300 ms at most every 30 s. */
  share?: number;
  /** The oldest a value answered may be, however long its read takes. */
  maxAgeMs?: number;
  /** A count of fewer rows is read again at every call. */
  freshBelow?: number;
  now?: () => number;
}

export const PACED_READ_DEFAULTS = { share: 0.01, maxAgeMs: 120_000, freshBelow: 10_000 } as const;

type Pace = Required<Omit<PacedReadOptions, 'now'>>;

/** The last completed run: when it began, how long it took and how many rows it counted. */
export interface LastRead {
  startedAt: number;
  tookMs: number;
  rows: number;
}

/** Whether the read runs again at `now`, or its last value is answered. */
export function readIsDue(last: LastRead | undefined, now: number, pace: Pace): boolean {
  if (!last || last.rows < pace.freshBelow) return true;
  const wait = Math.min(last.tookMs / pace.share, pace.maxAgeMs);
  return now - last.startedAt >= wait;
}

/**
 * Wraps `read`, whose value counts `rowsOf(value)` rows: concurrent callers (two Prometheus servers scraping at once)
 * share one run, and a run that fails is not remembered, so the next scrape reads again.
 */
export function pacedRead<T>(read: () => Promise<T>, rowsOf: (value: T) => number, options: PacedReadOptions = {}): () => Promise<T> {
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
        last = { startedAt, tookMs: now() - startedAt, rows: rowsOf(value), value };
        return value;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}
