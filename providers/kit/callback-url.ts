/**
 * The receipt callback URL, built and read here only. Each message is handed to its provider with
 * `{public_url}/dlr/{provider}?sms_id={sms_id}`; src/delivery/routes.ts rebuilds the URL a receipt arrived at the
 * same way (signature checks cover it), and plugins that must shorten or extend it (Vonage's length limit, the
 * sandbox's one post per endpoint, the per-message token of providers/kit/callback-token.ts) use the helpers below.
 */

/** The query parameter that carries our sms_id. */
export const CALLBACK_SMS_ID_PARAM = 'sms_id';

/** The path receipts of `provider` arrive at, under the gateway's public URL. */
export function callbackPath(provider: string): string {
  return `/dlr/${encodeURIComponent(provider)}`;
}

/** The URL handed to the provider with one message. `publicUrl` has no trailing slash ('' gives a relative URL). */
export function buildCallbackUrl(publicUrl: string, provider: string, smsId: string): string {
  return `${publicUrl}${callbackPath(provider)}?${CALLBACK_SMS_ID_PARAM}=${smsId}`;
}

/** The path players' messages of `provider` arrive at (`/mo/{provider}`), under the gateway's public URL. */
export function inboundPath(provider: string): string {
  return `/mo/${encodeURIComponent(provider)}`;
}

/**
 * The public URL a provider called, as it saw it (receipts at callbackPath, players' messages at inboundPath):
 * `search` is the request's query string, `?` included. Signatures are checked against it, never the Host header.
 */
export function receivedCallbackUrl(publicUrl: string, path: string, search: string): string {
  return `${publicUrl}${path}${search}`;
}

/** The callback URL without the sms_id, for providers that carry our id in a field of their own. */
export function callbackUrlWithoutSmsId(callbackUrl: string): string {
  const url = new URL(callbackUrl);
  url.searchParams.delete(CALLBACK_SMS_ID_PARAM);
  return url.toString();
}

/** The endpoint alone (no query): where receipts for many messages can be posted together. */
export function callbackEndpoint(callbackUrl: string): string {
  return callbackUrl.split('?')[0] ?? callbackUrl;
}
