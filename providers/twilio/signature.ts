/**
 * X-Twilio-Signature with node:crypto (docs/providers.md §2.4; vendor docs:
 * https://www.twilio.com/docs/usage/webhooks/webhooks-security). The twilio package would cost ~8 MB of memory and
 * 21 MB on disk for these few lines; the test fake signs with the SDK's own signer, so the algorithm is checked
 * against Twilio's code, not only against ours.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type FormFields = Readonly<Record<string, string | string[]>>;

/**
 * The string Twilio signs: the URL, then each field sorted by name as name+value; a repeated field contributes each
 * distinct value, sorted, under its name.
 */
export function twilioSignedString(url: string, params: FormFields): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name]!;
    const values = Array.isArray(value) ? [...new Set(value)].sort() : [value];
    for (const one of values) data += name + one;
  }
  return data;
}

export function computeTwilioSignature(authToken: string, url: string, params: FormFields): string {
  return createHmac('sha1', authToken).update(twilioSignedString(url, params), 'utf8').digest('base64');
}

/**
 * The URL with and without the scheme's default port: Twilio signs the URL as it requested it, and a load balancer
 * in front may or may not have written `:443` into what Twilio saw.
 */
function urlVariants(url: string): string[] {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(url);
  if (!match) return [url];
  const [, scheme, authority, rest] = match as unknown as [string, string, string, string];
  const at = authority.lastIndexOf('@');
  const userInfo = authority.slice(0, at + 1);
  const hostPort = authority.slice(at + 1);
  // A colon inside an IPv6 literal's brackets is not the port's.
  const colon = hostPort.indexOf(':', hostPort.lastIndexOf(']') + 1);
  const host = colon === -1 ? hostPort : hostPort.slice(0, colon);
  const withoutPort = scheme + userInfo + host + rest;
  const withPort = colon === -1 ? scheme + userInfo + host + (scheme.toLowerCase() === 'https://' ? ':443' : ':80') + rest : url;
  return withPort === withoutPort ? [url] : [withoutPort, withPort];
}

/** True when `signature` is Twilio's signature of `url` and the form fields under `authToken` (constant time). */
export function validateRequest(authToken: string, signature: string, url: string, params: FormFields): boolean {
  const given = Buffer.from(signature, 'utf8');
  let valid = false;
  for (const candidate of urlVariants(url)) {
    const expected = Buffer.from(computeTwilioSignature(authToken, candidate, params), 'utf8');
    // Both variants are always computed and compared, so the time taken does not tell which one came close.
    if (given.length === expected.length && timingSafeEqual(given, expected)) valid = true;
  }
  return valid;
}
