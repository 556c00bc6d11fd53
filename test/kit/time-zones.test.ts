/**
 * The one table of time zones (src/kit/time-zones.ts), for both its readers: the one zone a route rule reads the local
 * time in (zoneOfNumber: the most likely), and the zones quiet hours wait for (zonesOfNumber: every zone a number may
 * be in), by country, by prefix, for a straddling area code and an unknown prefix, with `routing.zones` first for both.
 */
import { describe, expect, it } from 'vitest';
import { hasKnownZones, localTimeIn, utcOffsetAt, zoneOfNumber, zonesOfNumber } from '../../src/kit/time-zones.js';

const at = (iso: string) => Date.parse(iso);
const ANCHORAGE = new Map([['+1907', 'America/Anchorage']]);

describe('zoneOfNumber: the zone of a route rule', () => {
  it.each([
    ['+12125551234', 'US', 'America/New_York'],
    ['+13125551234', 'US', 'America/Chicago'],
    ['+16025551234', 'US', 'America/Phoenix'],
    ['+16045551234', 'CA', 'America/Vancouver'],
    ['+14165551234', 'CA', 'America/Toronto'],
    ['+5565987654321', 'BR', 'America/Cuiaba'],
    ['+5521987654321', 'BR', 'America/Sao_Paulo'],
    ['+526641234567', 'MX', 'America/Tijuana'],
    ['+33612345678', 'FR', 'Europe/Paris'],
    // An area code across a zone line: its main part (Boise).
    ['+12085551234', 'US', 'America/Denver'],
    // A prefix the table does not place: the country's main zone.
    ['+61412345678', 'AU', 'Australia/Sydney'],
    ['+79161234567', 'RU', 'Europe/Moscow'],
    ['+34612345678', 'ES', 'Europe/Madrid'],
    ['+97312345678', 'BH', 'Asia/Bahrain'],
  ])('%s (%s) is in %s', (e164, country, zone) => {
    expect(zoneOfNumber(e164, country)).toBe(zone);
  });

  it('is unknown for a country outside the table, or no country', () => {
    expect(zoneOfNumber('+93701234567', 'AF')).toBeUndefined();
    expect(zoneOfNumber('+12125551234', undefined)).toBeUndefined();
  });

  it('takes routing.zones first, the longest prefix winning', () => {
    expect(zoneOfNumber('+19075551234', 'US', ANCHORAGE)).toBe('America/Anchorage');
    const nested = new Map([...ANCHORAGE, ['+190755', 'Pacific/Honolulu']]);
    expect(zoneOfNumber('+19075551234', 'US', nested)).toBe('Pacific/Honolulu');
    expect(zoneOfNumber('+19071234567', 'US', nested)).toBe('America/Anchorage');
  });
});

describe('zonesOfNumber: the zones of quiet hours', () => {
  it.each([
    ['a New York area code', '+12125550123', 'US', ['America/New_York']],
    ['a Vancouver area code', '+16045550123', 'CA', ['America/Vancouver']],
    ['a Mexico City number', '+525512345678', 'MX', ['America/Mexico_City']],
    ['a Moscow fixed line', '+74951234567', 'RU', ['Europe/Moscow']],
    ['France, one zone', '+33612345678', 'FR', ['Europe/Paris']],
    ['a Canary Islands fixed line', '+34928123456', 'ES', ['Atlantic/Canary']],
    ['a Spanish mobile, mainland or Canaries', '+34612345678', 'ES', ['Europe/Madrid', 'Atlantic/Canary']],
    ['a Perth fixed line', '+61891234567', 'AU', ['Australia/Perth']],
    ['an Indonesian mobile', '+6281234567890', 'ID', ['Asia/Jakarta', 'Asia/Makassar', 'Asia/Jayapura']],
    ['a country the table does not know', '+93701234567', 'AF', []],
  ])('%s', (_what, e164, country, zones) => {
    expect(zonesOfNumber(e164, country)).toEqual(zones);
  });

  it('gives an area code across a zone line every zone of its country, its main part first', () => {
    const idaho = zonesOfNumber('+12085550123', 'US');
    expect(idaho[0]).toBe('America/Denver');
    expect(new Set(idaho)).toEqual(new Set(zonesOfNumber('+19995550123', 'US')));
    expect(zonesOfNumber('+61881234567', 'AU')[0]).toBe('Australia/Adelaide');
    expect(zonesOfNumber('+61881234567', 'AU')).toContain('Australia/Darwin');
  });

  it('gives a Russian mobile every Russian zone, Moscow first', () => {
    const zones = zonesOfNumber('+79161234567', 'RU');
    expect(zones.length).toBeGreaterThan(10);
    expect(zones[0]).toBe('Europe/Moscow');
  });

  it('gives an unknown US area code every US zone, the rule zone first', () => {
    const zones = zonesOfNumber('+19995550123', 'US');
    expect(zones).toContain('Pacific/Honolulu');
    expect(zones[0]).toBe(zoneOfNumber('+19995550123', 'US'));
  });

  it('takes routing.zones first, as the rule matcher does', () => {
    expect(zonesOfNumber('+19075551234', 'US', ANCHORAGE)).toEqual(['America/Anchorage']);
    expect(zonesOfNumber('+79161234567', 'RU', new Map([['+7916', 'Europe/Moscow']]))).toEqual(['Europe/Moscow']);
  });

  it('knows the countries a window may name without its own zone', () => {
    expect(hasKnownZones('BH')).toBe(true);
    expect(hasKnownZones('US')).toBe(true);
    expect(hasKnownZones('AF')).toBe(false);
  });
});

describe('localTimeIn', () => {
  it('Phoenix keeps its time over the US change', () => {
    expect(localTimeIn('America/Phoenix', at('2026-03-07T10:30:00Z')).minutes).toBe(3 * 60 + 30);
    expect(localTimeIn('America/Phoenix', at('2026-03-09T10:30:00Z')).minutes).toBe(3 * 60 + 30);
  });

  it.each([
    ['London the minute before its spring change', 'Europe/London', '2026-03-29T00:59:00Z', { date: '2026-03-29', weekday: 6, minutes: 59 }],
    ['London at its spring change', 'Europe/London', '2026-03-29T01:00:00Z', { date: '2026-03-29', weekday: 6, minutes: 120 }],
    ['London the minute before its autumn change', 'Europe/London', '2026-10-25T00:59:00Z', { date: '2026-10-25', weekday: 6, minutes: 119 }],
    ['London at its autumn change', 'Europe/London', '2026-10-25T01:00:00Z', { date: '2026-10-25', weekday: 6, minutes: 60 }],
    ['Kathmandu, a quarter past', 'Asia/Kathmandu', '2026-12-31T18:14:00Z', { date: '2026-12-31', weekday: 3, minutes: 23 * 60 + 59 }],
    ['Kathmandu, the new year', 'Asia/Kathmandu', '2026-12-31T18:15:00Z', { date: '2027-01-01', weekday: 4, minutes: 0 }],
  ])('%s', (_label, zone, iso, expected) => {
    expect(localTimeIn(zone, at(iso))).toEqual({ zone, ...expected });
  });
});

describe('utcOffsetAt', () => {
  it.each([
    ['London in winter', 'Europe/London', '2026-01-15T12:00:00Z', 0],
    ['London in summer', 'Europe/London', '2026-07-15T12:00:00Z', 60],
    ['Kathmandu', 'Asia/Kathmandu', '2026-07-15T12:00:00Z', 5 * 60 + 45],
    ['New York the minute before its spring change', 'America/New_York', '2026-03-08T06:59:00Z', -5 * 60],
    ['New York at its spring change', 'America/New_York', '2026-03-08T07:00:00Z', -4 * 60],
  ])('%s', (_label, zone, iso, minutes) => {
    expect(utcOffsetAt(zone, at(iso))).toBe(minutes * 60_000);
  });
});
