/**
 * How a recipient is read, so that no message goes to another country than its player's (docs/operator-api.md
 * "Requests as the CRM sends them"). The CRM writes international numbers without "+" (its sample 254716595289),
 * so a digits-only number is first read as international. What the gateway knows can contradict that reading:
 * - the player's record (operator.backend sql: its `country` and `mobile_prefix`) decides when there is one: the
 *   international reading stands when it lies in the player's country, else a national reading that does is taken,
 *   else the message is refused (`recipient_country_mismatch`); a number written with "+" or "00" is as written, and
 *   refused the same way when it lies elsewhere;
 * - without a record, sms.default_region: a number valid both as international and as a national number of that
 *   region, the two different, is refused (`recipient_ambiguous`) rather than guessed.
 * "Lies in the player's country" compares calling codes: countries sharing one (+1, +7, +44) share a numbering plan,
 * where both readings give the same number, so the digits cannot tell them apart. Pure.
 */
import { callingCodeOf, mainCountryOf, readInternational, readNational, readWritten, type NumberReading, type WrittenNumber } from '../kit/phone-number.js';
import type { PlayerCountry } from '../operator/backend.js';

export type { PlayerCountry };

export type RecipientRefusalCode = 'recipient_ambiguous' | 'recipient_country_mismatch';
export const RECIPIENT_REFUSAL_CODES: readonly RecipientRefusalCode[] = ['recipient_ambiguous', 'recipient_country_mismatch'];

/** Why a digits-only number was read as national: the player's record, or sms.default_region. */
export type NationalBasis = 'record' | 'default_region';

export type RecipientDecision =
  /** As written: "+" or "00", a trunk "0", or digits read after "+" (the CRM's way of writing them). */
  | { outcome: 'as_written'; e164: string; country: string | undefined }
  | { outcome: 'national'; basis: NationalBasis; e164: string; country: string | undefined; note: string }
  /** `e164`: the first reading, stored on the refused message. */
  | { outcome: 'refused'; code: RecipientRefusalCode; e164: string; error: string }
  /** Not a phone number at all: refused before anything is stored. */
  | { outcome: 'invalid'; error: string };

/** Longer is no phone number (E.164 has at most 15 digits): the parse below never sees more. */
const MAX_LENGTH = 40;

interface Place {
  country: string | undefined;
  codes: Set<string>;
  /** Where a national reading is tried: the main country of the player's number (the phone's) first, then `country`. */
  regions: string[];
}

/** The usable part of a record; undefined when it names neither a known country nor a calling code. */
function placeOf(record: PlayerCountry): Place | undefined {
  const country = callingCodeOf(record.country) ? record.country : undefined;
  const codes = new Set<string>();
  const regions: string[] = [];
  // The player's own number first (a mobile written with "+" stands alone, src/operator/players/player-phone.ts), then the
  // prefix: calling codes are prefix-free, so the first 1 to 3 digits that are one are the number's.
  const mobileDigits = record.mobile?.startsWith('+') ? record.mobile.slice(1, 4) : '';
  const prefixDigits = /^\+\d{1,3}$/.test(record.mobilePrefix) ? record.mobilePrefix.slice(1) : '';
  for (const digits of [mobileDigits, prefixDigits]) {
    for (let length = 1; length <= digits.length; length++) {
      const code = digits.slice(0, length);
      const main = mainCountryOf(code);
      if (!main) continue;
      codes.add(code);
      if (!regions.includes(main)) regions.push(main);
      break;
    }
  }
  if (country) {
    codes.add(callingCodeOf(country)!);
    if (!regions.includes(country)) regions.push(country);
  }
  return codes.size > 0 ? { country, codes, regions } : undefined;
}

const named = (r: WrittenNumber) => `${r.e164} (${r.country ?? `+${r.callingCode}`})`;
const playerWords = (p: Place) =>
  [p.country && `country ${p.country}`, `calling code ${[...p.codes].map((c) => `+${c}`).join(' or ')}`].filter(Boolean).join(', ');

function notPhoneNumber(raw: string, hint: boolean): RecipientDecision {
  const shown = JSON.stringify(raw.length > 60 ? `${raw.slice(0, 57)}...` : raw);
  return { outcome: 'invalid', error: `recipient: ${shown} is not a phone number${hint ? ' (write it with +country code, or set sms.default_region)' : ''}` };
}

export function decideRecipient(raw: string, known: { record?: PlayerCountry; defaultRegion?: string }): RecipientDecision {
  const text = raw.trim();
  const compact = text.replace(/[\s().-]/g, '');
  if (compact.length > MAX_LENGTH) return notPhoneNumber(raw, false);
  const place = known.record && placeOf(known.record);
  const literal = /^(\+|00)\d+$/.exec(compact);
  if (literal) {
    const reading = readWritten(compact.replace(/^(\+|00)/, ''));
    if (!reading) return notPhoneNumber(raw, false);
    if (place && !place.codes.has(reading.callingCode)) return mismatch(raw, [reading], place);
    return { outcome: 'as_written', e164: reading.e164, country: reading.country };
  }
  if (!/^\d+$/.test(compact)) return notPhoneNumber(raw, !known.defaultRegion);

  const trunk = compact.startsWith('0');
  const international = trunk ? undefined : readInternational(compact);
  // The common case stops here, before any national parse (each costs as much as this one): a valid international
  // reading in the player's country, or, without a record, one that no region's national reading can rival (no
  // region, or digits that begin with the region's own calling code, which libphonenumber-js reads as that same
  // number when the rest is valid).
  if (international?.valid) {
    const unrivalled = place
      ? place.codes.has(international.callingCode)
      : !known.defaultRegion || callingCodeOf(known.defaultRegion) === international.callingCode;
    if (unrivalled) return { outcome: 'as_written', e164: international.e164, country: international.country };
  }
  const regions = [...(place?.regions ?? []), ...(known.defaultRegion ? [known.defaultRegion] : [])];
  const readings: NumberReading[] = international ? [international] : [];
  for (const region of regions) {
    const national = readNational(compact, region);
    if (national && !readings.some((r) => r.e164 === national.e164)) readings.push(national);
  }
  if (place) return withRecord(raw, readings, international, trunk, place);
  return withoutRecord(raw, readings, international, trunk, known.defaultRegion);
}

/** The record decides: the international reading when it lies in the player's country, else the one national reading that does. */
function withRecord(raw: string, readings: NumberReading[], international: NumberReading | undefined, trunk: boolean, place: Place): RecipientDecision {
  if (readings.length === 0) return notPhoneNumber(raw, false);
  // Valid readings first: a reading only possible (metadata lags new ranges) counts when no reading is valid.
  const valid = readings.filter((r) => r.valid);
  const tier = valid.length > 0 ? valid : readings;
  const inPlace = tier.filter((r) => place.codes.has(r.callingCode));
  if (international && inPlace.includes(international)) return { outcome: 'as_written', e164: international.e164, country: international.country };
  if (inPlace.length === 1) {
    const national = inPlace[0]!;
    // A trunk "0" is a national number as written; the record only said of which country.
    if (trunk) return { outcome: 'as_written', e164: national.e164, country: national.country ?? place.country };
    // Kept on the message for good (retention blanks the recipient, not the note): countries, no digits.
    const instead = international ? `, not as an international one in ${international.country ?? 'no country'} (+${international.callingCode})` : '';
    return {
      outcome: 'national',
      basis: 'record',
      e164: national.e164,
      country: national.country ?? place.country,
      note: `recipient read as a national number of ${national.country ?? `+${national.callingCode}`}${instead}: the player's record says ${playerWords(place)}`,
    };
  }
  if (inPlace.length > 1) return ambiguous(inPlace, `both lie in the player's country (${playerWords(place)})`);
  return mismatch(raw, tier, place);
}

/** sms.default_region decides: never a guess between two valid readings. */
function withoutRecord(
  raw: string,
  readings: NumberReading[],
  international: NumberReading | undefined,
  trunk: boolean,
  region: string | undefined,
): RecipientDecision {
  const national = readings.find((r) => r !== international);
  if (international?.valid) {
    if (national?.valid) return ambiguous([international, national], `sms.default_region is ${region} and there is no player record to decide`);
    return { outcome: 'as_written', e164: international.e164, country: international.country };
  }
  if (region) {
    // As before: a national number of sms.default_region when the international reading is not valid.
    if (!national) return notPhoneNumber(raw, false);
    if (trunk) return { outcome: 'as_written', e164: national.e164, country: national.country };
    return {
      outcome: 'national',
      basis: 'default_region',
      e164: national.e164,
      country: national.country,
      note: `recipient read as a national number of ${region} (sms.default_region): not a valid number with "+" before its digits`,
    };
  }
  if (international) return { outcome: 'as_written', e164: international.e164, country: international.country };
  return notPhoneNumber(raw, true);
}

function ambiguous(readings: NumberReading[], why: string): RecipientDecision {
  return {
    outcome: 'refused',
    code: 'recipient_ambiguous',
    e164: readings[0]!.e164,
    error: `recipient: reads as ${readings.map(named).join(' or as ')}; ${why}: write it with "+" and its country code`,
  };
}

function mismatch(raw: string, readings: WrittenNumber[], place: Place): RecipientDecision {
  const shown = readings.length > 0 ? `reads as ${readings.map(named).join(' or as ')}` : `${JSON.stringify(raw)} is not a number there`;
  return {
    outcome: 'refused',
    code: 'recipient_country_mismatch',
    e164: readings[0]?.e164 ?? raw,
    error: `recipient: ${shown}, none of it in the player's country (the record says ${playerWords(place)})`,
  };
}

/** How a message's recipient was read when not as written, or why it is refused: stored on the message (claim.ts). */
export type RecipientReadingNote =
  | { outcome: 'national'; basis: NationalBasis; note: string }
  | { outcome: 'refused'; code: RecipientRefusalCode; error: string };

/** The prepared message's fields for a decision (prepare.ts, player-records.ts). */
export function readingFields(decision: Exclude<RecipientDecision, { outcome: 'invalid' }>): {
  recipient: string;
  country: string | undefined;
  reading: RecipientReadingNote | undefined;
} {
  switch (decision.outcome) {
    case 'as_written':
      return { recipient: decision.e164, country: decision.country, reading: undefined };
    case 'national':
      return { recipient: decision.e164, country: decision.country, reading: { outcome: 'national', basis: decision.basis, note: decision.note } };
    case 'refused':
      return { recipient: decision.e164, country: undefined, reading: { outcome: 'refused', code: decision.code, error: decision.error } };
  }
}

/**
 * Whether a number already read lies in the player's country (its calling code is the record's): then the record
 * cannot change how it is read (player-records.ts skips reading it again). Cheap: no parse.
 */
export function liesWithPlayer(e164: string, record: PlayerCountry): boolean {
  const place = placeOf(record);
  if (!place) return true;
  for (const code of place.codes) if (e164.startsWith(`+${code}`)) return true;
  return false;
}
