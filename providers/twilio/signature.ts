/**
 * X-Twilio-Signature with node:crypto (docs/providers.md §2.4; vendor docs:
 * https://www.twilio.com/docs/usage/webhooks/webhooks-security). The twilio package would cost ~8 MB of memory and
 * 21 MB on disk for these few lines; the test fake signs with the SDK's own signer, so the algorithm is checked
 * against Twilio's code, not only against ours.
 *
 * Two keys and two hashes (twilio-node examples/WebhookSignatureValidation.md, Twilio's "Sign webhooks with shared
 * keys"): without the header X-Twilio-Webhooks-Signature-Settings, HMAC-SHA1 under the account's auth token; with
 * it (`key=…,algorithm=HMAC_SHA256`: a Webhooks Rule matched the URL), the rule's SharedKey and the named hash. The
 * signed string is the same either way. JSON-bodied webhooks sign the URL alone, which carries `bodySHA256`, the hex
 * SHA-256 of the raw body (twilio-node src/webhooks/webhooks.ts validateRequestWithBody).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

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

/** The hashes a Webhooks Setting can name, as the settings header spells them, and node:crypto's names for them. */
export const SIGNATURE_ALGORITHMS = { HMAC_SHA1: 'sha1', HMAC_SHA256: 'sha256' } as const;
export type SignatureAlgorithm = keyof typeof SIGNATURE_ALGORITHMS;

export function computeTwilioSignature(key: string, url: string, params: FormFields, algorithm: SignatureAlgorithm = 'HMAC_SHA1'): string {
  return createHmac(SIGNATURE_ALGORITHMS[algorithm], key).update(twilioSignedString(url, params), 'utf8').digest('base64');
}

/** X-Twilio-Webhooks-Signature-Settings (`key=…,algorithm=…`) read into its parts; unknown parts are ignored. */
export function readSignatureSettings(header: string): { key?: string; algorithm?: string } {
  const settings: { key?: string; algorithm?: string } = {};
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at === -1) continue;
    const name = part.slice(0, at).trim().toLowerCase();
    const value = part.slice(at + 1).trim();
    if (name === 'key' || name === 'algorithm') settings[name] = value;
  }
  return settings;
}

/** True when `bodySha256` (the URL's `bodySHA256`, hex) is the SHA-256 of the raw body (constant time). */
export function bodyHashMatches(rawBody: Buffer, bodySha256: string): boolean {
  const expected = Buffer.from(createHash('sha256').update(rawBody).digest('hex'), 'utf8');
  const given = Buffer.from(bodySha256.toLowerCase(), 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
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

/**
 * True when `signature` is Twilio's signature of one of `urls` (each with and without the default port) and the
 * form fields under `key` (constant time). `urls` are the forms of the one URL Twilio may have signed: as we handed
 * it out (a fragment included) and as it arrived (no fragment).
 */
export function validateRequest(
  key: string,
  signature: string,
  urls: string | readonly string[],
  params: FormFields,
  algorithm: SignatureAlgorithm = 'HMAC_SHA1',
): boolean {
  const given = Buffer.from(signature, 'utf8');
  let valid = false;
  for (const url of typeof urls === 'string' ? [urls] : urls) {
    for (const candidate of urlVariants(url)) {
      const expected = Buffer.from(computeTwilioSignature(key, candidate, params, algorithm), 'utf8');
      // Every variant is always computed and compared, so the time taken does not tell which one came close.
      if (given.length === expected.length && timingSafeEqual(given, expected)) valid = true;
    }
  }
  return valid;
}
