/**
 * Lists of IP addresses and CIDR blocks (`server.trusted_proxies`, `auth.trusted_addresses`): their config schema and
 * a membership test over node:net's BlockList, with addresses normalised as sockets and proxies write them.
 */
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';

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
