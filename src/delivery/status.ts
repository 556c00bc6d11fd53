/**
 * How a receipt moves a message's delivery status (docs/design.md §4, "status only moves forward"). Pure: takes the
 * message's current terminal status (if any) and the receipt's mapped status, returns what to store and report.
 */
import type { DeliveryStatus, MappedStatus } from '../../providers/types.js';

export interface CurrentDelivery {
  delivery_status: DeliveryStatus | null;
  delivery_source: 'receipt' | 'timeout' | null;
}

export type Transition =
  /** Keep the raw provider status; nothing to report (intermediate, or a late receipt after a terminal one). */
  | { kind: 'record-only' }
  /** A terminal status: store it and queue one conversion for the CRM. */
  | { kind: 'report'; status: DeliveryStatus };

export function decideTransition(current: CurrentDelivery, incoming: MappedStatus): Transition {
  if (incoming === 'intermediate') return { kind: 'record-only' };
  if (current.delivery_status === null) return { kind: 'report', status: incoming };
  // A real receipt may replace the delivery_unknown our timeout produced, since it says more than the timeout did.
  if (current.delivery_source === 'timeout' && incoming !== 'delivery_unknown') return { kind: 'report', status: incoming };
  // The first terminal status was reported; a contradicting later one is kept in `receipts`, not re-reported.
  return { kind: 'record-only' };
}
