/**
 * Frozen migrations: each takes Kysely<any> and imports nothing from the app (STYLE: Database). Names sort by date.
 * Times are epoch milliseconds in bigint columns so both dialects store them the same way.
 */
import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/** Auto-increment primary keys are the one column type the two dialects spell differently. */
function idColumnType(db: Kysely<any>) {
  return db.getExecutor().adapter instanceof PostgresAdapter ? sql`bigserial` : sql`integer`;
}

export const migrations: Record<string, Migration> = {
  '2026-11-23-01-messages': {
    async up(db) {
      await db.schema
        .createTable('messages')
        .addColumn('sms_id', 'text', (c) => c.primaryKey())
        .addColumn('activity_key', 'text', (c) => c.notNull().unique())
        .addColumn('activity_json', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('provider_message_id', 'text')
        .addColumn('recipient', 'text', (c) => c.notNull())
        .addColumn('sender', 'text')
        .addColumn('encoding', 'text', (c) => c.notNull())
        .addColumn('segments', 'integer', (c) => c.notNull())
        .addColumn('content', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('error_code', 'text')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('provider_status', 'text')
        .addColumn('delivery_status', 'text')
        .addColumn('delivery_source', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('dispatched_at', 'bigint', (c) => c.notNull())
        .addColumn('submitted_at', 'bigint')
        .addColumn('completed_at', 'bigint')
        .execute();
      await db.schema.createIndex('messages_provider_message_id').on('messages').columns(['provider', 'provider_message_id']).execute();
      // The unknown-timeout sweep looks only at submitted messages without a terminal status.
      await db.schema
        .createIndex('messages_awaiting_receipt')
        .on('messages')
        .column('submitted_at')
        .where(sql.ref('delivery_status'), 'is', null)
        .execute();

      await db.schema
        .createTable('message_parts')
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('provider_message_id', 'text', (c) => c.notNull())
        .addColumn('sms_id', 'text', (c) => c.notNull())
        .addColumn('part_index', 'integer', (c) => c.notNull())
        .addColumn('status', 'text')
        .addPrimaryKeyConstraint('message_parts_pk', ['provider', 'provider_message_id'])
        .execute();
      await db.schema.createIndex('message_parts_sms_id').on('message_parts').column('sms_id').execute();
    },
  },
  '2026-11-23-02-delivery': {
    async up(db) {
      await db.schema
        .createTable('receipts')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('dedup_key', 'text', (c) => c.notNull().unique())
        .addColumn('sms_id', 'text')
        .addColumn('provider_message_id', 'text')
        .addColumn('provider_status', 'text', (c) => c.notNull())
        .addColumn('mapped_status', 'text', (c) => c.notNull())
        .addColumn('error_code', 'text')
        .addColumn('matched', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('receipts_sms_id').on('receipts').column('sms_id').execute();
      await db.schema
        .createIndex('receipts_unmatched')
        .on('receipts')
        .columns(['provider', 'provider_message_id'])
        .where(sql.ref('matched'), '=', 0)
        .execute();

      await db.schema
        .createTable('conversions')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('sms_id', 'text', (c) => c.notNull())
        .addColumn('delivery_status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('claimed_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('claim_token', 'text')
        .addColumn('posted_at', 'bigint')
        .addColumn('last_error', 'text')
        .addColumn('dead', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('conversions_sms_id').on('conversions').column('sms_id').execute();
      // Workers look only at rows still owed to the CRM.
      await db.schema
        .createIndex('conversions_due')
        .on('conversions')
        .column('next_attempt_at')
        .where(sql<boolean>`posted_at is null and dead = 0`)
        .execute();

      await db.schema
        .createTable('conversion_attempts')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('conversion_id', 'bigint', (c) => c.notNull())
        .addColumn('attempted_at', 'bigint', (c) => c.notNull())
        .addColumn('ok', 'integer', (c) => c.notNull())
        .addColumn('http_status', 'integer')
        .addColumn('error', 'text')
        .execute();
      await db.schema.createIndex('conversion_attempts_conversion').on('conversion_attempts').column('conversion_id').execute();
    },
  },
  '2026-11-23-20-stats': {
    async up(db) {
      // Per-minute and per-hour counts of send outcomes and terminal statuses, kept in the transactions that
      // record them, so the console reads a few hundred rows instead of scanning messages.
      await db.schema
        .createTable('delivery_stats')
        .addColumn('period', 'text', (c) => c.notNull())
        .addColumn('bucket_start', 'bigint', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('delivery_stats_pk', ['period', 'bucket_start', 'provider', 'outcome'])
        .execute();
      // Counting the outbox backlog and replaying dead letters read only the rows not yet posted, never the
      // millions already posted. posted_at (always null here) is in the key only so that SQLite sees the
      // backlog count covered by the index and never visits the table.
      await db.schema
        .createIndex('conversions_unposted')
        .on('conversions')
        .columns(['dead', 'attempts', 'posted_at'])
        .where(sql.ref('posted_at'), 'is', null)
        .execute();
    },
  },
};
