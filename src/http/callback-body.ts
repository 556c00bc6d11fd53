/**
 * What a provider callback (`/dlr/{provider}`, `/mo/{provider}`) must pass before its plugin reads a byte of it.
 * These doors face the internet and anyone may knock, so the work done before the signature check has to be
 * small and linear whatever is sent (docs/public-doors.md): the body is at most server.callback_body_limit (app.ts
 * checks that while the body arrives), a form or query string holds at most MAX_CALLBACK_FIELDS fields, and a JSON
 * body is within server.max_json_depth and holds each key once. Pure: the route maps the answer to HTTP.
 */
import { refuseJsonText } from './json-body.js';

/**
 * Fields a callback's form body or query string may hold. Twilio's richest webhook (an inbound MMS with ten media
 * items and the geographic fields) has fewer than 60; Vonage's and the others' fewer than 20.
 */
export const MAX_CALLBACK_FIELDS = 256;

export type CallbackBodyCheck = { ok: true } | { ok: false; status: 400; error: string };

const AMPERSAND = 0x26;

/** Fields in a form-encoded text: one more than its `&`s (empty pieces count too, which only errs on the safe side). */
function countFields(bytes: Buffer, limit: number): number {
  if (bytes.length === 0) return 0;
  let count = 1;
  for (let at = bytes.indexOf(AMPERSAND); at >= 0 && count <= limit; at = bytes.indexOf(AMPERSAND, at + 1)) count++;
  return count;
}

const isForm = (contentType: string) => /^application\/x-www-form-urlencoded/i.test(contentType);
const isJson = (contentType: string) => /json/i.test(contentType);

/** The first byte that is not JSON whitespace, or -1. */
function firstSignificantByte(body: Buffer): number {
  for (let i = 0; i < body.length; i++) {
    const b = body[i]!;
    if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return b;
  }
  return -1;
}

export function checkCallbackBody(request: { contentType: string; search: string; rawBody: Buffer }, maxDepth: number): CallbackBodyCheck {
  const tooMany = (where: string) => ({
    ok: false as const,
    status: 400 as const,
    error: `${where}: more than ${MAX_CALLBACK_FIELDS} fields (a callback holds far fewer)`,
  });
  if (countFields(Buffer.from(request.search.replace(/^\?/, '')), MAX_CALLBACK_FIELDS) > MAX_CALLBACK_FIELDS) return tooMany('query string');
  if (isForm(request.contentType)) {
    return countFields(request.rawBody, MAX_CALLBACK_FIELDS) > MAX_CALLBACK_FIELDS ? tooMany('form body') : { ok: true };
  }
  // Some plugins parse JSON whatever the Content-Type says (the sandbox's), so a body that looks like JSON is
  // checked as JSON too.
  const first = firstSignificantByte(request.rawBody);
  if (isJson(request.contentType) || first === 0x7b || first === 0x5b) {
    const error = refuseJsonText(request.rawBody.toString('utf8'), maxDepth);
    if (error) return { ok: false, status: 400, error };
  }
  return { ok: true };
}
