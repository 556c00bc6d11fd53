import { z } from 'zod';

/**
 * Durations in config are written as `250ms`, `30s`, `5m`, `72h` or `2d`. A number without a unit is refused (0
 * aside, which means the same in every unit): `shutdown_timeout: 20` read as 20 ms, where 20 s was meant, stopped a
 * gateway before its requests could finish.
 */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function parseDuration(text: string | number): number | null {
  if (typeof text === 'number') return text === 0 ? 0 : null;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) return null;
  const value = Number(match[1]);
  if (match[2] === undefined) return value === 0 ? 0 : null;
  return Math.round(value * UNIT_MS[match[2] as keyof typeof UNIT_MS]);
}

/** Why a value is not a duration, for the config error: a bare number says which unit it lacks. */
function durationProblem(value: string | number, positive: boolean): string {
  const bare = typeof value === 'number' ? Number.isFinite(value) && value > 0 : /^\s*\d+(?:\.\d+)?\s*$/.test(value);
  if (bare) return `${JSON.stringify(value)} has no unit (write e.g. ${String(value).trim()}ms or ${String(value).trim()}s)`;
  return `${JSON.stringify(value)} is not a ${positive ? 'positive ' : ''}duration (use e.g. 500ms, 30s, 5m, 72h, 2d)`;
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
        ctx.addIssue({ code: 'custom', message: durationProblem(value, positive) });
        return z.NEVER;
      }
      return ms;
    })
    // Marks the key for the configuration reference (scripts/config-reference.ts), whose JSON Schema sees only string | number.
    .meta({ 'x-type': 'duration' });
