/**
 * A per-message credential in the receipt URL, for providers whose delivery reports carry no signature (Infobip's
 * and Sinch's SMS delivery-report webhooks: their docs describe basic auth, OAuth or mTLS set up per account, but
 * nothing signed per message). The URL we hand over with each message carries `token`, an HMAC of the provider
 * name and our sms_id under the provider's `webhook_secret`; a receipt is believed only when its URL's token is the
 * one for its sms_id, and then only about that sms_id. Leaking one URL exposes one message, never the others.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { CALLBACK_SMS_ID_PARAM } from './callback-url.js';
import type { IncomingReceipt } from '../types.js';

/** The form of callbackToken's answer: an HMAC-SHA256 in base64url, without padding. */
const TOKEN_FORM = /^[A-Za-z0-9_-]{43}$/;

export function callbackToken(secret: string, provider: string, smsId: string): string {
  return createHmac('sha256', secret).update(`${provider}\n${smsId}`).digest('base64url');
}

/** The callback URL the gateway built (it carries sms_id) with the message's token added. */
export function tokenisedCallbackUrl(callbackUrl: string, secret: string, provider: string, smsId: string): string {
  const url = new URL(callbackUrl);
  url.searchParams.set('token', callbackToken(secret, provider, smsId));
  return url.toString();
}

/** The sms_id the receipt URL vouches for, or why it does not. */
export function verifyCallbackToken(receipt: IncomingReceipt, secret: string, provider: string): { ok: true; smsId: string } | { ok: false; reason: string } {
  const smsId = receipt.query[CALLBACK_SMS_ID_PARAM];
  const token = receipt.query.token;
  if (!smsId || !token) return { ok: false, reason: 'the receipt URL has no sms_id and token (it was not one we handed out)' };
  // A token of any other form than callbackToken's (43 base64url characters) is refused before any HMAC.
  if (!TOKEN_FORM.test(token)) return { ok: false, reason: 'the receipt URL token is not one of ours (43 base64url characters)' };
  const expected = Buffer.from(callbackToken(secret, provider, smsId));
  const given = Buffer.from(token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'the receipt URL token does not match its sms_id' };
  return { ok: true, smsId };
}
