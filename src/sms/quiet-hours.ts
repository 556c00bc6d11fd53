/**
 * Quiet hours (docs/routing.md "Quiet hours"): whether a message may go out now, in its recipient's local time, or is
 * held until its window opens. Pure: the time, the recipient, the brand and the configuration in, a decision out
 * (test/sms/quiet-hours.test.ts holds its table), so that a route's rule can name a window and ask the same question.
 */
import type { QuietHoursConfig, QuietWindow, Weekday } from '../config/quiet-hours-config.js';
import { WEEKDAYS } from '../config/quiet-hours-config.js';
import { mainCountryOf, readWritten } from '../kit/phone-number.js';
import { localTimeIn, utcOffsetAt, zonesOfNumber } from '../kit/time-zones.js';

export type QuietDecision =
  | { action: 'send' }
  /** `until`: the first instant the window is open in every zone the recipient may be in; null when it never opens within a year. */
  | { action: 'hold'; window: string; until: number | null };

/** How far ahead an opening is looked for (a window whose days are all holidays never opens). */
const HORIZON_MS = 366 * 86_400_000;

interface Wall {
  date: string;
  weekday: Weekday;
  minutes: number;
}

/** The zone's wall clock at `t` as epoch ms read as if UTC (src/kit/time-zones.ts reads the offset, as for route rules). */
function wallAsUtc(t: number, zone: string): number {
  return t + utcOffsetAt(zone, t);
}

function wallOf(t: number, zone: string): Wall {
  const local = localTimeIn(zone, t);
  // LocalTime counts weekdays from Monday; WEEKDAYS from Sunday.
  return { date: local.date, weekday: WEEKDAYS[(local.weekday + 1) % 7]!, minutes: local.minutes };
}

/** The instant the zone's clock reads `date` at `minutes`; in a DST gap, the first instant after it. */
function instantOf(date: string, minutes: number, zone: string): number {
  const wall = Date.parse(`${date}T00:00:00Z`) + minutes * 60_000;
  const first = wall - (wallAsUtc(wall, zone) - wall);
  const second = wall - (wallAsUtc(first, zone) - first);
  if (wallAsUtc(second, zone) === wall) return second;
  // The wall time does not exist (clocks went forward): the later reading is past the gap.
  return Math.max(first, second);
}

function openDay(w: QuietWindow, wall: Wall): boolean {
  return w.days.includes(wall.weekday) && !w.holidays.includes(wall.date);
}

function openIn(t: number, w: QuietWindow, zone: string): boolean {
  const wall = wallOf(t, zone);
  return openDay(w, wall) && wall.minutes >= w.hours.from && wall.minutes < w.hours.until;
}

/** The first instant at or after `t` at which the window opens in `zone` (t itself when open), or null within 15 days. */
function nextOpenIn(t: number, w: QuietWindow, zone: string): number | null {
  if (openIn(t, w, zone)) return t;
  const today = wallOf(t, zone);
  for (let k = 0; k <= 15; k++) {
    const noon = new Date(Date.parse(`${today.date}T12:00:00Z`) + k * 86_400_000);
    const date = noon.toISOString().slice(0, 10);
    if (!openDay(w, { date, weekday: WEEKDAYS[noon.getUTCDay()]!, minutes: 0 })) continue;
    if (k === 0 && today.minutes >= w.hours.until) continue;
    const opening = instantOf(date, w.hours.from, zone);
    if (opening > t) return opening;
  }
  return null;
}

/** The window governing a message: the one naming its country and brand, else the one naming its country for all brands. */
export function chooseWindow(
  windows: QuietHoursConfig['windows'],
  country: string | undefined,
  brand: string | null,
): { name: string; window: QuietWindow } | undefined {
  if (country === undefined) return undefined;
  let general: { name: string; window: QuietWindow } | undefined;
  for (const [name, window] of Object.entries(windows)) {
    if (!window.countries.includes(country)) continue;
    if (!window.brands) general ??= { name, window };
    else if (brand !== null && window.brands.includes(brand)) return { name, window };
  }
  return general;
}

/**
 * The first instant at or after `now` at which `window` is open in every one of `zones` at once (a recipient whose
 * zone is not known to one may be in any of them), or null when there is none within a year.
 */
export function nextOpening(now: number, window: QuietWindow, zones: readonly string[]): number | null {
  let t = now;
  while (t - now <= HORIZON_MS) {
    let moved = false;
    for (const zone of zones) {
      const next = nextOpenIn(t, window, zone);
      if (next === null) {
        // Closed for 15 days in this zone: look again from then.
        t += 15 * 86_400_000;
        moved = true;
        break;
      }
      if (next > t) {
        t = next;
        moved = true;
      }
    }
    if (!moved) return t;
  }
  return null;
}

function mainCountryOfNumber(e164: string): string | undefined {
  const callingCode = readWritten(e164.slice(1))?.callingCode;
  return callingCode === undefined ? undefined : mainCountryOf(callingCode);
}

/**
 * Send now, or hold until the window opens. A message whose country no window names goes out now. `zones` are the
 * operator's (`routing.zones`): a prefix there places the recipient for quiet hours as for route rules.
 */
export function decideQuietHours(
  now: number,
  recipient: { e164: string; country: string | undefined },
  brand: string | null,
  config: Pick<QuietHoursConfig, 'windows'>,
  zones: ReadonlyMap<string, string> = new Map(),
): QuietDecision {
  // A number the metadata places in no country (a range it does not list, such as the UK's +44 7700 900…) is governed
  // as one of its calling code's main country: quiet hours must not lapse for want of a reading.
  const country = recipient.country ?? mainCountryOfNumber(recipient.e164);
  const chosen = chooseWindow(config.windows, country, brand);
  if (!chosen) return { action: 'send' };
  return decideInWindow(now, recipient.e164, country!, chosen.name, chosen.window, zones);
}

function decideInWindow(now: number, e164: string, country: string, name: string, window: QuietWindow, overrides: ReadonlyMap<string, string>): QuietDecision {
  const zones = window.zone ? [window.zone] : zonesOfNumber(e164, country, overrides);
  const until = nextOpening(now, window, zones);
  return until === now ? { action: 'send' } : { action: 'hold', window: name, until };
}

/**
 * For a held message whose release time has come: whether the window that held it is open now (a gateway down
 * through the whole window, or a send retried past its end, must not send it in the next quiet hours). A window no
 * longer configured holds nothing.
 */
export function decideRelease(
  now: number,
  e164: string,
  windowName: string,
  config: Pick<QuietHoursConfig, 'windows'>,
  zones: ReadonlyMap<string, string> = new Map(),
): QuietDecision {
  if (!Object.hasOwn(config.windows, windowName)) return { action: 'send' };
  const country = readWritten(e164.slice(1))?.country ?? mainCountryOfNumber(e164);
  if (country === undefined) return { action: 'send' };
  return decideInWindow(now, e164, country, windowName, config.windows[windowName]!, zones);
}

/**
 * When a held message is released: its window's opening plus a share of `spreadMs` drawn from its sms_id (FNV-1a), so
 * a night's messages go out over the first minutes of the window, each at the same time on every instance.
 */
export function releaseTime(until: number, smsId: string, spreadMs: number): number {
  if (spreadMs <= 0) return until;
  let hash = 0x811c9dc5;
  for (let i = 0; i < smsId.length; i++) hash = Math.imul(hash ^ smsId.charCodeAt(i), 0x01000193) >>> 0;
  return until + (hash % spreadMs);
}

/** A held message's times: released at `releaseAt`, never sent after `expiresAt`; looked at again at the sooner. */
export interface HoldPlan {
  window: string;
  releaseAt: number;
  expiresAt: number;
}

export function planHold(
  decision: Extract<QuietDecision, { action: 'hold' }>,
  now: number,
  smsId: string,
  config: Pick<QuietHoursConfig, 'spread' | 'max_wait'>,
): HoldPlan {
  const expiresAt = now + config.max_wait;
  return { window: decision.window, releaseAt: decision.until === null ? expiresAt : releaseTime(decision.until, smsId, config.spread), expiresAt };
}
