import {
  getExpectedBodyHash,
  getExpectedTwilioSignature,
  getSignatureAlgorithm,
  validateBody,
  validateRequest as sdkValidateRequest,
  validateRequestWithBody,
} from 'twilio/lib/webhooks/webhooks.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bodyHashMatches,
  chooseTwilioKey,
  computeTwilioSignature,
  readSignatureSettings,
  statusCallbackWithRetries,
  twilioSignedUrls,
  validateRequest,
  verifyTwilioRequest,
} from '../../providers/twilio/signature.js';

const TOKEN = 'twilio-auth-token-1';
const form = { MessageSid: 'SM123', MessageStatus: 'delivered', To: '+447700900123', ErrorCode: '' };

describe('X-Twilio-Signature with node:crypto (docs/providers.md §2.4)', () => {
  it.each<[string, string, Record<string, string | string[]>]>([
    ['a URL with a query string', 'https://gw.example/dlr/twilio?sms=01ABC', form],
    ['a URL with an explicit port', 'http://127.0.0.1:4321/dlr/tw?sms=01ABC', form],
    ['no fields at all', 'https://gw.example/mo/twilio', {}],
    ['a repeated field, values out of order and one twice', 'https://gw.example/dlr/twilio', { Media: ['b', 'a', 'b'], Body: 'x' }],
    ['text outside ASCII', 'https://gw.example/dlr/twilio', { Body: 'Grüße 🎰 & = +' }],
  ])('signs %s exactly as the twilio package does', (_label, url, params) => {
    expect(computeTwilioSignature(TOKEN, url, params)).toBe(getExpectedTwilioSignature(TOKEN, url, params));
    expect(validateRequest(TOKEN, getExpectedTwilioSignature(TOKEN, url, params), url, params)).toBe(true);
  });

  it.each<[string, string, string]>([
    ['Twilio signed the URL with :443 and we hand out the URL without it', 'https://gw.example:443/dlr/twilio?sms=1', 'https://gw.example/dlr/twilio?sms=1'],
    ['Twilio signed the URL without :443 and our public URL carries it', 'https://gw.example/dlr/twilio?sms=1', 'https://gw.example:443/dlr/twilio?sms=1'],
    ['Twilio signed an http URL with :80', 'http://gw.example:80/dlr/twilio', 'http://gw.example/dlr/twilio'],
  ])('accepts the default port either way: %s', (_label, signedUrl, ourUrl) => {
    const signature = getExpectedTwilioSignature(TOKEN, signedUrl, form);
    expect(validateRequest(TOKEN, signature, ourUrl, form)).toBe(true);
    expect(sdkValidateRequest(TOKEN, signature, ourUrl, form)).toBe(true);
  });

  it.each<[string, () => [string, string, Record<string, string>]]>([
    ['another auth token', () => [getExpectedTwilioSignature('other-token', 'https://gw.example/dlr/twilio', form), 'https://gw.example/dlr/twilio', form]],
    [
      'a changed field',
      () => [getExpectedTwilioSignature(TOKEN, 'https://gw.example/dlr/twilio', form), 'https://gw.example/dlr/twilio', { ...form, MessageStatus: 'failed' }],
    ],
    [
      'another sms_id in the query',
      () => [getExpectedTwilioSignature(TOKEN, 'https://gw.example/dlr/twilio?sms=1', form), 'https://gw.example/dlr/twilio?sms=2', form],
    ],
    [
      'another non-default port',
      () => [getExpectedTwilioSignature(TOKEN, 'https://gw.example:8443/dlr/twilio', form), 'https://gw.example:9443/dlr/twilio', form],
    ],
    ['an empty signature', () => ['', 'https://gw.example/dlr/twilio', form]],
    ['a signature of another length', () => ['c2hvcnQ=', 'https://gw.example/dlr/twilio', form]],
  ])('refuses %s', (_label, make) => {
    const [signature, url, params] = make();
    expect(validateRequest(TOKEN, signature, url, params)).toBe(false);
  });

  it('agrees with the twilio package on any form and any signature', () => {
    const field = fc.string({ minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(
        fc.dictionary(field, fc.oneof(fc.string(), fc.array(fc.string(), { minLength: 1, maxLength: 3 }))),
        fc.constantFrom('https://gw.example/dlr/twilio?sms=1', 'http://10.0.0.1:8080/mo/twilio', 'https://gw.example:443/dlr/t'),
        fc.boolean(),
        (params, url, genuine) => {
          const signature = genuine ? getExpectedTwilioSignature(TOKEN, url, params) : getExpectedTwilioSignature(TOKEN, `${url}x`, params);
          expect(validateRequest(TOKEN, signature, url, params)).toBe(sdkValidateRequest(TOKEN, signature, url, params));
        },
      ),
    );
  });
});

describe('the URL Twilio signs: with or without our fragment, with or without the default port', () => {
  const bare = 'https://gw.example/dlr/twilio?sms_id=01JX';
  const given = statusCallbackWithRetries(bare, 5);

  it.each<[string, string]>([
    ['as given (fragment included)', given],
    ['as given, with :443', given.replace('gw.example', 'gw.example:443')],
    ['without the fragment', bare],
    ['without the fragment, with :443', bare.replace('gw.example', 'gw.example:443')],
  ])('a signature by the twilio package over the URL %s verifies against the URL as it arrived', (_label, signedUrl) => {
    const signature = getExpectedTwilioSignature(TOKEN, signedUrl, form);
    expect(validateRequest(TOKEN, signature, twilioSignedUrls(bare, 5), form)).toBe(true);
    // The twilio package, given the URL it signed, agrees: its validator keeps a fragment as part of the URL.
    expect(sdkValidateRequest(TOKEN, signature, signedUrl, form)).toBe(true);
  });

  it('our signature over the URL with its fragment is one the twilio package validates, the other way round', () => {
    expect(sdkValidateRequest(TOKEN, computeTwilioSignature(TOKEN, given, form), given, form)).toBe(true);
    expect(sdkValidateRequest(TOKEN, computeTwilioSignature(TOKEN, given, form), bare, form)).toBe(false);
  });

  it('refuses a fragment we never add, and the fragment over another sms_id', () => {
    expect(validateRequest(TOKEN, getExpectedTwilioSignature(TOKEN, `${bare}#ct=1000`, form), twilioSignedUrls(bare, 5), form)).toBe(false);
    const other = statusCallbackWithRetries('https://gw.example/dlr/twilio?sms_id=02XX', 5);
    expect(validateRequest(TOKEN, getExpectedTwilioSignature(TOKEN, other, form), twilioSignedUrls(bare, 5), form)).toBe(false);
  });

  // Each URL form is one more HMAC for every forged callback: only those our configuration can have produced.
  it.each<[string, number, string[]]>([
    ['retries asked for: as it arrived, and with the fragment of the configured count', 5, [bare, `${bare}#rc=5&rp=all`]],
    ['another configured count: that fragment only', 2, [bare, `${bare}#rc=2&rp=all`]],
    ['no retries asked for: as it arrived only', 0, [bare]],
  ])('the URL forms with %s', (_label, retries, forms) => {
    expect(twilioSignedUrls(bare, retries)).toEqual(forms);
  });

  it('refuses a fragment of another retry count than the configured one (status_callback_retries changed since the send)', () => {
    const signature = getExpectedTwilioSignature(TOKEN, statusCallbackWithRetries(bare, 2), form);
    expect(validateRequest(TOKEN, signature, twilioSignedUrls(bare, 5), form)).toBe(false);
  });
});

describe('Webhooks Rules (X-Twilio-Webhooks-Signature-Settings) and bodySHA256, against the twilio package', () => {
  const SHARED_ID = 'webhooks_sharedkey_01jx0000000000000000000000';
  const SHARED = 'shared-key-secret';
  const url = 'https://gw.example/dlr/twilio?sms_id=01JX#rc=5&rp=all';

  it.each(['HMAC_SHA1', 'HMAC_SHA256'] as const)('signs under %s exactly as the twilio package does, both ways', (algorithm) => {
    const ours = computeTwilioSignature(SHARED, url, form, algorithm);
    expect(ours).toBe(getExpectedTwilioSignature(SHARED, url, form, algorithm));
    expect(sdkValidateRequest(SHARED, ours, url, form, algorithm)).toBe(true);
    expect(validateRequest(SHARED, getExpectedTwilioSignature(SHARED, url, form, algorithm), url, form, algorithm)).toBe(true);
  });

  it.each([`key=${SHARED_ID},algorithm=HMAC_SHA256`, ` algorithm=HMAC_SHA256 , key=${SHARED_ID}`, `key=${SHARED_ID}`, ''])(
    'reads the settings header %j as the twilio package does',
    (header) => {
      expect(readSignatureSettings(header).algorithm ?? 'HMAC_SHA1').toBe(getSignatureAlgorithm(header));
    },
  );

  it('checks bodySHA256 as the twilio package does', () => {
    const body = JSON.stringify({ MessageSid: 'SM1', MessageStatus: 'delivered' });
    expect(bodyHashMatches(Buffer.from(body), getExpectedBodyHash(body))).toBe(true);
    expect(bodyHashMatches(Buffer.from(`${body} `), getExpectedBodyHash(body))).toBe(false);
    expect(validateBody(body, getExpectedBodyHash(body))).toBe(true);
  });

  /** A webhook as the route hands it to the plugin, signed by the twilio package. */
  function webhook(options: { key?: string; algorithm?: 'HMAC_SHA1' | 'HMAC_SHA256'; settings?: string; json?: boolean; tamper?: boolean } = {}) {
    const algorithm = options.algorithm ?? 'HMAC_SHA1';
    const body = options.json ? JSON.stringify(form) : new URLSearchParams(form).toString();
    const arrived = options.json
      ? `https://gw.example/dlr/twilio?sms_id=01JX&bodySHA256=${getExpectedBodyHash(body)}`
      : 'https://gw.example/dlr/twilio?sms_id=01JX';
    const signedUrl = `${arrived}#rc=5&rp=all`;
    const signature = getExpectedTwilioSignature(options.key ?? TOKEN, signedUrl, options.json ? {} : form, algorithm);
    if (options.json) expect(validateRequestWithBody(options.key ?? TOKEN, signature, signedUrl, body, algorithm)).toBe(true);
    const headers: Record<string, string> = { 'x-twilio-signature': signature };
    if (options.settings !== undefined) headers['x-twilio-webhooks-signature-settings'] = options.settings;
    return {
      publicUrl: arrived,
      query: Object.fromEntries(new URL(arrived).searchParams),
      headers,
      contentType: options.json ? 'application/json' : 'application/x-www-form-urlencoded',
      rawBody: Buffer.from(options.tamper ? body.replace('delivered', 'failed') : body),
    };
  }
  const keys = { authToken: TOKEN, sharedKeys: { [SHARED_ID]: SHARED, webhooks_sharedkey_next: 'the-next-secret' }, retries: 5 };

  it.each<[string, Parameters<typeof webhook>[0]]>([
    ['the auth token, no settings header', {}],
    ['the shared key the header names, HMAC-SHA256', { key: SHARED, algorithm: 'HMAC_SHA256', settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` }],
    ['a shared key under HMAC-SHA1', { key: SHARED, algorithm: 'HMAC_SHA1', settings: `key=${SHARED_ID},algorithm=HMAC_SHA1` }],
    [
      'the next shared key of a rotation, by its id',
      { key: 'the-next-secret', algorithm: 'HMAC_SHA256', settings: 'key=webhooks_sharedkey_next,algorithm=HMAC_SHA256' },
    ],
    ['a JSON body with bodySHA256', { json: true }],
    [
      'a JSON body with bodySHA256 under the shared key',
      { json: true, key: SHARED, algorithm: 'HMAC_SHA256', settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` },
    ],
  ])('takes a webhook signed with %s', (_label, options) => {
    expect(verifyTwilioRequest(webhook(options), keys)).toMatchObject({ ok: true, params: { MessageSid: 'SM123', MessageStatus: 'delivered' } });
  });

  it.each<[string, Parameters<typeof webhook>[0], { authToken: string; sharedKeys?: Record<string, string>; retries: number }, RegExp]>([
    [
      'a settings header but no shared keys configured',
      { key: SHARED, algorithm: 'HMAC_SHA256', settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` },
      { authToken: TOKEN, retries: 5 },
      /webhook_shared_keys does not hold/,
    ],
    [
      'a settings header naming no key, even when a configured one signed',
      { key: 'the-next-secret', algorithm: 'HMAC_SHA256', settings: 'algorithm=HMAC_SHA256' },
      keys,
      /webhook_shared_keys does not hold/,
    ],
    [
      'an HMAC-SHA1 by the auth token where the header says a shared key signed with SHA-256 (before any HMAC)',
      { settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` },
      keys,
      /not the base64 of an HMAC_SHA256 digest/,
    ],
    [
      'the auth token where the header says a shared key signed',
      { algorithm: 'HMAC_SHA1', settings: `key=${SHARED_ID},algorithm=HMAC_SHA1` },
      keys,
      /does not match/,
    ],
    ['an algorithm Twilio does not document', { key: SHARED, settings: `key=${SHARED_ID},algorithm=HMAC_MD5` }, keys, /HMAC_MD5/],
    ['a JSON body changed after signing', { json: true, tamper: true }, keys, /bodySHA256 does not match/],
    [
      'a shared key SHA-256 signature without the header (HMAC-SHA1 under the auth token is expected; before any HMAC)',
      { key: SHARED, algorithm: 'HMAC_SHA256' },
      keys,
      /not the base64 of an HMAC_SHA1 digest/,
    ],
    ['a shared key SHA-1 signature without the header', { key: SHARED, algorithm: 'HMAC_SHA1' }, keys, /does not match/],
  ])('refuses %s', (_label, options, given, reason) => {
    expect(verifyTwilioRequest(webhook(options), given)).toEqual({ ok: false, reason: expect.stringMatching(reason) });
  });

  it('refuses a JSON body without bodySHA256, naming the content type', () => {
    const request = { ...webhook(), contentType: 'application/json', rawBody: Buffer.from('{}') };
    expect(verifyTwilioRequest(request, keys)).toEqual({ ok: false, reason: expect.stringMatching(/application\/json/) });
  });
});

// Anyone can post to the callback URLs: what cannot be Twilio's is refused from the headers alone, before any HMAC.
describe('what is refused before any HMAC (chooseTwilioKey)', () => {
  const keys = { authToken: TOKEN, sharedKeys: { KS1: 'shared-1', KS2: 'shared-2' } };
  const sha1 = 'Zm9yZ2VkLXNpZ25hdHVyZS0yMGI=';
  const sha256 = `${'A'.repeat(43)}=`;

  it.each<[string, string | undefined, string | undefined, RegExp]>([
    ['no signature header', undefined, undefined, /missing/],
    ['an empty signature header', '', undefined, /missing/],
    ['a signature too short for HMAC-SHA1', 'Zm9yZ2Vk', undefined, /not the base64 of an HMAC_SHA1 digest/],
    ['a SHA-256 sized signature where SHA-1 is expected', sha256, undefined, /HMAC_SHA1/],
    ['a SHA-1 sized signature where the settings name SHA-256', sha1, 'key=KS1,algorithm=HMAC_SHA256', /HMAC_SHA256 digest/],
    ['characters base64 does not use', `${'*'.repeat(27)}=`, undefined, /HMAC_SHA1 digest/],
    ['a shared key id we do not hold', sha1, 'key=KSunknown,algorithm=HMAC_SHA1', /"KSunknown", which webhook_shared_keys does not hold/],
    ['settings naming no key', sha1, 'algorithm=HMAC_SHA1', /webhook_shared_keys does not hold/],
    ['an algorithm Twilio does not document', sha1, 'key=KS1,algorithm=HMAC_MD5', /HMAC_MD5/],
  ])('refuses %s', (_label, signature, settings, reason) => {
    expect(chooseTwilioKey(signature, settings, keys)).toEqual({ ok: false, reason: expect.stringMatching(reason) });
  });

  it.each<[string, string, string | undefined, string, string]>([
    ['a SHA-1 signature and no settings: the auth token', sha1, undefined, TOKEN, 'HMAC_SHA1'],
    ['the settings naming a key we hold, SHA-256', sha256, 'key=KS2,algorithm=HMAC_SHA256', 'shared-2', 'HMAC_SHA256'],
    ['the settings naming a key we hold, SHA-1', sha1, 'key=KS1,algorithm=hmac_sha1', 'shared-1', 'HMAC_SHA1'],
  ])('takes %s, with one key and one hash', (_label, signature, settings, secret, algorithm) => {
    expect(chooseTwilioKey(signature, settings, keys)).toEqual({ ok: true, signature, secret, algorithm });
  });
});
