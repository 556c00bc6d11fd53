/**
 * The outbox kinds by the name their wake-up uses: one word for "rows were queued or replayed, look now". The names
 * are the descriptors' (src/outbox/descriptor.ts), listed in src/outboxes.ts.
 */
export type OutboxKindName = string;

/**
 * Tells a kind's outbox to look at once: rows of that kind were committed (a receipt's conversion, an accepted event)
 * or replayed. Nothing happens when that kind's outbox does not run in this process (it finds them on its timer, or
 * the cron `flush` does).
 */
export type Wake = (kind: OutboxKindName) => void;
