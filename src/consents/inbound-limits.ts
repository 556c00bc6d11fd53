/**
 * The longest values an inbound SMS may carry into the ledger (docs/public-doors.md: every string taken from
 * outside has a stated maximum). Even a signed webhook is refused beyond them, with a 400 naming the field, so a
 * value the database would refuse (PostgreSQL cannot index a text of several kilobytes) never becomes a 5xx that
 * the provider retries forever. Pure.
 */
import { MAX_PROVIDER_ID_LENGTH, type InboundSms } from '../../providers/types.js';

/** A phone number, short code, alphanumeric sender or Twilio's `whatsapp:+…` address. */
export const MAX_INBOUND_NUMBER_LENGTH = 64;
/**
 * Twilio joins a long SMS into one of up to 1,600 characters, and a WhatsApp message may hold 4,096; Vonage posts
 * each part of a long SMS on its own.
 */
export const MAX_INBOUND_TEXT_LENGTH = 4_096;

/** The first value over its maximum, as an error naming it; undefined when all fit. */
export function boundInboundSms(sms: InboundSms): string | undefined {
  const limits: Array<[keyof InboundSms, number]> = [
    ['providerMessageId', MAX_PROVIDER_ID_LENGTH],
    ['from', MAX_INBOUND_NUMBER_LENGTH],
    ['to', MAX_INBOUND_NUMBER_LENGTH],
    ['text', MAX_INBOUND_TEXT_LENGTH],
  ];
  for (const [field, max] of limits) if (sms[field].length > max) return `${field} is longer than ${max} characters`;
  return undefined;
}
