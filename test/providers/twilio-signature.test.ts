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
import { statusCallbackWithRetries, twilioSignedUrls, verifyTwilioRequest } from '../../providers/twilio/index.js';
import { bodyHashMatches, computeTwilioSignature, readSignatureSettings, validateRequest } from '../../providers/twilio/signature.js';

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
    ['with a fragment of another retry count (status_callback_retries changed since the send)', statusCallbackWithRetries(bare, 2)],
  ])('a signature by the twilio package over the URL %s verifies against the URL as it arrived', (_label, signedUrl) => {
    const signature = getExpectedTwilioSignature(TOKEN, signedUrl, form);
    expect(validateRequest(TOKEN, signature, twilioSignedUrls(bare), form)).toBe(true);
    // The twilio package, given the URL it signed, agrees: its validator keeps a fragment as part of the URL.
    expect(sdkValidateRequest(TOKEN, signature, signedUrl, form)).toBe(true);
  });

  it('our signature over the URL with its fragment is one the twilio package validates, the other way round', () => {
    expect(sdkValidateRequest(TOKEN, computeTwilioSignature(TOKEN, given, form), given, form)).toBe(true);
    expect(sdkValidateRequest(TOKEN, computeTwilioSignature(TOKEN, given, form), bare, form)).toBe(false);
  });

  it('refuses a fragment we never add, and the fragment over another sms_id', () => {
    expect(validateRequest(TOKEN, getExpectedTwilioSignature(TOKEN, `${bare}#ct=1000`, form), twilioSignedUrls(bare), form)).toBe(false);
    const other = statusCallbackWithRetries('https://gw.example/dlr/twilio?sms_id=02XX', 5);
    expect(validateRequest(TOKEN, getExpectedTwilioSignature(TOKEN, other, form), twilioSignedUrls(bare), form)).toBe(false);
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
  const keys = { authToken: TOKEN, sharedKeys: { [SHARED_ID]: SHARED, webhooks_sharedkey_next: 'the-next-secret' } };

  it.each<[string, Parameters<typeof webhook>[0]]>([
    ['the auth token, no settings header', {}],
    ['the shared key the header names, HMAC-SHA256', { key: SHARED, algorithm: 'HMAC_SHA256', settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` }],
    ['a shared key under HMAC-SHA1', { key: SHARED, algorithm: 'HMAC_SHA1', settings: `key=${SHARED_ID},algorithm=HMAC_SHA1` }],
    ['a configured shared key the header does not name (a rotation)', { key: 'the-next-secret', algorithm: 'HMAC_SHA256', settings: 'algorithm=HMAC_SHA256' }],
    ['a JSON body with bodySHA256', { json: true }],
    [
      'a JSON body with bodySHA256 under the shared key',
      { json: true, key: SHARED, algorithm: 'HMAC_SHA256', settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` },
    ],
  ])('takes a webhook signed with %s', (_label, options) => {
    expect(verifyTwilioRequest(webhook(options), keys)).toMatchObject({ ok: true, params: { MessageSid: 'SM123', MessageStatus: 'delivered' } });
  });

  it.each<[string, Parameters<typeof webhook>[0], { authToken: string; sharedKeys?: Record<string, string> }, RegExp]>([
    [
      'a settings header but no shared keys configured',
      { key: SHARED, algorithm: 'HMAC_SHA256', settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` },
      { authToken: TOKEN },
      /webhook_shared_keys has none/,
    ],
    ['the auth token where the header says a shared key signed', { settings: `key=${SHARED_ID},algorithm=HMAC_SHA256` }, keys, /does not match/],
    ['an algorithm Twilio does not document', { key: SHARED, settings: `key=${SHARED_ID},algorithm=HMAC_MD5` }, keys, /HMAC_MD5/],
    ['a JSON body changed after signing', { json: true, tamper: true }, keys, /bodySHA256 does not match/],
    [
      'a shared key signature without the header (HMAC-SHA1 under the auth token is expected)',
      { key: SHARED, algorithm: 'HMAC_SHA256' },
      keys,
      /does not match/,
    ],
  ])('refuses %s', (_label, options, given, reason) => {
    expect(verifyTwilioRequest(webhook(options), given)).toEqual({ ok: false, reason: expect.stringMatching(reason) });
  });

  it('refuses a JSON body without bodySHA256, naming the content type', () => {
    const request = { ...webhook(), contentType: 'application/json', rawBody: Buffer.from('{}') };
    expect(verifyTwilioRequest(request, keys)).toEqual({ ok: false, reason: expect.stringMatching(/application\/json/) });
  });
});
