/**
 * Per-country senders (docs/configuration.md "Providers"): `providers.<name>.senders: {default, by_country: {US: "+1…", GB: "Brand"}}`.
 * Countries differ in what a sender may be (the US wants a number, the UK takes an alphanumeric brand), so the
 * operator's rule for the recipient's country normally overrides the CRM's sender_name:
 *
 *   sms.sender_name_wins: false (default)  by_country[country] → CRM sender_name → senders.default → plugin's own
 *   sms.sender_name_wins: true             CRM sender_name → by_country[country] → senders.default → plugin's own
 *
 * "plugin's own" is the provider block's own default sender (twilio `from`, vonage `from`, …), which the plugin
 * applies when it is handed no sender. Wrapped around each provider outside it, like the throttle.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js/mobile';
import type { z } from 'zod';
import type { SendRequest, SmsProvider, sendersConfig } from '../../providers/types.js';

export type SenderRules = z.output<typeof sendersConfig>;

/** The sender to hand the plugin, or undefined to let it use its own default. */
export function chooseSender(
  crmSender: string | undefined,
  country: string | undefined,
  rules: SenderRules | undefined,
  senderNameWins: boolean,
): string | undefined {
  const byCountry = country && rules && Object.hasOwn(rules.by_country, country) ? rules.by_country[country] : undefined;
  const first = senderNameWins ? (crmSender ?? byCountry) : (byCountry ?? crmSender);
  return first ?? rules?.default;
}

/**
 * ISO 3166 country of an E.164 number. A number the metadata cannot place (a new range, a test range) counts for
 * the main country of its calling code (+44 → GB, +1 → US), the first that libphonenumber-js lists.
 */
export function recipientCountry(e164: string): string | undefined {
  const parsed = parsePhoneNumberFromString(e164);
  return parsed?.country ?? parsed?.getPossibleCountries()[0];
}

/** Wraps `provider` so each send carries the sender the rules choose. Without rules and with the CRM winning, as is. */
export function withSenderRules(provider: SmsProvider, rules: SenderRules | undefined, senderNameWins: boolean): SmsProvider {
  if (!rules) return provider;
  const needsCountry = Object.keys(rules.by_country).length > 0;
  // Spread, so everything but send (receipts, inbound SMS, close, whatever the interface grows) stays the plugin's.
  return {
    ...provider,
    send(request: SendRequest, signal: AbortSignal) {
      // The country the number was read in (a national reading by the player's record, src/sms/recipient-reading.ts),
      // else the one its E.164 names.
      const country = needsCountry ? (request.country ?? recipientCountry(request.to)) : undefined;
      return provider.send({ ...request, from: chooseSender(request.from, country, rules, senderNameWins) }, signal);
    },
  };
}
