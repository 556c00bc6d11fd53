/**
 * Progress of `crm-sms-gateway migrate`: which migration runs (n of m) and for how long. A migration is one SQL
 * statement after another inside the database, so its rows cannot be counted from here; a migration that rewrites
 * a big table (2026-11-24-60-console fills messages.user_id) shows as the one still running, with its time so far.
 */
import { shortDuration, TTY_INTERVAL_MS, LOG_INTERVAL_MS, type ProgressOutput } from './progress.js';
import type { MigrationStep } from '../ledger/engine/db.js';

export function reportMigrationProgress(output: ProgressOutput, now: () => number = Date.now) {
  let current: (MigrationStep & { startedAt: number }) | undefined;
  const startedAt = now();
  const line = (final: boolean) => {
    if (!current) return;
    const took = shortDuration(now() - current.startedAt);
    // In a log, the end gets a line of its own: what an operator times an upgrade by (docs/deployment.md).
    const time = final && !output.isTTY ? `done in ${took}` : took;
    const text = `migrate: ${current.index} of ${current.total}, ${current.name}, ${time} (all: ${shortDuration(now() - startedAt)})`;
    output.write(output.isTTY ? `\r\x1b[2K${text}${final ? '\n' : ''}` : `${text}\n`);
  };
  const timer = setInterval(() => line(false), output.isTTY ? TTY_INTERVAL_MS : LOG_INTERVAL_MS);
  timer.unref();
  return {
    step: (step: MigrationStep) => {
      line(true);
      current = { ...step, startedAt: now() };
      line(false);
    },
    stop: () => {
      clearInterval(timer);
      line(true);
      current = undefined;
    },
  };
}
