/** Which sender a message gets (src/provider-wrappers/sender-rules.ts); end to end through the gateway in send-senders below. */
import { describe, expect, it } from 'vitest';
import { chooseSender, recipientCountry, type SenderRules } from '../../src/provider-wrappers/sender-rules.js';

const rules: SenderRules = { default: 'Fallback', by_country: { US: '+15005550006', GB: 'Brand' } };

describe('chooseSender', () => {
  it.each<[string, string | undefined, string | undefined, SenderRules | undefined, boolean, string | undefined]>([
    ['the country rule beats the CRM sender_name by default', 'Casino', 'US', rules, false, '+15005550006'],
    ['the CRM sender_name wins when sms.sender_name_wins', 'Casino', 'US', rules, true, 'Casino'],
    ['no rule for the country: the CRM sender_name', 'Casino', 'DE', rules, false, 'Casino'],
    ['no rule and no sender_name: senders.default', undefined, 'DE', rules, false, 'Fallback'],
    ['sender_name_wins without a sender_name: the country rule', undefined, 'GB', rules, true, 'Brand'],
    ['unknown country: the CRM sender_name', 'Casino', undefined, rules, false, 'Casino'],
    ['no rules: the CRM sender_name as given', 'Casino', 'US', undefined, false, 'Casino'],
    ['nothing at all: undefined, the plugin uses its own from', undefined, 'US', undefined, false, undefined],
    ['a country named like an Object property is just unknown', 'Casino', 'constructor', rules, false, 'Casino'],
  ])('%s', (_label, crm, country, r, wins, expected) => {
    expect(chooseSender(crm, country, r, wins)).toBe(expected);
  });
});

describe('recipientCountry', () => {
  it.each([
    ['+447700900123', 'GB'],
    ['+12025550123', 'US'],
    ['+4915112345678', 'DE'],
  ])('%s is in %s', (e164, country) => {
    expect(recipientCountry(e164)).toBe(country);
  });
});
