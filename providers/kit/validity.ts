/**
 * A message's validity (SendRequest.validUntil: a route's or rule's `validity`, docs/routing.md "Validity") as each
 * provider takes it: what is left of it when the plugin sends, within the provider's own bounds. A provider whose unit
 * is coarser (seconds, minutes) is given the whole units left, rounded down: never more than is left (a held message
 * may reach its send with little left), except a provider's own minimum.
 */

/**
 * Milliseconds left of the validity at `now`, raised to `minMs` and cut to `maxMs`; undefined when none was asked.
 * Rounded up to the whole second: the milliseconds between the send's start and the plugin's call would otherwise
 * cost a fresh message a whole unit (a route's 90 minutes reaching Infobip as 89).
 */
export function validityLeft(validUntil: number | undefined, now: number, bounds: { minMs: number; maxMs: number }): number | undefined {
  if (validUntil === undefined) return undefined;
  const left = Math.ceil((validUntil - now) / 1_000) * 1_000;
  return Math.min(bounds.maxMs, Math.max(bounds.minMs, left));
}

const two = (n: number) => String(n).padStart(2, '0');

/**
 * SMPP 3.4 §7.1.1's relative time, `YYMMDDhhmmss000R`: years, months and days are written as days (an SMSC counts
 * a month as it likes), at most 99 of them.
 */
export function smppRelativeTime(ms: number): string {
  let seconds = Math.min(99 * 86_400, Math.max(1, Math.floor(ms / 1_000)));
  const days = Math.floor(seconds / 86_400);
  seconds -= days * 86_400;
  const hours = Math.floor(seconds / 3_600);
  const minutes = Math.floor((seconds % 3_600) / 60);
  return `0000${two(days)}${two(hours)}${two(minutes)}${two(seconds % 60)}000R`;
}
