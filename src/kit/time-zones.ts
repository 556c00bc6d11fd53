/**
 * The time zones of a recipient, from its country and number (IANA names, read by Intl): the one table of the gateway,
 * for route rules on hours and days (docs/routing.md "Local time") and for quiet hours (docs/routing.md "Quiet
 * hours"). A country with one zone has it in ONE_ZONE; a country with several lists them all in SEVERAL_ZONES, its
 * main zone (where most of its people live) first, and, where its numbering plan is geographic, maps national
 * prefixes to the zone they cover (the longest prefix wins). A number whose prefix is in no list (a mobile range that
 * is not geographic, as in Australia and Russia, or a code the table lacks) may be in any of its country's zones, and
 * an area code that straddles a zone line is in its main part's zone or the others. `routing.zones` (the operator's
 * prefixes) comes before all of it, for both. The offsets, daylight saving included, are Node's own (Intl, the ICU
 * time-zone data), never computed here.
 * Sources: the North American Numbering Plan Administrator's area code map, Anatel's DDD list, the IFT's Mexican
 * numbering plan, the Australian Communications and Media Authority's numbering plan, the IANA tz database.
 */
import { getCountryCallingCode, isSupportedCountry } from 'libphonenumber-js/mobile';

/**
 * Countries with one zone (or whose operators run on one civil time). Chile's Easter Island, Ecuador's Galápagos and
 * New Zealand's Chatham Islands keep their own time and are left to `routing.zones` or a window's own `zone`.
 */
const ONE_ZONE: ReadonlyMap<string, string> = new Map([
  ['AD', 'Europe/Andorra'],
  ['AE', 'Asia/Dubai'],
  ['AL', 'Europe/Tirane'],
  ['AM', 'Asia/Yerevan'],
  ['AO', 'Africa/Luanda'],
  ['AR', 'America/Argentina/Buenos_Aires'],
  ['AT', 'Europe/Vienna'],
  ['AZ', 'Asia/Baku'],
  ['BA', 'Europe/Sarajevo'],
  ['BB', 'America/Barbados'],
  ['BD', 'Asia/Dhaka'],
  ['BE', 'Europe/Brussels'],
  ['BG', 'Europe/Sofia'],
  ['BH', 'Asia/Bahrain'],
  ['BO', 'America/La_Paz'],
  ['BS', 'America/Nassau'],
  ['BW', 'Africa/Gaborone'],
  ['BY', 'Europe/Minsk'],
  ['CH', 'Europe/Zurich'],
  ['CI', 'Africa/Abidjan'],
  ['CL', 'America/Santiago'],
  ['CM', 'Africa/Douala'],
  ['CN', 'Asia/Shanghai'],
  ['CO', 'America/Bogota'],
  ['CR', 'America/Costa_Rica'],
  ['CU', 'America/Havana'],
  ['CY', 'Asia/Nicosia'],
  ['CZ', 'Europe/Prague'],
  ['DE', 'Europe/Berlin'],
  ['DK', 'Europe/Copenhagen'],
  ['DO', 'America/Santo_Domingo'],
  ['DZ', 'Africa/Algiers'],
  ['EC', 'America/Guayaquil'],
  ['EE', 'Europe/Tallinn'],
  ['EG', 'Africa/Cairo'],
  ['ET', 'Africa/Addis_Ababa'],
  ['FI', 'Europe/Helsinki'],
  ['FJ', 'Pacific/Fiji'],
  ['FR', 'Europe/Paris'],
  ['GB', 'Europe/London'],
  ['GE', 'Asia/Tbilisi'],
  ['GH', 'Africa/Accra'],
  ['GI', 'Europe/Gibraltar'],
  ['GR', 'Europe/Athens'],
  ['GT', 'America/Guatemala'],
  ['HK', 'Asia/Hong_Kong'],
  ['HN', 'America/Tegucigalpa'],
  ['HR', 'Europe/Zagreb'],
  ['HU', 'Europe/Budapest'],
  ['IE', 'Europe/Dublin'],
  ['IL', 'Asia/Jerusalem'],
  ['IN', 'Asia/Kolkata'],
  ['IQ', 'Asia/Baghdad'],
  ['IR', 'Asia/Tehran'],
  ['IS', 'Atlantic/Reykjavik'],
  ['IT', 'Europe/Rome'],
  ['JM', 'America/Jamaica'],
  ['JO', 'Asia/Amman'],
  ['JP', 'Asia/Tokyo'],
  ['KE', 'Africa/Nairobi'],
  ['KH', 'Asia/Phnom_Penh'],
  ['KR', 'Asia/Seoul'],
  ['KW', 'Asia/Kuwait'],
  ['KZ', 'Asia/Almaty'],
  ['LB', 'Asia/Beirut'],
  ['LI', 'Europe/Vaduz'],
  ['LK', 'Asia/Colombo'],
  ['LT', 'Europe/Vilnius'],
  ['LU', 'Europe/Luxembourg'],
  ['LV', 'Europe/Riga'],
  ['MA', 'Africa/Casablanca'],
  ['MC', 'Europe/Monaco'],
  ['MD', 'Europe/Chisinau'],
  ['ME', 'Europe/Podgorica'],
  ['MK', 'Europe/Skopje'],
  ['MM', 'Asia/Yangon'],
  ['MT', 'Europe/Malta'],
  ['MU', 'Indian/Mauritius'],
  ['MY', 'Asia/Kuala_Lumpur'],
  ['MZ', 'Africa/Maputo'],
  ['NA', 'Africa/Windhoek'],
  ['NG', 'Africa/Lagos'],
  ['NI', 'America/Managua'],
  ['NL', 'Europe/Amsterdam'],
  ['NO', 'Europe/Oslo'],
  ['NP', 'Asia/Kathmandu'],
  ['NZ', 'Pacific/Auckland'],
  ['OM', 'Asia/Muscat'],
  ['PA', 'America/Panama'],
  ['PE', 'America/Lima'],
  ['PH', 'Asia/Manila'],
  ['PK', 'Asia/Karachi'],
  ['PL', 'Europe/Warsaw'],
  ['PR', 'America/Puerto_Rico'],
  ['PY', 'America/Asuncion'],
  ['QA', 'Asia/Qatar'],
  ['RO', 'Europe/Bucharest'],
  ['RS', 'Europe/Belgrade'],
  ['RW', 'Africa/Kigali'],
  ['SA', 'Asia/Riyadh'],
  ['SE', 'Europe/Stockholm'],
  ['SG', 'Asia/Singapore'],
  ['SI', 'Europe/Ljubljana'],
  ['SK', 'Europe/Bratislava'],
  ['SM', 'Europe/San_Marino'],
  ['SN', 'Africa/Dakar'],
  ['SV', 'America/El_Salvador'],
  ['TH', 'Asia/Bangkok'],
  ['TN', 'Africa/Tunis'],
  ['TR', 'Europe/Istanbul'],
  ['TT', 'America/Port_of_Spain'],
  ['TW', 'Asia/Taipei'],
  ['TZ', 'Africa/Dar_es_Salaam'],
  ['UA', 'Europe/Kyiv'],
  ['UG', 'Africa/Kampala'],
  ['UY', 'America/Montevideo'],
  ['UZ', 'Asia/Tashkent'],
  ['VA', 'Europe/Vatican'],
  ['VE', 'America/Caracas'],
  ['VN', 'Asia/Ho_Chi_Minh'],
  ['ZA', 'Africa/Johannesburg'],
  ['ZM', 'Africa/Lusaka'],
  ['ZW', 'Africa/Harare'],
]);

interface SeveralZones {
  /** Every zone of the country, its main zone first: the candidates of a number whose prefix is not below. */
  zones: readonly string[];
  /** National prefix (digits after the country calling code) → its zone. */
  prefixes: ReadonlyMap<string, string>;
  /** National prefix of an area across a zone line → its main part's zone; the number may be in any of `zones`. */
  straddling?: ReadonlyMap<string, string>;
}

const byPrefix = (groups: Record<string, string>): ReadonlyMap<string, string> =>
  new Map(
    Object.entries(groups).flatMap(([zone, codes]) =>
      codes
        .split(/\s+/)
        .filter(Boolean)
        .map((code) => [code, zone] as const),
    ),
  );

const US_ZONES = ['America/New_York', 'America/Chicago', 'America/Denver', 'America/Phoenix', 'America/Los_Angeles', 'America/Anchorage', 'Pacific/Honolulu'];
const CA_ZONES = [
  'America/Toronto',
  'America/St_Johns',
  'America/Halifax',
  'America/Moncton',
  'America/Winnipeg',
  'America/Regina',
  'America/Edmonton',
  'America/Vancouver',
  'America/Whitehorse',
];

const SEVERAL_ZONES: ReadonlyMap<string, SeveralZones> = new Map([
  [
    'US',
    {
      zones: US_ZONES,
      // Area codes wholly within one zone; one that straddles a zone line (its main part's zone below) or is not
      // listed takes every zone.
      prefixes: byPrefix({
        'America/New_York':
          '201 202 203 207 212 215 216 239 240 267 301 302 304 305 315 321 339 347 352 401 404 407 410 412 413 434 440 443 475 484 508 516 518 540 551 561 585 603 607 609 610 614 617 631 646 678 703 704 716 717 718 724 727 732 757 770 774 781 786 802 803 804 813 828 843 845 857 860 862 863 904 908 910 914 917 919 929 937 941 954 973 978 980',
        'America/Chicago':
          '205 210 214 217 218 224 225 228 251 254 256 262 274 281 309 312 314 316 318 319 320 325 331 334 337 346 361 402 405 409 414 417 430 447 464 469 479 501 504 507 512 515 531 534 539 557 563 572 573 580 601 608 612 615 618 629 630 636 641 651 659 660 662 682 708 712 713 715 726 731 737 763 769 773 779 806 815 816 817 830 832 847 870 872 901 903 913 918 920 931 936 938 940 945 952 956 972 975 979 985',
        'America/Denver': '303 307 385 406 435 505 575 719 720 801 915 970 983',
        'America/Phoenix': '480 520 602 623 928',
        'America/Los_Angeles':
          '206 209 213 253 279 310 323 341 350 360 408 415 424 425 442 503 509 510 530 559 562 564 619 626 628 650 657 661 669 702 707 714 725 747 760 775 805 818 820 831 840 858 909 916 925 949 951 971',
        'America/Anchorage': '907',
        'Pacific/Honolulu': '808',
      }),
      straddling: new Map([
        ['208', 'America/Denver'],
        ['986', 'America/Denver'],
        ['541', 'America/Los_Angeles'],
        ['458', 'America/Los_Angeles'],
        ['308', 'America/Chicago'],
        ['432', 'America/Chicago'],
        ['605', 'America/Chicago'],
        ['620', 'America/Chicago'],
        ['701', 'America/Chicago'],
        ['785', 'America/Chicago'],
        ['850', 'America/New_York'],
      ]),
    },
  ],
  [
    'CA',
    {
      zones: CA_ZONES,
      prefixes: byPrefix({
        'America/St_Johns': '709 879',
        'America/Halifax': '782 902',
        'America/Moncton': '506',
        'America/Toronto': '226 249 289 343 365 367 416 418 437 438 450 514 519 548 579 581 613 647 705 819 873 905',
        'America/Winnipeg': '204 431 584',
        'America/Regina': '306 474 639',
        'America/Edmonton': '368 403 587 780 825',
        'America/Vancouver': '236 250 257 604 672 778',
      }),
      // The territories: Yellowknife's zone first; Whitehorse, Nunavut's Iqaluit and Rankin Inlet are in others.
      straddling: new Map([['867', 'America/Edmonton']]),
    },
  ],
  [
    'BR',
    {
      zones: [
        'America/Sao_Paulo',
        'America/Bahia',
        'America/Recife',
        'America/Fortaleza',
        'America/Belem',
        'America/Araguaina',
        'America/Cuiaba',
        'America/Campo_Grande',
        'America/Manaus',
        'America/Boa_Vista',
        'America/Porto_Velho',
        'America/Rio_Branco',
      ],
      // DDD (two-digit area codes), mobile and fixed alike.
      prefixes: byPrefix({
        'America/Sao_Paulo': '11 12 13 14 15 16 17 18 19 21 22 24 27 28 31 32 33 34 35 37 38 41 42 43 44 45 46 47 48 49 51 53 54 55 61 62 64',
        'America/Araguaina': '63',
        'America/Bahia': '71 73 74 75 77 79',
        'America/Recife': '81 82 83 84 87',
        'America/Fortaleza': '85 86 88 89 98 99',
        'America/Belem': '91 93 94 96',
        'America/Cuiaba': '65 66',
        'America/Campo_Grande': '67',
        'America/Manaus': '92 97',
        'America/Boa_Vista': '95',
        'America/Porto_Velho': '69',
        'America/Rio_Branco': '68',
      }),
    },
  ],
  [
    'MX',
    {
      zones: [
        'America/Mexico_City',
        'America/Monterrey',
        'America/Cancun',
        'America/Chihuahua',
        'America/Ciudad_Juarez',
        'America/Mazatlan',
        'America/Hermosillo',
        'America/Tijuana',
      ],
      prefixes: byPrefix({
        'America/Mexico_City': '55 33 222 442 477 443 999 461 449 444 311 312 951 961 771 722 246',
        'America/Monterrey': '81 844 866 871 899 834',
        'America/Cancun': '998 984 983 987',
        'America/Chihuahua': '614 625 627 636 639 648',
        'America/Ciudad_Juarez': '656',
        'America/Mazatlan': '612 624 667 668 669 687',
        'America/Hermosillo': '622 631 642 644 653 662',
        'America/Tijuana': '646 661 664 665 686',
      }),
    },
  ],
  [
    'ES',
    {
      zones: ['Europe/Madrid', 'Atlantic/Canary'],
      // Fixed lines of the Canary Islands, an hour behind the mainland; mobiles (6…, 7…) are not geographic.
      prefixes: byPrefix({ 'Atlantic/Canary': '822 828 922 928', 'Europe/Madrid': '91 93 94 95 96 97 98' }),
    },
  ],
  [
    'PT',
    {
      zones: ['Europe/Lisbon', 'Atlantic/Azores'],
      // Fixed lines of the Azores, an hour behind the mainland and Madeira; mobiles (9…) are not geographic.
      prefixes: byPrefix({ 'Atlantic/Azores': '292 295 296', 'Europe/Lisbon': '21 22 23 24 25 26 27 28 291' }),
    },
  ],
  [
    'AU',
    {
      zones: ['Australia/Sydney', 'Australia/Brisbane', 'Australia/Melbourne', 'Australia/Hobart', 'Australia/Adelaide', 'Australia/Darwin', 'Australia/Perth'],
      // Fixed lines only: mobile numbers (4…) are not geographic and take every zone.
      prefixes: byPrefix({
        'Australia/Sydney': '2',
        'Australia/Melbourne': '3',
        'Australia/Brisbane': '7',
        'Australia/Perth': '89',
      }),
      // 08 8 is South Australia and the Northern Territory, which keeps no daylight saving.
      straddling: new Map([['88', 'Australia/Adelaide']]),
    },
  ],
  [
    'RU',
    {
      zones: [
        'Europe/Moscow',
        'Europe/Kaliningrad',
        'Europe/Samara',
        'Asia/Yekaterinburg',
        'Asia/Omsk',
        'Asia/Novosibirsk',
        'Asia/Krasnoyarsk',
        'Asia/Irkutsk',
        'Asia/Yakutsk',
        'Asia/Vladivostok',
        'Asia/Magadan',
        'Asia/Kamchatka',
      ],
      // Geographic codes of the largest cities; mobile ranges (9…) are not geographic and take every zone.
      prefixes: byPrefix({
        'Europe/Kaliningrad': '4012',
        'Europe/Moscow': '495 499 812 831 843 863',
        'Europe/Samara': '846',
        'Asia/Yekaterinburg': '343 351',
        'Asia/Omsk': '3812',
        'Asia/Novosibirsk': '383',
        'Asia/Krasnoyarsk': '391',
        'Asia/Irkutsk': '3952',
        'Asia/Vladivostok': '423',
      }),
    },
  ],
  // Indonesia and Mongolia: mobiles are not geographic and the table has no fixed-line codes, so every zone.
  ['ID', { zones: ['Asia/Jakarta', 'Asia/Makassar', 'Asia/Jayapura'], prefixes: new Map() }],
  ['MN', { zones: ['Asia/Ulaanbaatar', 'Asia/Hovd'], prefixes: new Map() }],
]);

/** Whether the table knows this country's zone(s): a quiet hours window naming another country needs its own `zone`. */
export function hasKnownZones(country: string): boolean {
  return ONE_ZONE.has(country) || SEVERAL_ZONES.has(country);
}

const NO_OVERRIDES: ReadonlyMap<string, string> = new Map();

/** The zones `routing.zones` gives a number (prefixes with +, the longest wins), or undefined when none matches. */
function overrideOf(e164: string, overrides: ReadonlyMap<string, string>): string | undefined {
  for (let length = Math.min(e164.length, 16); length >= 2; length--) {
    const zone = overrides.get(e164.slice(0, length));
    if (zone) return zone;
  }
  return undefined;
}

/**
 * The zones `e164` may be in, the most likely first: the `overrides` zone (`routing.zones`) when a prefix matches;
 * otherwise one zone when the country has one or the prefix names it, or every zone of the country when the prefix
 * says nothing or straddles a zone line (its main part's zone first); empty for a country the table does not know.
 */
export function zonesOfNumber(e164: string, country: string | undefined, overrides: ReadonlyMap<string, string> = NO_OVERRIDES): readonly string[] {
  const override = overrideOf(e164, overrides);
  if (override) return [override];
  if (country === undefined) return [];
  const one = ONE_ZONE.get(country);
  if (one) return [one];
  const several = SEVERAL_ZONES.get(country);
  if (!several || !isSupportedCountry(country)) return [];
  const callingCode = getCountryCallingCode(country);
  const national = e164.startsWith(`+${callingCode}`) ? e164.slice(1 + callingCode.length) : '';
  for (let length = Math.min(5, national.length); length > 0; length--) {
    const prefix = national.slice(0, length);
    const zone = several.prefixes.get(prefix);
    if (zone) return [zone];
    const main = several.straddling?.get(prefix);
    if (main) return [main, ...several.zones.filter((z) => z !== main)];
  }
  return several.zones;
}

/** The one zone a route rule reads `e164`'s local time in: the most likely of zonesOfNumber; undefined when none. */
export function zoneOfNumber(e164: string, country: string | undefined, overrides: ReadonlyMap<string, string> = NO_OVERRIDES): string | undefined {
  return zonesOfNumber(e164, country, overrides)[0];
}

const known = new Map<string, boolean>();
/** Whether Node's ICU data knows the zone. */
export function isKnownTimeZone(zone: string): boolean {
  let ok = known.get(zone);
  if (ok === undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: zone });
      ok = true;
    } catch {
      ok = false;
    }
    known.set(zone, ok);
  }
  return ok;
}

/** A moment as read on the clocks of one zone. */
export interface LocalTime {
  zone: string;
  /** YYYY-MM-DD. */
  date: string;
  /** 0 Monday … 6 Sunday. */
  weekday: number;
  /** Minutes since local midnight. */
  minutes: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(zone: string): Intl.DateTimeFormat {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(zone, format);
  }
  return format;
}

const QUARTER_MS = 15 * 60_000;
/** Each zone's UTC offset by quarter hour, as read: Intl's formatToParts costs microseconds a call. */
const offsets = new Map<string, number>();

/**
 * The zone's offset from UTC at `at`, in ms (the zone's clock minus UTC), as Intl reads it. Every offset in use today
 * is a whole number of quarter hours, and so is the local time at which one changes: a change falls on a quarter hour
 * of UTC, so the offset at the quarter's start holds for the whole quarter, and the same night's messages share their
 * readings. (A quiet-hours decision held by a table of formatToParts calls cost 53–403 µs; with this, 12–38 µs.)
 */
export function utcOffsetAt(zone: string, at: number): number {
  const quarter = Math.floor(at / QUARTER_MS) * QUARTER_MS;
  const key = `${zone} ${quarter}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const parts: Record<string, number> = {};
    for (const p of formatOf(zone).formatToParts(quarter)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
    offset = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) - quarter;
    if (offsets.size >= 100_000) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

export function localTimeIn(zone: string, at: number): LocalTime {
  // The zone's clock as epoch ms read as if UTC.
  const local = new Date(at + utcOffsetAt(zone, at));
  return {
    zone,
    date: local.toISOString().slice(0, 10),
    // getUTCDay counts from Sunday; LocalTime from Monday.
    weekday: (local.getUTCDay() + 6) % 7,
    minutes: local.getUTCHours() * 60 + local.getUTCMinutes(),
  };
}
