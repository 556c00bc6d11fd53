/**
 * Which address a request comes from, for the failed-authentication limit (src/auth/failure-limit.ts). The TCP
 * peer, unless the peer is one of `server.trusted_proxies`: then X-Forwarded-For is read from the right, skipping
 * trusted proxies, and the first address no trusted proxy vouches for is the client (docs/trust.md). Entries left of
 * it were written by the client itself and are never believed. Pure, apart from node:net's BlockList.
 */
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';

/** Forwarded hops read at most: a longer header is cut from the left, so the work stays bounded before authentication. */
const MAX_HOPS = 32;
/** An entry longer than any address is not one; it is kept only as this many characters of a key. */
const MAX_ENTRY = 64;

/** An IPv4 or IPv6 address, or a CIDR block of either (`10.0.0.0/8`, `2001:db8::/32`). */
export const addressOrBlock = z.string().refine((value) => parseBlock(value) !== undefined, 'must be an IP address or a CIDR block such as 10.0.0.0/8');

function parseBlock(value: string): { address: string; prefix: number; type: 'ipv4' | 'ipv6' } | undefined {
  const [address = '', prefixText, ...rest] = value.trim().split('/');
  const kind = isIP(address);
  if (kind === 0 || rest.length > 0) return undefined;
  const type = kind === 4 ? 'ipv4' : 'ipv6';
  const max = kind === 4 ? 32 : 128;
  if (prefixText === undefined) return { address, prefix: max, type };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) return undefined;
  return { address, prefix: Number(prefixText), type };
}

/** A test for membership of a list of addresses and blocks; an empty list holds nothing. */
export function createAddressSet(entries: readonly string[]): (address: string) => boolean {
  if (entries.length === 0) return () => false;
  const list = new BlockList();
  for (const entry of entries) {
    const block = parseBlock(entry)!;
    list.addSubnet(block.address, block.prefix, block.type);
  }
  return (address) => {
    const plain = normaliseAddress(address);
    const kind = isIP(plain);
    return kind !== 0 && list.check(plain, kind === 4 ? 'ipv4' : 'ipv6');
  };
}

/** An IPv4 address written as IPv6 (`::ffff:10.0.0.1`, how a dual-stack socket reports it) as plain IPv4; brackets and an IPv4 port dropped. */
export function normaliseAddress(raw: string): string {
  let address = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) address = bracketed[1]!;
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(address)) address = address.slice(0, address.lastIndexOf(':'));
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

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
