/**
 * Bounds on what one receipt request may make the gateway store: receipts come from the network, before anything
 * proves they matter, so a request holds at most delivery.max_receipt_events events, ids longer than any
 * provider's are refused, and free-text values are cut to a length that still shows what they were.
 */
import { MAX_PROVIDER_ID_LENGTH, type ReceiptEvent } from '../../providers/types.js';

/** Provider status and error code texts, as stored and logged. */
export const MAX_RECEIPT_TEXT_LENGTH = 64;

export function truncateText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export type BoundedReceipt = { ok: true; events: ReceiptEvent[] } | { ok: false; status: 400 | 413; error: string };

export function boundReceiptEvents(events: readonly ReceiptEvent[], maxEvents: number): BoundedReceipt {
  if (events.length > maxEvents) {
    return { ok: false, status: 413, error: `${events.length} receipt events in one request; at most ${maxEvents} (delivery.max_receipt_events)` };
  }
  const bounded: ReceiptEvent[] = [];
  for (const [i, event] of events.entries()) {
    for (const field of ['smsId', 'providerMessageId'] as const) {
      const value = event[field];
      if (value !== undefined && value.length > MAX_PROVIDER_ID_LENGTH) {
        return { ok: false, status: 400, error: `event ${i}: ${field} is longer than ${MAX_PROVIDER_ID_LENGTH} characters` };
      }
    }
    bounded.push({
      ...event,
      providerStatus: truncateText(event.providerStatus, MAX_RECEIPT_TEXT_LENGTH),
      ...(event.errorCode !== undefined ? { errorCode: truncateText(event.errorCode, MAX_RECEIPT_TEXT_LENGTH) } : {}),
    });
  }
  return { ok: true, events: bounded };
}
