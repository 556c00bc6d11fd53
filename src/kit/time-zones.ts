/**
 * The recipient's local time, for route rules on hours and days (docs/routing.md "Local time"). The zone comes from
 * the number: `routing.zones` first (longest prefix), then the tables below by prefix where a country spans several
 * zones and its numbers say where (US and Canadian area codes, Brazilian DDD, Mexican area codes), then the
 * country's main zone. Mobile numbers are not geographic in most countries (Australia, Russia, Spain's islands), so
 * there the main zone is a guess the operator can correct with `routing.zones`. The offsets, daylight saving
 * included, are Node's own (Intl, the ICU time-zone data), never computed here.
 */

/** Each country's zone: the only one, or where most of its people live. */
const COUNTRY_ZONES: Readonly<Record<string, string>> = {
  AD: 'Europe/Andorra',
  AE: 'Asia/Dubai',
  AL: 'Europe/Tirane',
  AM: 'Asia/Yerevan',
  AO: 'Africa/Luanda',
  AR: 'America/Argentina/Buenos_Aires',
  AT: 'Europe/Vienna',
  AU: 'Australia/Sydney',
  AZ: 'Asia/Baku',
  BA: 'Europe/Sarajevo',
  BB: 'America/Barbados',
  BD: 'Asia/Dhaka',
  BE: 'Europe/Brussels',
  BG: 'Europe/Sofia',
  BH: 'Asia/Bahrain',
  BO: 'America/La_Paz',
  BR: 'America/Sao_Paulo',
  BS: 'America/Nassau',
  BW: 'Africa/Gaborone',
  BY: 'Europe/Minsk',
  CA: 'America/Toronto',
  CH: 'Europe/Zurich',
  CI: 'Africa/Abidjan',
  CL: 'America/Santiago',
  CM: 'Africa/Douala',
  CN: 'Asia/Shanghai',
  CO: 'America/Bogota',
  CR: 'America/Costa_Rica',
  CU: 'America/Havana',
  CY: 'Asia/Nicosia',
  CZ: 'Europe/Prague',
  DE: 'Europe/Berlin',
  DK: 'Europe/Copenhagen',
  DO: 'America/Santo_Domingo',
  DZ: 'Africa/Algiers',
  EC: 'America/Guayaquil',
  EE: 'Europe/Tallinn',
  EG: 'Africa/Cairo',
  ES: 'Europe/Madrid',
  ET: 'Africa/Addis_Ababa',
  FI: 'Europe/Helsinki',
  FJ: 'Pacific/Fiji',
  FR: 'Europe/Paris',
  GB: 'Europe/London',
  GE: 'Asia/Tbilisi',
  GH: 'Africa/Accra',
  GI: 'Europe/Gibraltar',
  GR: 'Europe/Athens',
  GT: 'America/Guatemala',
  HK: 'Asia/Hong_Kong',
  HN: 'America/Tegucigalpa',
  HR: 'Europe/Zagreb',
  HU: 'Europe/Budapest',
  ID: 'Asia/Jakarta',
  IE: 'Europe/Dublin',
  IL: 'Asia/Jerusalem',
  IN: 'Asia/Kolkata',
  IQ: 'Asia/Baghdad',
  IR: 'Asia/Tehran',
  IS: 'Atlantic/Reykjavik',
  IT: 'Europe/Rome',
  JM: 'America/Jamaica',
  JO: 'Asia/Amman',
  JP: 'Asia/Tokyo',
  KE: 'Africa/Nairobi',
  KH: 'Asia/Phnom_Penh',
  KR: 'Asia/Seoul',
  KW: 'Asia/Kuwait',
  KZ: 'Asia/Almaty',
  LB: 'Asia/Beirut',
  LI: 'Europe/Vaduz',
  LK: 'Asia/Colombo',
  LT: 'Europe/Vilnius',
  LU: 'Europe/Luxembourg',
  LV: 'Europe/Riga',
  MA: 'Africa/Casablanca',
  MC: 'Europe/Monaco',
  MD: 'Europe/Chisinau',
  ME: 'Europe/Podgorica',
  MK: 'Europe/Skopje',
  MM: 'Asia/Yangon',
  MN: 'Asia/Ulaanbaatar',
  MT: 'Europe/Malta',
  MU: 'Indian/Mauritius',
  MX: 'America/Mexico_City',
  MY: 'Asia/Kuala_Lumpur',
  MZ: 'Africa/Maputo',
  NA: 'Africa/Windhoek',
  NG: 'Africa/Lagos',
  NI: 'America/Managua',
  NL: 'Europe/Amsterdam',
  NO: 'Europe/Oslo',
  NP: 'Asia/Kathmandu',
  NZ: 'Pacific/Auckland',
  OM: 'Asia/Muscat',
  PA: 'America/Panama',
  PE: 'America/Lima',
  PH: 'Asia/Manila',
  PK: 'Asia/Karachi',
  PL: 'Europe/Warsaw',
  PR: 'America/Puerto_Rico',
  PT: 'Europe/Lisbon',
  PY: 'America/Asuncion',
  QA: 'Asia/Qatar',
  RO: 'Europe/Bucharest',
  RS: 'Europe/Belgrade',
  RU: 'Europe/Moscow',
  RW: 'Africa/Kigali',
  SA: 'Asia/Riyadh',
  SE: 'Europe/Stockholm',
  SG: 'Asia/Singapore',
  SI: 'Europe/Ljubljana',
  SK: 'Europe/Bratislava',
  SM: 'Europe/San_Marino',
  SN: 'Africa/Dakar',
  SV: 'America/El_Salvador',
  TH: 'Asia/Bangkok',
  TN: 'Africa/Tunis',
  TR: 'Europe/Istanbul',
  TT: 'America/Port_of_Spain',
  TW: 'Asia/Taipei',
  TZ: 'Africa/Dar_es_Salaam',
  UA: 'Europe/Kyiv',
  UG: 'Africa/Kampala',
  US: 'America/New_York',
  UY: 'America/Montevideo',
  UZ: 'Asia/Tashkent',
  VA: 'Europe/Vatican',
  VE: 'America/Caracas',
  VN: 'Asia/Ho_Chi_Minh',
  ZA: 'Africa/Johannesburg',
  ZM: 'Africa/Lusaka',
  ZW: 'Africa/Harare',
};

/** Prefixes (digits after +) of one zone, as a list per zone; the country's main zone covers the rest. */
const PREFIX_ZONES: ReadonlyArray<readonly [string, string]> = [
  // United States (+1 area codes; the rest of the US is Eastern). Area codes split between zones go by their main part.
  [
    'America/Los_Angeles',
    '1209 1213 1279 1310 1323 1341 1350 1408 1415 1424 1442 1510 1530 1559 1562 1619 1626 1628 1650 1657 1661 1669 1707 1714 1747 1760 1805 1818 1820 1831 1840 1858 1909 1916 1925 1949 1951 1206 1253 1360 1425 1509 1564 1458 1503 1541 1971 1702 1725 1775',
  ],
  ['America/Denver', '1303 1719 1720 1970 1983 1385 1435 1801 1505 1575 1307 1406 1208 1986 1915'],
  ['America/Phoenix', '1480 1520 1602 1623 1928'],
  [
    'America/Chicago',
    '1210 1214 1254 1281 1325 1346 1361 1409 1430 1432 1469 1512 1682 1713 1726 1737 1806 1817 1830 1832 1903 1936 1940 1945 1956 1972 1979 1217 1224 1309 1312 1331 1447 1464 1618 1630 1708 1773 1779 1815 1847 1872 1218 1320 1507 1612 1651 1763 1952 1262 1274 1414 1534 1608 1715 1920 1319 1515 1563 1641 1712 1314 1417 1557 1573 1636 1660 1816 1975 1316 1620 1785 1913 1308 1402 1531 1405 1539 1572 1580 1918 1479 1501 1870 1225 1318 1337 1504 1985 1228 1601 1662 1769 1205 1251 1256 1334 1659 1938 1615 1629 1731 1901 1931 1701 1605',
  ],
  ['America/Anchorage', '1907'],
  ['Pacific/Honolulu', '1808'],
  // Canada (+1 area codes; Ontario and Quebec are the country's main zone).
  ['America/Vancouver', '1236 1250 1257 1604 1672 1778'],
  ['America/Edmonton', '1368 1403 1587 1780 1825 1867'],
  ['America/Regina', '1306 1474 1639'],
  ['America/Winnipeg', '1204 1431 1584'],
  ['America/Halifax', '1782 1902'],
  ['America/Moncton', '1506'],
  ['America/St_Johns', '1709 1879'],
  // Brazil (+55 DDD, mobiles included); the rest is UTC-3 like São Paulo.
  ['America/Cuiaba', '5565 5566'],
  ['America/Campo_Grande', '5567'],
  ['America/Rio_Branco', '5568'],
  ['America/Porto_Velho', '5569'],
  ['America/Manaus', '5592 5597'],
  ['America/Boa_Vista', '5595'],
  // Mexico (+52 area codes, mobiles included); the rest keeps Mexico City's time.
  ['America/Tijuana', '52664 52686 52646 52665 52661'],
  ['America/Hermosillo', '52662 52644 52631 52642'],
  ['America/Mazatlan', '52669 52667 52668 52612 52624'],
  ['America/Chihuahua', '52614 52625 52627 52636 52639 52648'],
  ['America/Ciudad_Juarez', '52656'],
  ['America/Cancun', '52998 52984 52983 52987'],
  // Australian fixed lines by state (mobiles, 04, are not geographic: Sydney).
  ['Australia/Melbourne', '613'],
  ['Australia/Brisbane', '617'],
  ['Australia/Adelaide', '618'],
];

const BUILT_IN = new Map<string, string>(PREFIX_ZONES.flatMap(([zone, list]) => list.split(' ').map((p) => [p, zone] as const)));

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

/**
 * The zone of a number in E.164: `overrides` (prefixes with +) by longest prefix, then the built-in prefixes, then
 * the country's zone; undefined for a country the table does not know (a rule on hours then does not match).
 */
export function zoneOfNumber(e164: string, country: string | undefined, overrides: ReadonlyMap<string, string> = new Map()): string | undefined {
  for (let length = Math.min(e164.length, 16); length >= 2; length--) {
    const zone = overrides.get(e164.slice(0, length));
    if (zone) return zone;
  }
  const digits = e164.slice(1);
  for (let length = Math.min(digits.length, 5); length >= 3; length--) {
    const zone = BUILT_IN.get(digits.slice(0, length));
    if (zone) return zone;
  }
  return country === undefined ? undefined : COUNTRY_ZONES[country];
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

const WEEKDAYS: Readonly<Record<string, number>> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4, Sat: 5, Sun: 6 };
const formats = new Map<string, Intl.DateTimeFormat>();

export function localTimeIn(zone: string, at: number): LocalTime {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
    });
    formats.set(zone, format);
  }
  const parts: Record<string, string> = {};
  for (const p of format.formatToParts(at)) parts[p.type] = p.value;
  return {
    zone,
    date: `${parts.year}-${parts.month}-${parts.day}`,
    weekday: WEEKDAYS[parts.weekday!] ?? 0,
    minutes: Number(parts.hour) * 60 + Number(parts.minute),
  };
}
