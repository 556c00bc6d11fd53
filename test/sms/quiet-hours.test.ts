/**
 * The quiet-hours decision (src/sms/quiet-hours.ts) by table: the documented examples of docs/routing.md ("Quiet
 * hours": French marketing SMS 08:00–20:30 Monday to Saturday, none on Sundays and public holidays; the US 08:00–21:00
 * in the recipient's local time), zones chosen by prefix (US area codes, Brazilian DDD) or, for a prefix the table does
 * not place, every zone of the country at once, brands, holidays, and zones on both sides of a DST change.
 */
import { describe, expect, it } from 'vitest';
import { quietHoursConfigSchema } from '../../src/config/quiet-hours-config.js';
import { decideQuietHours, decideRelease, planHold, releaseTime } from '../../src/sms/quiet-hours.js';

const config = quietHoursConfigSchema.parse({
  windows: {
    'fr-marketing': { countries: ['FR'], days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat'], hours: '08:00-20:30', holidays: ['2026-12-25', '2027-01-01'] },
    'fr-brand-7': { countries: ['FR'], brands: [7], hours: '10:00-19:00' },
    'us-tcpa': { countries: ['US'], hours: '08:00-21:00' },
    'br-daytime': { countries: ['BR'], hours: '09:00-20:00' },
    'au-daytime': { countries: ['AU'], hours: '09:00-20:00' },
    'gb-never': { countries: ['GB'], days: ['mon'], hours: '09:00-10:00', zone: 'Europe/London', holidays: [] },
  },
});

const at = (iso: string) => Date.parse(iso);
const FR = '+33612345678';
const NY = '+12125550123';
const LA = '+12135550123';
const SF = '+14155550123';
const FLORIDA_PANHANDLE = '+18505550123';

describe('decideQuietHours', () => {
  it.each([
    // France, marketing: 08:00–20:30 Monday to Saturday, Paris time.
    ['a Tuesday morning in Paris is open', FR, 'FR', null, '2026-12-01T09:00:00Z', null],
    ['a Tuesday 21:00 in Paris waits for Wednesday 08:00', FR, 'FR', null, '2026-12-01T20:00:00Z', '2026-12-02T07:00:00Z'],
    ['Saturday 20:29 in Paris is still open', FR, 'FR', null, '2026-12-05T19:29:00Z', null],
    ['Saturday 20:30 in Paris waits past Sunday for Monday 08:00', FR, 'FR', null, '2026-12-05T19:30:00Z', '2026-12-07T07:00:00Z'],
    ['Sunday noon in Paris waits for Monday 08:00', FR, 'FR', null, '2026-12-06T11:00:00Z', '2026-12-07T07:00:00Z'],
    ['Christmas Eve 21:00 waits past the holiday for Saturday 26th 08:00', FR, 'FR', null, '2026-12-24T20:00:00Z', '2026-12-26T07:00:00Z'],
    ['New Year’s Day at noon (a Friday holiday) waits for Saturday 08:00', FR, 'FR', null, '2027-01-01T11:00:00Z', '2027-01-02T07:00:00Z'],
    // Paris leaves summer time on Sunday 25 October 2026 (UTC+2 → UTC+1).
    ['Saturday 21:00 CEST before the autumn change waits for Monday 08:00 CET', FR, 'FR', null, '2026-10-24T19:00:00Z', '2026-10-26T07:00:00Z'],
    // Paris enters summer time on Sunday 29 March 2026 (UTC+1 → UTC+2).
    ['Saturday 22:00 CET before the spring change waits for Monday 08:00 CEST', FR, 'FR', null, '2026-03-28T21:00:00Z', '2026-03-30T06:00:00Z'],
    // A brand's own window wins over the country's.
    ['brand 7 at 09:00 Paris waits for its own 10:00', FR, 'FR', '7', '2026-12-01T08:00:00Z', '2026-12-01T09:00:00Z'],
    ['brand 7 on a Sunday afternoon goes out (its window has every day)', FR, 'FR', '7', '2026-12-06T13:00:00Z', null],
    ['brand 8 at 09:00 Paris has the country’s window: open', FR, 'FR', '8', '2026-12-01T08:00:00Z', null],
    // The US, 08:00–21:00 in the recipient's local time, its zone from the area code.
    ['09:00 in New York is open', NY, 'US', null, '2026-12-01T14:00:00Z', null],
    ['the same instant is 06:00 in Los Angeles: waits for 08:00 PST', LA, 'US', null, '2026-12-01T14:00:00Z', '2026-12-01T16:00:00Z'],
    ['21:30 in New York waits for 08:00 the next day', NY, 'US', null, '2026-12-02T02:30:00Z', '2026-12-02T13:00:00Z'],
    // New York leaves summer time at 02:00 on Sunday 1 November 2026 (UTC-4 → UTC-5).
    ['01:00 EDT before the autumn change waits for 08:00 EST', NY, 'US', null, '2026-11-01T05:00:00Z', '2026-11-01T13:00:00Z'],
    // San Francisco enters summer time at 02:00 on Sunday 8 March 2026 (UTC-8 → UTC-7).
    ['01:00 PST before the spring change waits for 08:00 PDT', SF, 'US', null, '2026-03-08T09:00:00Z', '2026-03-08T15:00:00Z'],
    // An area code the table does not place (850 straddles Eastern and Central): open only when open in every US zone.
    ['an unplaced area code waits until 08:00 in Honolulu', FLORIDA_PANHANDLE, 'US', null, '2026-12-01T14:00:00Z', '2026-12-01T18:00:00Z'],
    // Brazil by DDD: São Paulo UTC-3, Manaus UTC-4.
    ['09:30 in São Paulo is open', '+5511987654321', 'BR', null, '2026-12-01T12:30:00Z', null],
    ['the same instant is 08:30 in Manaus: waits for 09:00 there', '+5592987654321', 'BR', null, '2026-12-01T12:30:00Z', '2026-12-01T13:00:00Z'],
    // An Australian mobile is not geographic: open only when it is 09:00 in Perth and before 20:00 in Sydney.
    ['an Australian mobile at 10:00 Sydney waits for 09:00 Perth', '+61412345678', 'AU', null, '2026-12-01T23:00:00Z', '2026-12-02T01:00:00Z'],
    ['a Sydney fixed line at 10:00 Sydney is open', '+61291234567', 'AU', null, '2026-12-01T23:00:00Z', null],
    // No window for the country: sent now.
    ['a German number has no window: sent at 03:00', '+4915112345678', 'DE', null, '2026-12-01T02:00:00Z', null],
    [
      'a number of no country’s ranges is governed as its calling code’s main country',
      '+447700900123',
      undefined,
      null,
      '2026-12-06T11:00:00Z',
      '2026-12-07T09:00:00Z',
    ],
    ['a US number read in no country is the US’s', '+12125550123', undefined, null, '2026-12-01T05:00:00Z', '2026-12-01T13:00:00Z'],
    ['a number with no calling code’s country is sent', '+80012345678', undefined, null, '2026-12-01T02:00:00Z', null],
  ])('%s', (_what, e164, country, brand, now, until) => {
    const decision = decideQuietHours(at(now), { e164, country }, brand, config);
    if (until === null) expect(decision).toEqual({ action: 'send' });
    else expect(decision).toMatchObject({ action: 'hold', until: at(until) });
  });

  it('places a number by routing.zones first, as a route rule does: +1212 said to be Honolulu waits for 08:00 there', () => {
    const zones = new Map([['+1212', 'Pacific/Honolulu']]);
    // 14:00 UTC: 09:00 in New York, 04:00 in Honolulu; 08:00 in Honolulu is 18:00 UTC.
    expect(decideQuietHours(at('2026-12-01T14:00:00Z'), { e164: NY, country: 'US' }, null, config)).toEqual({ action: 'send' });
    expect(decideQuietHours(at('2026-12-01T14:00:00Z'), { e164: NY, country: 'US' }, null, config, zones)).toEqual({
      action: 'hold',
      window: 'us-tcpa',
      until: at('2026-12-01T18:00:00Z'),
    });
    expect(decideRelease(at('2026-12-01T14:00:00Z'), NY, 'us-tcpa', config, zones)).toMatchObject({ action: 'hold' });
  });

  it('names the window that held the message', () => {
    expect(decideQuietHours(at('2026-12-06T11:00:00Z'), { e164: FR, country: 'FR' }, null, config)).toEqual({
      action: 'hold',
      window: 'fr-marketing',
      until: at('2026-12-07T07:00:00Z'),
    });
  });

  it('holds with no opening when the window is open on no day within a year', () => {
    const never = quietHoursConfigSchema.parse({
      windows: { closed: { countries: ['GB'], days: ['mon'], hours: '09:00-10:00', holidays: mondaysOf2027() } },
    });
    expect(decideQuietHours(at('2026-12-29T12:00:00Z'), { e164: '+447700900123', country: 'GB' }, null, never)).toEqual({
      action: 'hold',
      window: 'closed',
      until: null,
    });
  });
});

function mondaysOf2027(): string[] {
  const days: string[] = [];
  for (let t = at('2027-01-04T00:00:00Z'); t < at('2028-01-10T00:00:00Z'); t += 7 * 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}

describe('decideRelease', () => {
  it.each([
    ['its window open: sent', FR, 'fr-marketing', '2026-12-01T09:00:00Z', null],
    ['its window closed again (due after 20:30): held until the next opening', FR, 'fr-marketing', '2026-12-01T20:00:00Z', '2026-12-02T07:00:00Z'],
    ['its window no longer configured: sent', FR, 'fr-gone', '2026-12-01T20:00:00Z', null],
    ['the brand’s window, asked by name', FR, 'fr-brand-7', '2026-12-01T08:00:00Z', '2026-12-01T09:00:00Z'],
  ])('%s', (_what, e164, window, now, until) => {
    const decision = decideRelease(at(now), e164, window, config);
    if (until === null) expect(decision).toEqual({ action: 'send' });
    else expect(decision).toEqual({ action: 'hold', window, until: at(until) });
  });
});

describe('releaseTime and planHold', () => {
  it('spreads releases over the spread, the same for the same sms_id', () => {
    const opening = at('2026-12-07T07:00:00Z');
    const releases = Array.from({ length: 200 }, (_, i) => releaseTime(opening, `sms-${i}`, 600_000));
    for (const r of releases) expect(r >= opening && r < opening + 600_000).toBe(true);
    expect(new Set(releases.map((r) => Math.floor((r - opening) / 60_000))).size).toBe(10);
    expect(releaseTime(opening, 'sms-7', 600_000)).toBe(releases[7]);
    expect(releaseTime(opening, 'sms-7', 0)).toBe(opening);
  });

  it('releases a message whose window never opens at its expiry', () => {
    const now = at('2026-12-01T00:00:00Z');
    expect(planHold({ action: 'hold', window: 'w', until: null }, now, 'x', { spread: 600_000, max_wait: 3_600_000 })).toEqual({
      window: 'w',
      releaseAt: now + 3_600_000,
      expiresAt: now + 3_600_000,
    });
  });
});

describe('quiet_hours configuration', () => {
  it.each([
    ['hours the wrong way round', { w: { countries: ['FR'], hours: '20:30-08:00' } }, 'windows.w.hours'],
    ['a day that is not one', { w: { countries: ['FR'], hours: '08:00-20:30', days: ['sunday'] } }, 'windows.w.days.0'],
    ['a holiday that is not a date', { w: { countries: ['FR'], hours: '08:00-20:30', holidays: ['2026-02-30'] } }, 'windows.w.holidays.0'],
    ['a country with no known zone and no zone', { w: { countries: ['AF'], hours: '08:00-20:30' } }, 'windows.w.countries.0'],
    ['a zone Intl does not know', { w: { countries: ['FR'], hours: '08:00-20:30', zone: 'Mars/Olympus' } }, 'windows.w.zone'],
    ['two windows for one country', { a: { countries: ['FR'], hours: '08:00-20:30' }, b: { countries: ['FR'], hours: '09:00-20:00' } }, 'windows.b.countries'],
  ])('refuses %s, naming the key', (_what, windows, path) => {
    const parsed = quietHoursConfigSchema.safeParse({ windows });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => i.path.join('.'))).toContain(path);
  });
});
