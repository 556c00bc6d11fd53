import { getExpectedTwilioSignature, validateRequest as sdkValidateRequest } from 'twilio/lib/webhooks/webhooks.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeTwilioSignature, validateRequest } from '../../providers/twilio/signature.js';

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
