/** Currency arithmetic (src/kit/money.ts): decimal text to micro-units and back, exactly, with the rounding stated. */
import { describe, expect, it } from 'vitest';
import { divideMicros, formatMicros, microsOfNumber, parseMicros } from '../../src/kit/money.js';

describe('money in micro-units', () => {
  it.each([
    ['a rate as configured', '0.0400', 40_000n],
    ["Vonage's eight decimals", '0.03330000', 33_300n],
    ["Twilio's negative price", '-0.00750', -7_500n],
    ['a whole amount', '12', 12_000_000n],
    ['no leading zero', '.5', 500_000n],
    ['a trailing point', '3.', 3_000_000n],
    ['the seventh decimal rounds half to even, down', '0.0000005', 0n],
    ['the seventh decimal rounds half to even, up', '0.0000015', 2n],
    ['past half rounds up', '0.00000051', 1n],
    ['below half rounds down', '0.0000004999', 0n],
    ['an exponent is no decimal', '1e-2', null],
    ['a comma is no decimal point', '0,04', null],
    ['text', 'free', null],
    ['more than twelve whole digits', '1234567890123', null],
  ])('reads %s: %j', (_label, text, micros) => {
    expect(parseMicros(text)).toBe(micros);
  });

  it.each([
    ['a JSON number as Infobip writes it', 0.01, 10_000n],
    ['a number a double cannot hold exactly', 0.1 + 0.2, 300_000n],
    ['a very small number', 5e-7, 0n],
  ])('reads %s', (_label, value, micros) => {
    expect(microsOfNumber(value)).toBe(micros);
  });

  it.each([
    ['two minor digits at least', 80_000n, 'EUR', '0.08'],
    ['more where the amount has them', 33_300n, 'EUR', '0.0333'],
    ['a whole amount', 12_000_000n, 'USD', '12.00'],
    ['a currency with no minor unit', 3_000_000n, 'JPY', '3'],
    ['a currency with three', 1_500_000n, 'KWD', '1.500'],
    ['a negative amount', -7_500n, 'USD', '-0.0075'],
    ['micro-units', 1n, 'EUR', '0.000001'],
  ])('writes %s', (_label, micros, currency, text) => {
    expect(formatMicros(micros, currency)).toBe(text);
  });

  it('sums a million prices of 0.1 to exactly 100000 (a double sum would not)', () => {
    let micros = 0n;
    let double = 0;
    for (let i = 0; i < 1_000_000; i++) {
      micros += parseMicros('0.1')!;
      double += 0.1;
    }
    expect(formatMicros(micros, 'EUR')).toBe('100000.00');
    expect(double).not.toBe(100_000);
  });

  it.each([
    ['an even share', 90_000n, 3, 30_000n],
    ['a half rounds to even (down)', 5n, 2, 2n],
    ['a half rounds to even (up)', 7n, 2, 4n],
    ['more than half rounds up', 2n, 3, 1n],
    ['nothing delivered', 10n, 0, null],
  ])('divides %s', (_label, micros, count, share) => {
    expect(divideMicros(micros, count)).toBe(share);
  });
});
