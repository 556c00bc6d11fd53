/**
 * /metrics series of the conversion outbox (conversion-outbox.ts), registered by its descriptor (conversions.ts) on
 * the gateway's registry: posts and their latency, failures by status class, conversions acknowledged and
 * dead-lettered, the backlog by state (paced by its cost: pacedRead) and the ages of the oldest owed (one index entry
 * each), read at scrape time.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Kysely } from 'kysely';
import { countOutboxBacklog, oldestPendingConversion, oldestUnpostedConversion } from '../ledger/conversions.js';
import type { Database } from '../ledger/schema.js';
import { FAST_CALL_BUCKETS, statusClass } from '../observability/metrics.js';
import { pacedRead } from '../observability/paced-read.js';

export interface WebhookMetrics {
  webhookPosted(seconds: number, result: { ok: true; conversions: number } | { ok: false; status: number | null }): void;
  conversionsDeadLettered(count: number): void;
}

/** `readDb`: the ledger's read connection, so a scrape never waits behind a write (src/ledger/engine/db.ts). */
export function registerConversionMetrics(registry: Registry, sources: { readDb: Kysely<Database>; now: () => number }): WebhookMetrics {
  const registers = [registry];
  const { readDb, now } = sources;
  const webhookDuration = new Histogram({
    name: 'sms_gateway_webhook_post_duration_seconds',
    help: 'Conversion webhook post latency',
    labelNames: ['result'],
    buckets: FAST_CALL_BUCKETS,
    registers,
  });
  const webhookFailures = new Counter({
    name: 'sms_gateway_webhook_failures_total',
    help: 'Conversion webhook posts that failed, by HTTP status class or unreachable',
    labelNames: ['reason'],
    registers,
  });
  const conversionsPosted = new Counter({ name: 'sms_gateway_conversions_posted_total', help: 'Conversions the CRM acknowledged', registers });
  const conversionsDead = new Counter({
    name: 'sms_gateway_conversions_dead_lettered_total',
    help: 'Conversions dead-lettered after their retry budget',
    registers,
  });
  const readBacklog = pacedRead(
    () => countOutboxBacklog(readDb),
    (b) => b.due + b.retrying + b.dead,
  );
  new Gauge({
    name: 'sms_gateway_conversion_outbox',
    help: 'Conversions not yet posted: due (never tried), retrying (backing off), dead (needs a replay)',
    labelNames: ['state'],
    registers,
    async collect() {
      const backlog = await readBacklog();
      for (const state of ['due', 'retrying', 'dead'] as const) this.set({ state }, backlog[state]);
    },
  });
  // Ages read from the ledger at scrape time, in seconds; 0 when nothing is owed.
  const ageGauge = (name: string, help: string, oldest: () => Promise<number | null>) => {
    new Gauge({
      name,
      help,
      registers,
      async collect() {
        const at = await oldest();
        this.set(at === null ? 0 : Math.max(0, (now() - at) / 1000));
      },
    });
  };
  ageGauge(
    'sms_gateway_conversion_oldest_unposted_age_seconds',
    'Age of the oldest conversion not yet posted (dead ones included, as on the console); 0 when none is owed',
    () => oldestUnpostedConversion(readDb),
  );
  // What the conversion-age alert reads: a dead conversion stays until it is replayed, so it would keep that alert
  // firing after the CRM recovered (dead letters have their own alert).
  ageGauge(
    'sms_gateway_conversion_oldest_pending_age_seconds',
    'Age of the oldest conversion the workers still try to post (due or retrying, dead ones excluded); 0 when none',
    () => oldestPendingConversion(readDb),
  );
  return {
    webhookPosted(seconds, result) {
      webhookDuration.observe({ result: result.ok ? 'ok' : 'error' }, seconds);
      if (result.ok) conversionsPosted.inc(result.conversions);
      else webhookFailures.inc({ reason: result.status === null ? 'unreachable' : statusClass(result.status) });
    },
    conversionsDeadLettered: (count) => conversionsDead.inc(count),
  };
}
