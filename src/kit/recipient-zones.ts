/**
 * The time zones a recipient may be in, from its country and number (IANA names, read by Intl). A country with one
 * zone has it in ONE_ZONE; a country with several lists them all in SEVERAL_ZONES and, where its numbering plan is
 * geographic, maps national prefixes to the zone they cover (the longest prefix wins). A number whose prefix is in no
 * list (a mobile range that is not geographic, as in Australia and Russia, or a code the table lacks) may be in any
 * of its country's zones: quiet hours then hold it until the window is open in every one of them, so that an
 * unknown prefix never means a message at night (docs/routing.md "Quiet hours").
 * Sources: the North American Numbering Plan Administrator's area code map, Anatel's DDD list, the IFT's Mexican
 * numbering plan, the Australian Communications and Media Authority's numbering plan, the IANA tz database.
 */
import { getCountryCallingCode, isSupportedCountry } from 'libphonenumber-js/mobile';

/** Countries with one zone (or whose operators run on one civil time). Others need a window's own `zone`. */
const ONE_ZONE: ReadonlyMap<string, string> = new Map([
  ['AR', 'America/Argentina/Buenos_Aires'],
  ['AT', 'Europe/Vienna'],
  ['BE', 'Europe/Brussels'],
  ['BG', 'Europe/Sofia'],
  ['CH', 'Europe/Zurich'],
  // Easter Island (Pacific/Easter, two hours behind) is left out: a window with its own zone covers it.
  ['CL', 'America/Santiago'],
  ['CO', 'America/Bogota'],
  ['CY', 'Asia/Nicosia'],
  ['CZ', 'Europe/Prague'],
  ['DE', 'Europe/Berlin'],
  ['DK', 'Europe/Copenhagen'],
  ['EE', 'Europe/Tallinn'],
  ['FI', 'Europe/Helsinki'],
  ['FR', 'Europe/Paris'],
  ['GB', 'Europe/London'],
  ['GH', 'Africa/Accra'],
  ['GR', 'Europe/Athens'],
  ['HR', 'Europe/Zagreb'],
  ['HU', 'Europe/Budapest'],
  ['IE', 'Europe/Dublin'],
  ['IN', 'Asia/Kolkata'],
  ['IT', 'Europe/Rome'],
  ['JP', 'Asia/Tokyo'],
  ['KE', 'Africa/Nairobi'],
  ['LT', 'Europe/Vilnius'],
  ['LU', 'Europe/Luxembourg'],
  ['LV', 'Europe/Riga'],
  ['MT', 'Europe/Malta'],
  ['NG', 'Africa/Lagos'],
  ['NL', 'Europe/Amsterdam'],
  ['NO', 'Europe/Oslo'],
  ['NZ', 'Pacific/Auckland'],
  ['PE', 'America/Lima'],
  ['PL', 'Europe/Warsaw'],
  ['RO', 'Europe/Bucharest'],
  ['RS', 'Europe/Belgrade'],
  ['SE', 'Europe/Stockholm'],
  ['SI', 'Europe/Ljubljana'],
  ['SK', 'Europe/Bratislava'],
  ['TR', 'Europe/Istanbul'],
  ['UA', 'Europe/Kyiv'],
  ['ZA', 'Africa/Johannesburg'],
]);

interface SeveralZones {
  /** Every zone of the country: the candidates of a number whose prefix is not below. */
  zones: readonly string[];
  /** National prefix (digits after the country calling code) → zone. */
  prefixes: ReadonlyMap<string, string>;
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
  'America/St_Johns',
  'America/Halifax',
  'America/Moncton',
  'America/Toronto',
  'America/Winnipeg',
  'America/Regina',
  'America/Edmonton',
  'America/Vancouver',
];

const SEVERAL_ZONES: ReadonlyMap<string, SeveralZones> = new Map([
  [
    'US',
    {
      zones: US_ZONES,
      // Area codes wholly within one zone; one that straddles a zone line (or is not listed) takes every zone.
      prefixes: byPrefix({
        'America/New_York':
          '201 202 203 207 212 215 216 239 240 267 301 302 304 305 315 321 339 347 352 401 404 407 410 412 413 434 440 443 475 484 508 516 518 540 551 561 585 603 607 609 610 614 617 631 646 678 703 704 716 717 718 724 727 732 757 770 774 781 786 802 803 804 813 828 843 845 857 860 862 863 904 908 910 914 917 919 929 937 941 954 973 978 980',
        'America/Chicago':
          '205 210 214 217 218 225 251 256 262 281 309 312 314 316 318 319 320 331 334 337 361 402 405 409 414 417 469 479 501 504 507 512 515 563 573 601 608 612 615 618 630 636 641 651 662 682 708 713 715 731 763 773 779 815 816 817 830 832 847 872 901 903 913 918 920 936 940 952 956 972 979',
        'America/Denver': '303 307 385 406 435 505 575 719 720 801 970',
        'America/Phoenix': '480 520 602 623 928',
        'America/Los_Angeles':
          '206 209 213 253 310 323 360 408 415 424 425 442 503 509 510 530 559 562 619 626 628 650 657 661 669 702 707 714 725 747 760 775 805 818 831 858 909 916 925 949 951 971',
        'America/Anchorage': '907',
        'Pacific/Honolulu': '808',
      }),
    },
  ],
  [
    'CA',
    {
      zones: CA_ZONES,
      prefixes: byPrefix({
        'America/St_Johns': '709',
        'America/Halifax': '782 902',
        'America/Moncton': '506',
        'America/Toronto': '226 249 289 343 365 367 416 418 437 438 450 514 519 548 579 581 613 647 705 819 873 905',
        'America/Winnipeg': '204 431',
        'America/Regina': '306 639',
        'America/Edmonton': '368 403 587 780 825',
        'America/Vancouver': '236 250 604 672 778',
      }),
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
        'America/Cancun': '998 984 983',
        'America/Chihuahua': '614 625 627 639',
        'America/Ciudad_Juarez': '656',
        'America/Mazatlan': '612 624 667 669 687',
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
        'Australia/Adelaide': '88',
        'Australia/Perth': '89',
      }),
    },
  ],
  [
    'RU',
    {
      zones: [
        'Europe/Kaliningrad',
        'Europe/Moscow',
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
]);

/** Whether the table knows this country's zone(s): a window naming another country needs its own `zone`. */
export function hasKnownZones(country: string): boolean {
  return ONE_ZONE.has(country) || SEVERAL_ZONES.has(country);
}

/**
 * The zones `e164` may be in, given its country: one zone when the country has one or the prefix names it, every zone
 * of the country otherwise; empty for a country the table does not know.
 */
export function zonesOfRecipient(e164: string, country: string): readonly string[] {
  const one = ONE_ZONE.get(country);
  if (one) return [one];
  const several = SEVERAL_ZONES.get(country);
  if (!several || !isSupportedCountry(country)) return [];
  const callingCode = getCountryCallingCode(country);
  const national = e164.startsWith(`+${callingCode}`) ? e164.slice(1 + callingCode.length) : '';
  for (let length = Math.min(5, national.length); length > 0; length--) {
    const zone = several.prefixes.get(national.slice(0, length));
    if (zone) return [zone];
  }
  return several.zones;
}
