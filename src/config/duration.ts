/** Durations in config are written as `250ms`, `30s`, `5m`, `72h` or `2d` (a bare number means milliseconds). */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function parseDuration(text: string | number): number | null {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? text : null;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) return null;
  const unit = (match[2] ?? 'ms') as keyof typeof UNIT_MS;
  return Math.round(Number(match[1]) * UNIT_MS[unit]);
}
