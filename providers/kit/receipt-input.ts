/** Small readers for IncomingReceipt that several plugins share. */
import type { IncomingReceipt } from '../types.js';

/** Header lookup that does not depend on how the route cased the names. */
export function headerValue(receipt: IncomingReceipt, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(receipt.headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/** Form fields exactly as received; a repeated field becomes an array (the shape twilio's validateRequest takes). */
export function readFormFields(rawBody: Buffer): Record<string, string | string[]> {
  // Collected in a Map, so a field named `__proto__` is a field like any other, never the object's prototype.
  const fields = new Map<string, string | string[]>();
  for (const [key, value] of new URLSearchParams(rawBody.toString('utf8'))) {
    const seen = fields.get(key);
    fields.set(key, seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]);
  }
  return Object.fromEntries(fields);
}
