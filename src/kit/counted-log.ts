/**
 * A log of counts, for events a stranger can cause at will (a refused provider callback: one warning per forged
 * callback once wrote 163 MB in 90 s, docs/trust.md "Forged callbacks"). Each key (a small set the caller bounds,
 * such as a door and a configured provider) gets at most one line per `intervalMs`: the first event after a quiet
 * interval at once, so a
 * misconfiguration shows without waiting, then the events since, summed, once the interval has passed (on the next
 * event, or by a timer that keeps no process alive). A line holds the count, the count by status, and the first
 * MAX_REASONS distinct reasons with their counts (the rest summed), each cut to MAX_REASON_LENGTH characters, so a
 * line stays small whatever the events say. Pure but for `write`, `now` and the timer.
 */

export const MAX_REASONS = 5;
export const MAX_REASON_LENGTH = 160;

export interface CountedLine {
  /** The labels the key's first event was counted with (e.g. door and provider). */
  labels: Readonly<Record<string, string>>;
  /** Events in this line. */
  count: number;
  byStatus: Record<string, number>;
  reasons: Record<string, number>;
  /** Events whose reason is not among `reasons`. */
  otherReasons: number;
  /** Epoch ms of the first event in this line. */
  since: number;
}

/** A line being counted: its reasons in a Map, so a reason called `__proto__` is a reason like any other. */
type Pending = Omit<CountedLine, 'reasons'> & { reasons: Map<string, number> };

interface KeyState {
  lastWritten: number;
  pending: Pending | undefined;
}

interface CountedLog {
  count(key: string, labels: Readonly<Record<string, string>>, status: number, reason: string): void;
  /** Writes every pending count now (a test, or a stop). */
  flush(): void;
}

function add(line: Pending, status: number, reason: string): void {
  line.count++;
  line.byStatus[status] = (line.byStatus[status] ?? 0) + 1;
  const cut = reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH - 1)}…` : reason;
  const seen = line.reasons.get(cut);
  if (seen !== undefined) line.reasons.set(cut, seen + 1);
  else if (line.reasons.size < MAX_REASONS) line.reasons.set(cut, 1);
  else line.otherReasons++;
}

const written = (line: Pending): CountedLine => ({ ...line, reasons: Object.fromEntries(line.reasons) });

export function createCountedLog(writeLine: (line: CountedLine) => void, intervalMs: number, now: () => number): CountedLog {
  const write = (line: Pending) => writeLine(written(line));
  const keys = new Map<string, KeyState>();
  let timer: ReturnType<typeof setTimeout> | undefined;

  const writeDue = (force: boolean) => {
    const at = now();
    for (const state of keys.values()) {
      if (state.pending && (force || at - state.lastWritten >= intervalMs)) {
        write(state.pending);
        state.pending = undefined;
        state.lastWritten = at;
      }
    }
  };
  const schedule = (delayMs: number) => {
    if (timer) return;
    timer = setTimeout(
      () => {
        timer = undefined;
        writeDue(false);
        const left = [...keys.values()].filter((s) => s.pending).map((s) => s.lastWritten + intervalMs - now());
        if (left.length > 0) schedule(Math.max(1, Math.min(...left)));
      },
      Math.max(1, delayMs),
    );
    timer.unref?.();
  };

  return {
    count(key, labels, status, reason) {
      const at = now();
      let state = keys.get(key);
      if (!state) keys.set(key, (state = { lastWritten: Number.NEGATIVE_INFINITY, pending: undefined }));
      state.pending ??= { labels, count: 0, byStatus: {}, reasons: new Map(), otherReasons: 0, since: at };
      add(state.pending, status, reason);
      if (at - state.lastWritten >= intervalMs) {
        write(state.pending);
        state.pending = undefined;
        state.lastWritten = at;
      } else {
        schedule(state.lastWritten + intervalMs - at);
      }
    },
    flush: () => writeDue(true),
  };
}
