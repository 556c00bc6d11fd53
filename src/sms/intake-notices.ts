/**
 * What becomes of a message field read otherwise than sent (src/sms/prepare.ts): counted on every message, and
 * logged once per distinct value, so a brand configured with a sender name no SMS can carry shows up once in the
 * log rather than on every message. The values remembered are bounded; past the bound they are still counted.
 */
import type { Logger } from 'pino';
import type { SendMetrics } from '../observability/metrics.js';
import type { IntakeNote } from './prepare.js';

export type IntakeNotices = (notes: readonly IntakeNote[]) => void;

const MAX_REMEMBERED = 1_000;

export function createIntakeNotices(
  metrics: Pick<SendMetrics, 'intakeFallback'> | undefined,
  logger: Logger | undefined,
  maxRemembered = MAX_REMEMBERED,
): IntakeNotices {
  const logged = new Set<string>();
  return (notes) => {
    for (const note of notes) {
      metrics?.intakeFallback(note.field);
      const key = `${note.field}\u0000${note.value}`;
      if (logged.has(key) || logged.size >= maxRemembered) continue;
      logged.add(key);
      logger?.warn({ field: note.field, value: note.value }, `${note.text} (logged once per value)`);
    }
  };
}
