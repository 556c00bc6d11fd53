/**
 * Which address a request comes from, for the failed-authentication limit (src/auth/failure-limit.ts). The TCP
 * peer, unless the peer is one of `server.trusted_proxies`: then X-Forwarded-For is read from the right, skipping
 * trusted proxies, and the first address no trusted proxy vouches for is the client (docs/trust.md). Entries left of
 * it were written by the client itself and are never believed. Pure.
 */
import { normaliseAddress } from './address-blocks.js';

/** Forwarded hops read at most: a longer header is cut from the left, so the work stays bounded before authentication. */
const MAX_HOPS = 32;
/** An entry longer than any address is not one; it is kept only as this many characters of a key. */
const MAX_ENTRY = 64;

/**
 * The client's address: `peer` when it is not a trusted proxy (or no header came), else the rightmost
 * X-Forwarded-For hop that is not a trusted proxy; when every hop is trusted, the leftmost one.
 */
export function clientAddressOf(peer: string, forwardedFor: string | undefined, isTrustedProxy: (address: string) => boolean): string {
  const self = normaliseAddress(peer);
  if (!forwardedFor || !isTrustedProxy(self)) return self;
  // Only the last MAX_HOPS entries are split out: the rest of a long header is never walked.
  const tail = forwardedFor.length > MAX_HOPS * (MAX_ENTRY + 1) ? forwardedFor.slice(-MAX_HOPS * (MAX_ENTRY + 1)) : forwardedFor;
  const hops = tail.split(',').slice(-MAX_HOPS);
  let last = self;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normaliseAddress(hops[i]!).slice(0, MAX_ENTRY);
    if (hop === '') continue;
    if (!isTrustedProxy(hop)) return hop;
    last = hop;
  }
  return last;
}
