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
 *
 * Anyone can post to our callback URLs, so a forged callback must cost little (docs/public-doors.md): what
 * cannot be Twilio's is refused before any HMAC (no signature, one that is not the base64 of the named hash, a
 * Webhooks Setting's key we do not hold), the fields' part of the signed string is built once, and only the URL forms
 * our configuration can have produced are computed (twilioSignedUrls): at most four HMACs under one key.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { ownValue } from '../kit/own-key.js';
import { headerValue, readFormFields } from '../kit/receipt-input.js';
import type { IncomingReceipt } from '../types.js';

export type FormFields = Readonly<Record<string, string | string[]>>;

/**
 * The string Twilio signs: the URL, then each field sorted by name as name+value; a repeated field contributes each
 * distinct value, sorted, under its name.
 */
export function twilioSignedString(url: string, params: FormFields): string {
  return url + signedFields(params);
}

/** The fields' part of the signed string (after the URL): the same for every URL form, so it is built once. */
function signedFields(params: FormFields): string {
  let data = '';
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

/**
 * The base64 of each hash's digest (20 bytes for SHA-1, 32 for SHA-256) has exactly this form, so a header of any
 * other form is refused without computing anything.
 */
const SIGNATURE_FORMS: Readonly<Record<SignatureAlgorithm, RegExp>> = {
  HMAC_SHA1: /^[A-Za-z0-9+/]{27}=$/,
  HMAC_SHA256: /^[A-Za-z0-9+/]{43}=$/,
};

/** True when `signature` has the form of a base64 digest of `algorithm` (a pure check, before any HMAC). */
function hasSignatureForm(signature: string, algorithm: SignatureAlgorithm): boolean {
  return SIGNATURE_FORMS[algorithm].test(signature);
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
  const fields = signedFields(params);
  let valid = false;
  for (const url of typeof urls === 'string' ? [urls] : urls) {
    for (const candidate of urlVariants(url)) {
      const expected = Buffer.from(createHmac(SIGNATURE_ALGORITHMS[algorithm], key).update(candidate, 'utf8').update(fields, 'utf8').digest('base64'), 'utf8');
      // Every variant is always computed and compared, so the time taken does not tell which one came close.
      if (given.length === expected.length && timingSafeEqual(given, expected)) valid = true;
    }
  }
  return valid;
}

/**
 * The StatusCallback with Twilio's connection overrides as its fragment (`#rc=…&rp=all`: retry count, and retry on
 * every kind of failure). A fragment never travels in the HTTP request, so the URL our route rebuilds has none; the
 * signature may cover it or not (twilioSignedUrls).
 */
export function statusCallbackWithRetries(callbackUrl: string, retries: number): string {
  return retries > 0 ? `${callbackUrl.split('#')[0]}#rc=${retries}&rp=all` : callbackUrl;
}

/**
 * The URLs a callback that arrived at `receivedUrl` may have been signed over, given `retries`
 * (status_callback_retries). Twilio signs the URL it was given, and neither its docs nor its validator say whether a
 * fragment is part of it (twilio-node keeps a URL's fragment when it adds the port), so both are taken: as it
 * arrived, and with the fragment statusCallbackWithRetries adds under the configured retries. Only that one fragment:
 * each other form is one more HMAC for every forged callback (docs/providers.md §2.4 says what a change of
 * status_callback_retries costs). The port variants are validateRequest's. Inbound URLs are the operator's, set in
 * Twilio's console: the same forms.
 */
export function twilioSignedUrls(receivedUrl: string, retries: number): string[] {
  const bare = receivedUrl.split('#')[0]!;
  return retries > 0 ? [bare, statusCallbackWithRetries(bare, retries)] : [bare];
}

interface TwilioKeys {
  authToken: string;
  sharedKeys?: Readonly<Record<string, string>> | undefined;
  /** status_callback_retries: which fragment our callback URLs carry (twilioSignedUrls). */
  retries: number;
}

/**
 * The key and hash a webhook says it was signed with, or why it cannot be Twilio's: decided from its headers alone,
 * before any HMAC. Without X-Twilio-Webhooks-Signature-Settings, HMAC-SHA1 under the auth token; with it, the hash it
 * names under the shared key it names, which must be one we hold (a key rotation adds the new key's id and secret
 * to webhook_shared_keys before the Setting uses it).
 */
export function chooseTwilioKey(
  signature: string | undefined,
  settingsHeader: string | undefined,
  keys: Pick<TwilioKeys, 'authToken' | 'sharedKeys'>,
): { ok: true; signature: string; secret: string; algorithm: SignatureAlgorithm } | { ok: false; reason: string } {
  if (!signature) return { ok: false, reason: 'X-Twilio-Signature header is missing' };
  let secret = keys.authToken;
  let algorithm: SignatureAlgorithm = 'HMAC_SHA1';
  if (settingsHeader !== undefined) {
    const settings = readSignatureSettings(settingsHeader);
    const named = (settings.algorithm ?? '').toUpperCase();
    if (!Object.hasOwn(SIGNATURE_ALGORITHMS, named)) {
      return {
        ok: false,
        reason: `X-Twilio-Webhooks-Signature-Settings names algorithm ${JSON.stringify(settings.algorithm ?? '')}, not HMAC_SHA1 or HMAC_SHA256`,
      };
    }
    algorithm = named as SignatureAlgorithm;
    const key = settings.key !== undefined ? ownValue(keys.sharedKeys ?? {}, settings.key) : undefined;
    if (key === undefined) {
      return {
        ok: false,
        reason: `signed with a Webhooks Rule's shared key ${JSON.stringify(settings.key ?? '')}, which webhook_shared_keys does not hold (X-Twilio-Webhooks-Signature-Settings)`,
      };
    }
    secret = key;
  }
  if (!hasSignatureForm(signature, algorithm)) {
    return { ok: false, reason: `X-Twilio-Signature is not the base64 of an ${algorithm} digest` };
  }
  return { ok: true, signature, secret, algorithm };
}

/** The webhook's fields when it is Twilio's, or why it is refused (form or JSON body, either key, either hash). */
export function verifyTwilioRequest(
  request: Pick<IncomingReceipt, 'publicUrl' | 'query' | 'headers' | 'contentType' | 'rawBody'>,
  keys: TwilioKeys,
): { ok: true; params: FormFields } | { ok: false; reason: string } {
  const chosen = chooseTwilioKey(
    headerValue(request as IncomingReceipt, 'x-twilio-signature'),
    headerValue(request as IncomingReceipt, 'x-twilio-webhooks-signature-settings'),
    keys,
  );
  if (!chosen.ok) return chosen;
  const bodySha256 = request.query.bodySHA256;
  let params: FormFields;
  if (bodySha256 !== undefined) {
    // A JSON-bodied webhook: the signature covers the URL (bodySHA256 in it) and no fields; the hash covers the body.
    if (!bodyHashMatches(request.rawBody, bodySha256)) return { ok: false, reason: 'bodySHA256 does not match the body' };
    params = {};
  } else if (/^application\/x-www-form-urlencoded/i.test(request.contentType)) {
    params = readFormFields(request.rawBody);
  } else {
    return { ok: false, reason: `Twilio webhooks are form posts or carry bodySHA256, got content-type ${JSON.stringify(request.contentType)}` };
  }
  if (!validateRequest(chosen.secret, chosen.signature, twilioSignedUrls(request.publicUrl, keys.retries), params, chosen.algorithm)) {
    return { ok: false, reason: 'X-Twilio-Signature does not match the URL and form fields' };
  }
  if (bodySha256 === undefined) return { ok: true, params };
  // The fields of a JSON body, read only after the hash and signature vouched for it (string values only).
  let json: unknown;
  try {
    json = JSON.parse(request.rawBody.toString('utf8'));
  } catch {
    return { ok: false, reason: 'the body is not JSON' };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return { ok: false, reason: 'the JSON body is not an object' };
  const fields = new Map<string, string>();
  for (const [name, value] of Object.entries(json)) {
    if (typeof value === 'string') fields.set(name, value);
    else if (typeof value === 'number' || typeof value === 'boolean') fields.set(name, String(value));
  }
  return { ok: true, params: Object.fromEntries(fields) };
}
