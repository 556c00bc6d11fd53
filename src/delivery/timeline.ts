/**
 * One message's story as a timeline, oldest first: received, the send and the provider's answer, each receipt,
 * the timeout sweep if it gave up, and each conversion with every webhook attempt. Pure: built from the rows
 * messageStory() read. Only the latest send attempt's answer is stored (messages keeps one row per message),
 * so earlier attempts show as a count.
 */
import type { ConversionAttemptsTable, ConversionsTable, CrmEventsTable, MessagesTable, ReceiptsTable } from '../ledger/schema.js';
import { RECEIPT_MATCH } from '../ledger/receipts.js';

export interface TimelineEntry {
  at: number | null;
  kind: 'received' | 'held' | 'send' | 'receipt' | 'timeout' | 'conversion' | 'webhook' | 'event';
  summary: string;
  detail: Record<string, string | number | null>;
}

type Row<T> = { [K in keyof T]: T[K] extends { __select__: infer S } ? S : T[K] };
export interface StoryRows {
  message: Omit<MessagesTable, 'activity_json' | 'cost_micros'>;
  receipts: Array<Row<ReceiptsTable>>;
  conversions: Array<Row<ConversionsTable> & { attempt_log: Array<Row<ConversionAttemptsTable>> }>;
  /** CRM events the message's send caused (crm_events.sms_id: a provider's opt-out error → User Consents). */
  events?: Array<Pick<Row<CrmEventsTable>, 'event_id' | 'type' | 'user_id' | 'created_at' | 'sent_at' | 'dead' | 'attempts' | 'http_status' | 'last_error'>>;
}

const MATCH_WORDS: ReadonlyMap<number, string> = new Map([
  [RECEIPT_MATCH.parked, 'parked (no message matched yet)'],
  [RECEIPT_MATCH.applied, 'applied to this message'],
  [RECEIPT_MATCH.setAside, 'set aside after delivery.parked_receipt_ttl'],
]);

function sendAnswer(m: StoryRows['message'], shown: (text: string) => string): string {
  const error = m.error === null ? null : shown(m.error);
  switch (m.state) {
    case 'dispatching':
      return 'under way (no answer recorded yet)';
    case 'held':
      return `not yet: held until ${m.held_until === null ? '?' : new Date(m.held_until).toISOString()}`;
    case 'submitted':
      return `accepted${m.provider_message_id ? ` as ${m.provider_message_id}` : ''}${m.provider_status ? ` (${m.provider_status})` : ''}`;
    case 'rejected':
      return `refused: ${error ?? 'no reason given'}${m.error_code ? ` [${m.error_code}]` : ''}`;
    case 'retryable':
      return `transient error, nothing sent: ${error ?? '?'}`;
    case 'uncertain':
      return `no clear answer, it may have been sent: ${error ?? '?'}`;
  }
}

/**
 * `receiptCheck`: how the provider's receipts are verified (receipt-checks.ts), by provider name. `shownError`:
 * what a provider's error text becomes (the console masks phone numbers in it; the admin API keeps it as stored).
 */
export function buildTimeline(story: StoryRows, receiptCheck: (provider: string) => string, shownError: (text: string) => string = (t) => t): TimelineEntry[] {
  const m = story.message;
  const entries: TimelineEntry[] = [
    {
      at: m.created_at,
      kind: 'received',
      summary: `from the CRM, activity.id ${m.activity_key}${m.intake_note ? `; ${m.intake_note}` : ''}`,
      detail: { request_id: m.request_id, user_id: m.user_id, ...(m.intake_note ? { intake_note: m.intake_note } : {}) },
    },
    ...(m.held_until === null
      ? []
      : [
          {
            at: m.created_at,
            kind: 'held' as const,
            summary: `inside its quiet hours: held until ${new Date(m.held_until).toISOString()}`,
            detail: { held_until: m.held_until },
          },
        ]),
    {
      at: m.dispatched_at,
      kind: 'send',
      summary: `attempt ${m.attempts} to ${m.provider}: ${sendAnswer(m, shownError)}`,
      detail: {
        answered_at: m.submitted_at,
        earlier_attempts: m.attempts > 1 ? m.attempts - 1 : null,
        provider_status: m.provider_status,
        error_code: m.error_code,
      },
    },
  ];
  for (const r of story.receipts) {
    entries.push({
      at: r.received_at,
      kind: 'receipt',
      summary: `from ${r.provider}: ${r.provider_status} → ${r.mapped_status}`,
      detail: {
        error_code: r.error_code,
        matched: MATCH_WORDS.get(r.matched) ?? String(r.matched),
        verified: receiptCheck(r.provider),
        provider_message_id: r.provider_message_id,
      },
    });
  }
  if (m.delivery_source === 'timeout') {
    entries.push({
      at: m.completed_at,
      kind: 'timeout',
      summary: 'no terminal receipt in time: delivery_unknown (a later receipt still replaces it)',
      detail: {},
    });
  }
  for (const c of story.conversions) {
    entries.push({
      at: c.created_at,
      kind: 'conversion',
      summary: `${c.id} queued for the CRM: ${c.delivery_status}`,
      detail: { state: c.posted_at !== null ? 'posted' : c.dead ? 'dead' : 'owed', attempts: c.attempts },
    });
    for (const a of c.attempt_log) {
      const answer = a.http_status === null ? 'no HTTP answer' : `HTTP ${a.http_status}`;
      entries.push({
        at: a.attempted_at,
        kind: 'webhook',
        summary: `conversion ${c.id} posted: ${a.ok ? 'accepted' : 'failed'} (${answer})`,
        detail: { error: a.error === null ? null : shownError(a.error) },
      });
    }
  }
  for (const e of story.events ?? []) {
    const state = e.sent_at !== null ? 'sent to the CRM' : e.dead ? 'dead-lettered' : 'owed to the CRM';
    entries.push({
      at: Number(e.created_at),
      kind: 'event',
      summary: `${e.type} event for user ${e.user_id} queued: ${state}`,
      detail: {
        event_id: e.event_id,
        attempts: e.attempts,
        sent_at: e.sent_at === null ? null : Number(e.sent_at),
        http_status: e.http_status,
        last_error: e.last_error === null ? null : shownError(e.last_error),
      },
    });
  }
  // Stable: entries at the same millisecond keep the order they happen in.
  return entries
    .map((e, i) => ({ e, i }))
    .sort((a, b) => (a.e.at ?? Infinity) - (b.e.at ?? Infinity) || a.i - b.i)
    .map(({ e }) => e);
}
