/**
 * decideRecipient (src/sms/recipient-reading.ts) by table, over the countries where a review found national numbers
 * read abroad (docs/operator-api.md, "Requests as the CRM sends them"): numbers of the US, Canada,
 * Germany, Italy, Australia, Brazil and the UK written nationally without their trunk 0 (each of which also reads
 * as a valid number of another country after "+") and internationally without "+", with a player's record and
 * without one. The CRM's own samples (254716595289, 35621435678) pass as before.
 */
import { describe, expect, it } from 'vitest';
import { decideRecipient, type PlayerCountry } from '../../src/sms/recipient-reading.js';

const player = (country: string, mobilePrefix: string, mobile: string | null = null): PlayerCountry => ({ country, mobilePrefix, mobile });
const records = {
  US: player('US', '+1'),
  CA: player('CA', '+1'),
  DE: player('DE', '+49'),
  IT: player('IT', '+39'),
  AU: player('AU', '+61'),
  BR: player('BR', '+55'),
  GB: player('GB', '+44'),
  KE: player('KE', '+254'),
  MT: player('MT', '+356'),
};

/** National numbers without their trunk 0 that are also valid numbers of another country after "+". */
const crossing: Array<[string, keyof typeof records, string, string, string]> = [
  // [digits, player's country, the player's number, the other country's number, that country]
  ['4795551234', 'US', '+14795551234', '+4795551234', 'NO'],
  ['2482512345', 'US', '+12482512345', '+2482512345', 'SC'],
  ['6045551234', 'CA', '+16045551234', '+6045551234', 'MY'],
  ['15202345678', 'DE', '+4915202345678', '+15202345678', 'US'],
  ['3281234567', 'IT', '+393281234567', '+3281234567', 'BE'],
  ['468556065', 'AU', '+61468556065', '+468556065', 'SE'],
  ['51987654321', 'BR', '+5551987654321', '+51987654321', 'PE'],
];

/** National numbers without their trunk 0 that are no valid number after "+" (GB: every one). */
const nationalOnly: Array<[string, keyof typeof records, string]> = [
  ['2125551234', 'US', '+12125551234'],
  ['4165551234', 'CA', '+14165551234'],
  ['1711234567', 'DE', '+491711234567'],
  ['3471234567', 'IT', '+393471234567'],
  ['412345678', 'AU', '+61412345678'],
  ['11987654321', 'BR', '+5511987654321'],
  ['7400123456', 'GB', '+447400123456'],
];

/** The same players' numbers written internationally without "+". */
const international: Array<[string, keyof typeof records, string]> = [
  ['14795551234', 'US', '+14795551234'],
  ['16045551234', 'CA', '+16045551234'],
  ['4915202345678', 'DE', '+4915202345678'],
  ['393281234567', 'IT', '+393281234567'],
  ['61468556065', 'AU', '+61468556065'],
  ['5551987654321', 'BR', '+5551987654321'],
  ['447400123456', 'GB', '+447400123456'],
  ['254716595289', 'KE', '+254716595289'],
  ['35621435678', 'MT', '+35621435678'],
];

describe('with the player’s record', () => {
  it.each(crossing)('%s for a player of %s is read as the national number %s, not as %s (%s)', (digits, country, mine, theirs, other) => {
    const decision = decideRecipient(digits, { record: records[country] });
    expect(decision).toMatchObject({ outcome: 'national', basis: 'record', e164: mine, country });
    if (decision.outcome === 'national') {
      expect(decision.note).toContain(`international one in ${other}`);
      expect(decision.note, 'the note keeps no digits of the number').not.toContain(theirs.slice(4));
    }
  });

  it.each(crossing)('%s for a player of %s is read the same way whatever sms.default_region says', (digits, country, mine) => {
    for (const defaultRegion of [undefined, 'GB', 'US', country]) {
      expect(decideRecipient(digits, { record: records[country], defaultRegion })).toMatchObject({ outcome: 'national', e164: mine });
    }
  });

  it.each(nationalOnly)('%s for a player of %s is read as %s, noted as national', (digits, country, mine) => {
    expect(decideRecipient(digits, { record: records[country] })).toMatchObject({ outcome: 'national', basis: 'record', e164: mine });
  });

  it.each(international)('%s for a player of %s stays international: %s', (digits, country, e164) => {
    expect(decideRecipient(digits, { record: records[country], defaultRegion: 'GB' })).toEqual({
      outcome: 'as_written',
      e164,
      country: expect.any(String),
    });
  });

  it.each([
    ['the US number 4795551234 for a player of GB', '4795551234', 'GB', ['+4795551234 (NO)']],
    ['the Kenyan sample 254716595289 for a player of GB', '254716595289', 'GB', ['+254716595289 (KE)']],
    ['the German 15202345678 for a player of IT', '15202345678', 'IT', ['+15202345678 (US)']],
    ['the Italian 3281234567 for a player of DE', '3281234567', 'DE', ['+3281234567 (BE)']],
  ] as const)('refuses %s: no reading lies in the player’s country', (_label, digits, country, readings) => {
    const decision = decideRecipient(digits, { record: records[country] });
    expect(decision).toMatchObject({ outcome: 'refused', code: 'recipient_country_mismatch' });
    if (decision.outcome === 'refused') for (const reading of readings) expect(decision.error).toContain(reading);
  });

  it.each([
    ['+4795551234 for a player of US', '+4795551234', 'US'],
    ['00 4795551234 for a player of US', '004795551234', 'US'],
    ['+447400123456 for a player of DE', '+447400123456', 'DE'],
  ] as const)('refuses a number written with + or 00 in another country: %s', (_label, written, country) => {
    expect(decideRecipient(written, { record: records[country] })).toMatchObject({ outcome: 'refused', code: 'recipient_country_mismatch' });
  });

  it.each([
    ['+14795551234 for a player of US', '+14795551234', 'US', '+14795551234'],
    ['+1 416 555 1234 (Canada) for a player of US: one calling code, one numbering plan', '+1 416 555 1234', 'US', '+14165551234'],
    ['00491711234567 for a player of DE', '00491711234567', 'DE', '+491711234567'],
  ] as const)('sends a number written with + or 00 in the player’s country as written: %s', (_label, written, country, e164) => {
    expect(decideRecipient(written, { record: records[country] })).toMatchObject({ outcome: 'as_written', e164 });
  });

  it('reads by the mobile_prefix too: a player of GB with a Spanish phone gets 34612345678 and 612345678 in Spain', () => {
    const record = player('GB', '+34');
    expect(decideRecipient('34612345678', { record })).toMatchObject({ outcome: 'as_written', e164: '+34612345678' });
    expect(decideRecipient('612345678', { record })).toMatchObject({ outcome: 'national', e164: '+34612345678', country: 'ES' });
    expect(decideRecipient('7400123456', { record })).toMatchObject({ outcome: 'national', e164: '+447400123456' });
  });

  it('reads by the player’s own number too: a mobile written with "+" and no prefix (a player of MT with a UK phone)', () => {
    const record = player('MT', '', '+447700900111');
    expect(decideRecipient('+447400123456', { record })).toMatchObject({ outcome: 'as_written', e164: '+447400123456' });
    expect(decideRecipient('7400123456', { record })).toMatchObject({ outcome: 'national', e164: '+447400123456' });
    expect(decideRecipient('+15005550004', { record })).toMatchObject({ outcome: 'refused', code: 'recipient_country_mismatch' });
  });

  it('a national number with its trunk 0 is as written, in the player’s country', () => {
    expect(decideRecipient('015202345678', { record: records.DE })).toMatchObject({ outcome: 'as_written', e164: '+4915202345678' });
  });

  it.each([
    ['empty', player('', '')],
    ['a country the metadata does not know and no prefix', player('XX', '')],
    ['a record loaded before its rules were checked, holding "__proto__"', player('__proto__', '__proto__', '__proto__')],
  ])('a record that names no country (%s) leaves it to sms.default_region', (_label, record) => {
    expect(decideRecipient('15202345678', { record, defaultRegion: 'DE' })).toMatchObject({ outcome: 'refused', code: 'recipient_ambiguous' });
    expect(decideRecipient('15202345678', { record })).toMatchObject({ outcome: 'as_written', e164: '+15202345678' });
  });
});

describe('without a record, sms.default_region decides', () => {
  it.each(crossing)('%s with sms.default_region %s is refused as ambiguous, naming %s and %s', (digits, country, mine, theirs, other) => {
    const decision = decideRecipient(digits, { defaultRegion: country });
    expect(decision).toMatchObject({ outcome: 'refused', code: 'recipient_ambiguous', e164: theirs });
    if (decision.outcome === 'refused') {
      expect(decision.error).toContain(`${theirs} (${other})`);
      expect(decision.error).toContain(`${mine} (${country})`);
    }
  });

  it.each(nationalOnly)('%s with sms.default_region %s is read as %s, noted as national', (digits, country, mine) => {
    expect(decideRecipient(digits, { defaultRegion: country })).toMatchObject({ outcome: 'national', basis: 'default_region', e164: mine });
  });

  it.each(international)('%s (a player of %s) stays international with sms.default_region GB and unset: %s', (digits, _country, e164) => {
    expect(decideRecipient(digits, { defaultRegion: 'GB' })).toMatchObject({ outcome: 'as_written', e164 });
    expect(decideRecipient(digits, {})).toMatchObject({ outcome: 'as_written', e164 });
  });

  it.each(crossing)('%s without sms.default_region is read after "+" as before (nothing says otherwise)', (digits, _country, _mine, theirs) => {
    expect(decideRecipient(digits, {})).toMatchObject({ outcome: 'as_written', e164: theirs });
  });

  it('2482512345 with sms.default_region GB goes to the Seychelles: not a GB number, nothing contradicts it', () => {
    expect(decideRecipient('2482512345', { defaultRegion: 'GB' })).toMatchObject({ outcome: 'as_written', e164: '+2482512345' });
  });

  it.each([
    ['07700900123', 'GB', '+447700900123'],
    ['+447700900123', 'GB', '+447700900123'],
    ['00447700900123', undefined, '+447700900123'],
    ['+44 (7700) 900-123', undefined, '+447700900123'],
    ['7700900123', 'GB', '+447700900123'],
  ] as const)('%s (sms.default_region %s) is %s, as before', (written, defaultRegion, e164) => {
    expect(decideRecipient(written, { defaultRegion })).toMatchObject({ e164 });
  });

  it.each([
    ['letters', 'call me', undefined],
    ['a national number without sms.default_region', '07700900123', undefined],
    ['too short', '12', 'GB'],
    ['a 10,000-digit string (bounded work)', '4'.repeat(10_000), 'GB'],
    ['+ and letters', '+44abc', undefined],
  ] as const)('refuses %s as no phone number', (_label, written, defaultRegion) => {
    const decision = decideRecipient(written, { defaultRegion });
    expect(decision.outcome).toBe('invalid');
    if (decision.outcome === 'invalid') expect(decision.error.length).toBeLessThan(200);
  });
});
