import { z } from 'zod';

/** Durations in config are written as `250ms`, `30s`, `5m`, `72h` or `2d` (a bare number means milliseconds). */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function parseDuration(text: string | number): number | null {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? text : null;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) return null;
  const unit = (match[2] ?? 'ms') as keyof typeof UNIT_MS;
  return Math.round(Number(match[1]) * UNIT_MS[unit]);
}

/**
 * A config value that is a duration, in milliseconds after parsing; `positive` refuses 0 (an interval or a
 * timeout that must elapse). Messages name the value as written, so a config error shows what to fix.
 */
export const durationSchema = (fallback: string, { positive = false }: { positive?: boolean } = {}) =>
  z
    .union([z.string(), z.number()])
    .default(fallback)
    .transform((value, ctx) => {
      const ms = parseDuration(value);
      if (ms === null || (positive && ms === 0)) {
        ctx.addIssue({ code: 'custom', message: `"${value}" is not a ${positive ? 'positive ' : ''}duration (use e.g. 500ms, 30s, 5m, 72h, 2d)` });
        return z.NEVER;
      }
      return ms;
    })
    // Marks the key for the configuration reference (scripts/config-reference.ts), whose JSON Schema sees only string | number.
    .meta({ 'x-type': 'duration' });
