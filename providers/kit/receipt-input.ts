/** Small readers for IncomingReceipt that several plugins share. */
import type { IncomingReceipt } from '../types.js';

/** Header lookup that does not depend on how the route cased the names. */
export function headerValue(receipt: IncomingReceipt, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(receipt.headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/**
 * Form fields exactly as received; a repeated field becomes an array (the shape twilio's validateRequest takes).
 * Linear in the body: a repeated field's values are pushed onto one array, never copied into a new one per value
 * (copying made 40,000 copies of one field cost seconds: docs/public-doors.md). The callback routes bound the number
 * of fields before a plugin gets here (src/http/callback-body.ts).
 */
export function readFormFields(rawBody: Buffer): Record<string, string | string[]> {
  // Collected in a Map, so a field named `__proto__` is a field like any other, never the object's prototype.
  const fields = new Map<string, string | string[]>();
  for (const [key, value] of new URLSearchParams(rawBody.toString('utf8'))) {
    const seen = fields.get(key);
    if (seen === undefined) fields.set(key, value);
    else if (Array.isArray(seen)) seen.push(value);
    else fields.set(key, [seen, value]);
  }
  return Object.fromEntries(fields);
}
