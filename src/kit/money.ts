/**
 * Money as exact integers: amounts are held in micro-units (millionths of the currency's main unit) as bigint in
 * code and BIGINT in the ledger, so sums over millions of messages never round (docs/costs.md "Money"). Prices are
 * read from decimal text (a provider's "0.03330000", a configured "0.0400"), never through a double.
 */

/** Micro-units per main unit: six decimals hold every provider price seen (Vonage writes eight, all zero past six). */
export const MICROS_PER_UNIT = 1_000_000n;

/** An ISO 4217 code: three capital letters. */
export const CURRENCY_PATTERN = /^[A-Z]{3}$/;

/** Minor-unit digits of the currencies that do not have two (ISO 4217); every other code has two. */
const MINOR_DIGITS: ReadonlyMap<string, number> = new Map([
  ['BIF', 0],
  ['CLP', 0],
  ['DJF', 0],
  ['GNF', 0],
  ['ISK', 0],
  ['JPY', 0],
  ['KMF', 0],
  ['KRW', 0],
  ['PYG', 0],
  ['RWF', 0],
  ['UGX', 0],
  ['VND', 0],
  ['VUV', 0],
  ['XAF', 0],
  ['XOF', 0],
  ['XPF', 0],
  ['BHD', 3],
  ['IQD', 3],
  ['JOD', 3],
  ['KWD', 3],
  ['LYD', 3],
  ['OMR', 3],
  ['TND', 3],
]);

export function minorDigits(currency: string): number {
  return MINOR_DIGITS.get(currency) ?? 2;
}

/**
 * Reads a decimal amount ("0.0333", "-0.00750", "12", "1e-2" is refused) into micro-units. Digits past the sixth
 * decimal are rounded half to even (a price of 0.0000005 is 0 or 1 micro-unit the way a bank rounds); null when the
 * text is no plain decimal number.
 */
export function parseMicros(text: string): bigint | null {
  const m = /^\s*([+-])?(\d+)(?:\.(\d*))?\s*$/.exec(text) ?? /^\s*([+-])?()\.(\d+)\s*$/.exec(text);
  if (!m) return null;
  const [, sign, whole, fraction = ''] = m;
  if (whole!.length > 12) return null;
  const kept = fraction.slice(0, 6).padEnd(6, '0');
  let micros = BigInt(whole || '0') * MICROS_PER_UNIT + BigInt(kept);
  const rest = fraction.slice(6);
  if (/[1-9]/.test(rest)) {
    const firstDropped = rest.charCodeAt(0) - 48;
    const beyondHalf = firstDropped > 5 || (firstDropped === 5 && /[1-9]/.test(rest.slice(1)));
    const half = firstDropped === 5 && !/[1-9]/.test(rest.slice(1));
    if (beyondHalf || (half && micros % 2n === 1n)) micros += 1n;
  }
  return sign === '-' ? -micros : micros;
}

/** A JSON number as a provider sent it (Infobip's pricePerMessage): its shortest decimal text, read exactly. */
export function microsOfNumber(value: number): bigint | null {
  if (!Number.isFinite(value)) return null;
  // toString gives the shortest text that reads back as the same double: "0.01", not 0.01000000000000000020816…
  const text = Math.abs(value) < 1e-6 && value !== 0 ? value.toFixed(12) : String(value);
  return parseMicros(text);
}

/**
 * The amount as decimal text: at least the currency's minor digits, more only where the amount has them
 * ("0.0333", "12.50", "0.000050"), so nothing is rounded away.
 */
export function formatMicros(micros: bigint, currency: string): string {
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  const whole = abs / MICROS_PER_UNIT;
  let fraction = (abs % MICROS_PER_UNIT).toString().padStart(6, '0');
  const minimum = minorDigits(currency);
  while (fraction.length > minimum && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** `micros` shared out `count` ways, rounded half to even to the micro-unit (a cost per delivered message); null for none. */
export function divideMicros(micros: bigint, count: number | bigint): bigint | null {
  const n = BigInt(count);
  if (n <= 0n) return null;
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  let q = abs / n;
  const r2 = (abs % n) * 2n;
  if (r2 > n || (r2 === n && q % 2n === 1n)) q += 1n;
  return negative ? -q : q;
}

/** A ledger BIGINT as bigint: PostgreSQL's driver gives text, SQLite's a number (exact below 2^53 micro-units). */
export function toMicros(value: string | number | bigint | null | undefined): bigint {
  if (value === null || value === undefined) return 0n;
  return typeof value === 'bigint' ? value : BigInt(value);
}

/** Micro-units as a number of main units, for a Prometheus sample only (metrics are doubles; the ledger is exact). */
export function microsToUnits(micros: bigint): number {
  return Number(micros) / 1_000_000;
}
