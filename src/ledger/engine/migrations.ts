/**
 * Frozen migrations: each takes Kysely<any> and imports nothing from the app (docs/design.md §8). Names sort by date,
 * and Kysely's Migrator runs them in the order of their names; they are written here in that order too. A name is
 * stored in each database's migration table: never renamed.
 * Times are epoch milliseconds in bigint columns so both dialects store them the same way.
 */
import { type Kysely, PostgresAdapter, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

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
      await db.schema.createIndex('messages_awaiting_receipt').on('messages').column('submitted_at').where(sql.ref('delivery_status'), 'is', null).execute();

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
      await db.schema.createIndex('receipts_unmatched').on('receipts').columns(['provider', 'provider_message_id']).where(sql.ref('matched'), '=', 0).execute();

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
      await db.schema.createIndex('conversions_due').on('conversions').column('next_attempt_at').where(sql<boolean>`posted_at is null and dead = 0`).execute();

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
  '2026-11-23-10-operator': {
    async up(db) {
      // Player data of the sql operator backend. The whole user record is kept as JSON; the two flags that
      // reconciliation filters on are columns with partial indexes, so a keyset page reads only matching rows.
      await db.schema
        .createTable('operator_users')
        .addColumn('user_id', 'text', (c) => c.primaryKey())
        .addColumn('record_json', 'text', (c) => c.notNull())
        .addColumn('is_blocked', 'integer', (c) => c.notNull())
        .addColumn('is_excluded', 'integer', (c) => c.notNull())
        .addColumn('block_note', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('exclusion_note', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('operator_users_blocked').on('operator_users').column('user_id').where(sql.ref('is_blocked'), '=', 1).execute();
      await db.schema.createIndex('operator_users_excluded').on('operator_users').column('user_id').where(sql.ref('is_excluded'), '=', 1).execute();

      await db.schema
        .createTable('operator_consents')
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('opted_in', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('operator_consents_pk', ['user_id', 'type'])
        .execute();
      await db.schema
        .createIndex('operator_consents_opted_in')
        .on('operator_consents')
        .columns(['type', 'user_id'])
        .where(sql.ref('opted_in'), '=', 1)
        .execute();

      await db.schema
        .createTable('operator_bonuses')
        .addColumn('value', 'text', (c) => c.primaryKey())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .execute();

      // One row per bonus or funds credit, with the CRM's X-Crm-* references as received (text: header values).
      // dedup_key (activity id, action id, user id, trigger hash) is unique: the one-action rule of docs/crm-interface.md §C.
      await db.schema
        .createTable('operator_credits')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('dedup_key', 'text', (c) => c.unique())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('bonus_code', 'text', (c) => c.notNull())
        .addColumn('amount', 'double precision')
        .addColumn('currency', 'text')
        .addColumn('request_json', 'text', (c) => c.notNull())
        .addColumn('crm_id', 'text')
        .addColumn('crm_action_id', 'text')
        .addColumn('crm_action_group_id', 'text')
        .addColumn('crm_action_communication_profile_id', 'text')
        .addColumn('crm_activity_id', 'text')
        .addColumn('crm_trigger_hash', 'text')
        .addColumn('crm_player_origin_id', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('http_status', 'integer')
        .addColumn('answer_json', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('operator_credits_user_id').on('operator_credits').column('user_id').execute();
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
  '2026-11-24-30-trust': {
    async up(db) {
      // Console sessions ended by sign-out before their cookie expires; a row can go once its session would have.
      await db.schema
        .createTable('console_sessions_revoked')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '2026-11-24-31-unresolved-sends': {
    async up(db) {
      // The sweep looks for sends left dispatching or uncertain (delivery/sweep.ts): only those rows are indexed.
      await db.schema
        .createIndex('messages_unresolved_sends')
        .on('messages')
        .column('dispatched_at')
        .where(sql<boolean>`state in ('dispatching', 'uncertain')`)
        .execute();
    },
  },
  '2026-11-24-40-events': {
    async up(db) {
      // The outbox of real-time events to the CRM (docs/crm-interface.md §7): relayed from the operator's platform or
      // caused by the gateway's own data changes. `id` is the order of acceptance; rows of one user_id are
      // delivered in that order. dedup_key (bonus user_bonus_id + status, not Ongoing) makes a repeat answer the
      // first event instead of sending a second one.
      await db.schema
        .createTable('crm_events')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('event_id', 'text', (c) => c.notNull().unique())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('method', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('payload_json', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('dedup_key', 'text', (c) => c.unique())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('claimed_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('claim_token', 'text')
        .addColumn('sent_at', 'bigint')
        .addColumn('http_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('dead', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // The event outbox's claim and the per-user order check read only rows still owed to the CRM.
      await db.schema
        .createIndex('crm_events_unsent_user')
        .on('crm_events')
        .columns(['user_id', 'id'])
        .where(sql<boolean>`sent_at is null and dead = 0`)
        .execute();
      await db.schema
        .createIndex('crm_events_unsent')
        .on('crm_events')
        .columns(['id', 'next_attempt_at'])
        .where(sql<boolean>`sent_at is null and dead = 0`)
        .execute();
      // The admin listing by user.
      await db.schema.createIndex('crm_events_user').on('crm_events').columns(['user_id', 'id']).execute();
      // The backlog count (metrics, console) and the replay of dead letters read only unsent rows; as with
      // conversions_unposted, sent_at is in the key so that SQLite sees the count covered by the index.
      await db.schema
        .createIndex('crm_events_unsent_state')
        .on('crm_events')
        .columns(['dead', 'attempts', 'created_at', 'sent_at'])
        .where(sql.ref('sent_at'), 'is', null)
        .execute();
    },
  },
  '2026-11-24-41-consents': {
    async up(db) {
      // Who last changed a consent: null for the operator's own data (admin API, import users, the CRM's POST),
      // 'sms' for a STOP/START keyword, 'provider' for a provider's opt-out error. An operator load does not
      // re-opt-in over an opt-out of the last two made after its record (src/operator/players/load-players.ts).
      await db.schema.alterTable('operator_consents').addColumn('source', 'text').execute();
      // The player's number in E.164 (mobile_prefix + mobile), to find who sent an inbound STOP.
      await db.schema.alterTable('operator_users').addColumn('mobile_e164', 'text').execute();
      await db.schema.createIndex('operator_users_mobile_e164').on('operator_users').column('mobile_e164').execute();
      // Rows loaded before this migration: the same rule as playerE164 (src/operator/players/player-phone.ts), frozen here.
      const e164 = (prefix: unknown, mobile: unknown): string | null => {
        const m = typeof mobile === 'string' ? mobile.trim() : '';
        if (/^(\+|00)/.test(m)) return `+${m.replace(/^00/, '').replace(/\D/g, '')}`;
        const digits = m.replace(/\D/g, '').replace(/^0+/, '');
        const code = typeof prefix === 'string' ? prefix.replace(/\D/g, '') : '';
        return digits && code ? `+${code}${digits}` : null;
      };
      let after = '';
      for (;;) {
        const rows: Array<{ user_id: string; record_json: string }> = await db
          .selectFrom('operator_users')
          .select(['user_id', 'record_json'])
          .where('user_id', '>', after)
          .orderBy('user_id')
          .limit(1_000)
          .execute();
        for (const row of rows) {
          const record = JSON.parse(row.record_json) as { mobile_prefix?: unknown; mobile?: unknown };
          const number = e164(record.mobile_prefix, record.mobile);
          if (number) await db.updateTable('operator_users').set({ mobile_e164: number }).where('user_id', '=', row.user_id).execute();
        }
        if (rows.length < 1_000) break;
        after = rows[rows.length - 1]!.user_id;
      }
      // Every inbound SMS (STOP, START or anything else), stored once per provider message id.
      await db.schema
        .createTable('inbound_messages')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('provider_message_id', 'text', (c) => c.notNull())
        .addColumn('from_number', 'text', (c) => c.notNull())
        .addColumn('to_number', 'text', (c) => c.notNull())
        .addColumn('content', 'text')
        .addColumn('action', 'text')
        .addColumn('matched_user_ids', 'text', (c) => c.notNull())
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('inbound_messages_provider_id', ['provider', 'provider_message_id'])
        .execute();
      await db.schema.createIndex('inbound_messages_from').on('inbound_messages').columns(['from_number', 'received_at']).execute();
    },
  },
  '2026-11-24-50-smpp': {
    async up(db) {
      // Whether a receipt reports one part of a concatenated message (ReceiptEvent.perPart), kept so that a parked
      // receipt is rolled up with its message's other parts when it is matched later: SMPP receipts carry only the
      // SMSC's id of their part and may arrive before the submit_sm_resp that tells us that id.
      await db.schema
        .alterTable('receipts')
        .addColumn('per_part', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  '2026-11-24-60-console': {
    async up(db) {
      // The console's and GET /admin/messages' search (src/ledger/message-search.ts): every filter has an index
      // that ends in created_at, so a newest-first page reads only the rows it shows. The player's id and the
      // request id are columns of their own (set at insert); older rows get user_id from their stored activity.
      await db.schema.alterTable('messages').addColumn('user_id', 'text').execute();
      await db.schema.alterTable('messages').addColumn('request_id', 'text').execute();
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await sql`update messages set user_id = ${postgres ? sql`activity_json::json->>'user_id'` : sql`json_extract(activity_json, '$.user_id')`}
        where user_id is null`.execute(db);
      await db.schema.createIndex('messages_created').on('messages').column('created_at').execute();
      await db.schema.createIndex('messages_recipient').on('messages').columns(['recipient', 'created_at']).execute();
      await db.schema.createIndex('messages_user_id').on('messages').columns(['user_id', 'created_at']).where(sql.ref('user_id'), 'is not', null).execute();
      await db.schema.createIndex('messages_provider_created').on('messages').columns(['provider', 'created_at']).execute();
      // One status word per message: its terminal delivery status once known, else its send state.
      await db.schema.createIndex('messages_status').on('messages').expression(sql`coalesce(delivery_status, state), created_at`).execute();
    },
  },
  '2026-11-24-70-console-events': {
    async up(db) {
      // The message whose send caused an event (a provider's opt-out error at send: a User Consents event), so the
      // message's timeline can show it exactly; null for every other event.
      await db.schema.alterTable('crm_events').addColumn('sms_id', 'text').execute();
      await db.schema.createIndex('crm_events_sms_id').on('crm_events').column('sms_id').where(sql<boolean>`sms_id is not null`).execute();
      // The console's list of dead events, newest first, reads only dead rows (few, however many were sent).
      await db.schema.createIndex('crm_events_dead').on('crm_events').column('id').where(sql<boolean>`dead = 1`).execute();
    },
  },
  '2026-11-24-81-search-keys': {
    async up(db) {
      // messages_user_id cost every stored message a write at a random place in an index as big as the table
      // (players arrive in no order), as messages_recipient does: the two were most of what the search indexes
      // cost the send path (bench/README.md). A player's messages go to the player's few numbers, so the search
      // by player reads those numbers here and then messages_recipient; a message to a number its player already
      // had only reads this table. Rows are never deleted: a pair without messages only costs an empty seek.
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await db.schema
        .createTable('message_user_recipients')
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('recipient', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('message_user_recipients_pk', ['user_id', 'recipient'])
        // SQLite: the primary key is the table, not a second b-tree beside a rowid one.
        .$call((t) => (postgres ? t : t.modifyEnd(sql`without rowid`)))
        .execute();
      await sql`insert into message_user_recipients (user_id, recipient)
        select distinct user_id, recipient from messages where user_id is not null`.execute(db);
      await db.schema.dropIndex('messages_user_id').execute();
    },
  },
  '2026-11-25-24-consent-products': {
    async up(db) {
      // UK product-level consents: the products a channel is opted in for, as a JSON array of strings; null when
      // the channel has no product split (opted in for every product, or opted out).
      await db.schema.alterTable('operator_consents').addColumn('products', 'text').execute();
    },
  },
  '2026-11-25-25-credit-delivery': {
    async up(db) {
      // Credits of the sql backend are pushed to the operator (operator.credits.url) from this outbox: `delivery` is
      // null for rows never meant for it (the http backend forwards at once), 'due', 'delivered' or 'dead'.
      const table = () => db.schema.alterTable('operator_credits');
      await table().addColumn('delivery', 'text').execute();
      await table()
        .addColumn('delivery_attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await table().addColumn('next_delivery_at', 'bigint').execute();
      await table()
        .addColumn('delivery_claimed_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await table().addColumn('delivery_claim_token', 'text').execute();
      await table().addColumn('delivered_at', 'bigint').execute();
      await table().addColumn('delivery_error', 'text').execute();
      // The credit outbox and the dead-letter replay read only the rows still owed, never the delivered millions.
      await db.schema
        .createIndex('operator_credits_due')
        .on('operator_credits')
        .columns(['delivery', 'next_delivery_at'])
        .where(sql<boolean>`delivery in ('due', 'dead')`)
        .execute();
    },
  },
  '2026-11-25-90-provider-lookups': {
    async up(db) {
      // What the provider said when asked whether it has a send whose answer was lost (delivery/lookups.ts):
      // `pending` (not asked yet), `found`, `absent` or `unknown` (its API cannot tell); null when never needed.
      await db.schema.alterTable('messages').addColumn('lookup_result', 'text').execute();
      // When the provider was last asked for a silent message's status (delivery.status_query_after), so it is
      // asked once, not at every sweep.
      await db.schema.alterTable('messages').addColumn('status_queried_at', 'bigint').execute();
      // Only sends whose process was lost ever get a lookup_result: the sweep finds them here, not by a scan.
      // The post a conversion first went out in (ConversionsTable.post_group), so a repeat after a crash is the same post.
      await db.schema.alterTable('conversions').addColumn('post_group', 'text').execute();
      await db.schema.createIndex('messages_lookups').on('messages').column('dispatched_at').where(sql.ref('lookup_result'), 'is not', null).execute();
    },
  },
  '2026-11-25-90-retention': {
    async up(db) {
      // The retention pass (src/ledger/retention.ts) deletes the oldest final rows a chunk at a time: each chunk
      // reads these in time order instead of scanning the table. Times only grow, so each insert adds to the end.
      await db.schema.createIndex('receipts_received').on('receipts').column('received_at').execute();
      await db.schema.createIndex('crm_events_created').on('crm_events').column('created_at').execute();
      await db.schema.createIndex('inbound_messages_received').on('inbound_messages').columns(['received_at', 'id']).execute();
    },
  },
  '2026-11-25-90-traces-and-instances': {
    async up(db) {
      // The send's traceparent, so a receipt or conversion handled in a later request joins the send's trace
      // (docs/tracing.md); and the same for an event, sent on to the CRM with it. Null when tracing is off.
      await db.schema.alterTable('messages').addColumn('traceparent', 'text').execute();
      await db.schema.alterTable('crm_events').addColumn('traceparent', 'text').execute();
      // One row per running gateway process, refreshed every server.instance_heartbeat: the live ones split each
      // provider's rate and concurrency limits (docs/shared-limits.md).
      await db.schema
        .createTable('gateway_instances')
        .addColumn('instance_id', 'text', (c) => c.primaryKey())
        .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '2026-11-25-91-credits-dead-list': {
    async up(db) {
      // The console's dead-credit list (/console/dead-credits), newest first: the few dead rows by id, without
      // walking the delivered ones. With a player it reads operator_credits_user_id.
      await db.schema.createIndex('operator_credits_dead').on('operator_credits').column('id').where(sql<boolean>`delivery = 'dead'`).execute();
    },
  },
  '2026-11-28-10-intake-notes': {
    async up(db) {
      // What was read otherwise than the CRM sent it (MessagesTable.intake_note), for the message's timeline.
      await db.schema.alterTable('messages').addColumn('intake_note', 'text').execute();
    },
  },
  '2026-11-28-40-bonus-once-per-player': {
    async up(db) {
      // A bonus status change is one player's (src/events/bonus-event.ts, bonusOnceKey): the key was
      // ["bonus", user_bonus_id, status], so a second player's event with the same user_bonus_id was taken for the
      // first's and never sent. Each stored key gets its row's player, ["bonus", user_id, user_bonus_id, status]; the
      // old keys were unique without the player, so the new ones are too. Read in key order through the unique
      // index, which holds only keyed rows worth reading; a key rewritten here has four entries and is passed by.
      // Written by JSON.stringify, as the relay writes them, a thousand rows per statement.
      await db.schema.alterTable('crm_events').addColumn('body_fingerprint', 'text').execute();
      let after = '';
      for (;;) {
        const rows: Array<{ id: number | string; user_id: string; dedup_key: string }> = await db
          .selectFrom('crm_events')
          .select(['id', 'user_id', 'dedup_key'])
          .where('dedup_key', '>', after)
          .orderBy('dedup_key')
          .limit(1_000)
          .execute();
        const changes = rows.flatMap((row) => {
          const old = JSON.parse(row.dedup_key) as unknown[];
          return old.length === 3 && old[0] === 'bonus' ? [{ id: row.id, key: JSON.stringify(['bonus', row.user_id, old[1], old[2]]) }] : [];
        });
        if (changes.length > 0)
          await db
            .updateTable('crm_events')
            .set({
              dedup_key: sql`case id ${sql.join(
                changes.map((c) => sql`when ${c.id} then ${c.key}`),
                sql` `,
              )} end`,
            })
            .where(
              'id',
              'in',
              changes.map((c) => c.id),
            )
            .execute();
        if (rows.length < 1_000) break;
        after = rows[rows.length - 1]!.dedup_key;
      }
      // body_fingerprint stays null on those rows: their bodies were stored as sent (without credit_id, with
      // crm_references), not as received, so a repeat of one is refused naming it rather than guessed the same.
    },
  },
  '2026-11-29-10-search-order': {
    async up(db) {
      // The search pages newest first in (created_at, sms_id) order (src/ledger/message-search.ts). With created_at
      // alone in the key, ties were sorted by sms_id as they were read, and on an analysed ledger of millions SQLite
      // preferred skip-scanning messages_status over its few status words for a time range, then sorted every row in
      // the range: a week of 5 million messages took 2.2 s at p95 (bench/README.md, 2026-11-29). With sms_id in the
      // key the index yields the page's order itself and a page reads only its rows, on both databases. Retention's
      // reads in created_at order use it as they used the old one. Times only grow: each insert adds at the end.
      await db.schema.createIndex('messages_created_sms_id').on('messages').columns(['created_at', 'sms_id']).execute();
      await db.schema.dropIndex('messages_created').execute();
    },
  },
  '2026-11-29-30-routing': {
    async up(db) {
      // Where a message went by a route's rules (src/provider-wrappers/route-rules.ts): the route its provider_name
      // picked, the rule that chose its members (0 for the route's own members) and that rule's name. The member that
      // carried it stays in `provider`. Null for a message sent to a provider directly.
      await db.schema.alterTable('messages').addColumn('route', 'text').execute();
      await db.schema.alterTable('messages').addColumn('route_rule', 'integer').execute();
      await db.schema.alterTable('messages').addColumn('route_rule_name', 'text').execute();
      // The admin API's changes to routing that outlive a restart and reach every instance on the database: a
      // suspended provider or route member, a route's or rule's weights, a rule's members. One row per target.
      await db.schema
        .createTable('routing_controls')
        .addColumn('target', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('set_by', 'text', (c) => c.notNull())
        .addColumn('set_at', 'bigint', (c) => c.notNull())
        .execute();
      // Who changed what, when, from what to what (null: no change in force).
      await db.schema
        .createTable('routing_control_audit')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('from_value', 'text')
        .addColumn('to_value', 'text')
        .execute();
    },
  },
  '2026-11-29-40-costs': {
    async up(db) {
      // What each message cost (docs/costs.md): the recipient's country as read, the amount in micro-units of its
      // currency (src/kit/money.ts), and whether the provider reported it or the rate table estimated it. Null until
      // the message is counted (claimed to send), and again once its send is known to have sent nothing.
      await db.schema.alterTable('messages').addColumn('country', 'text').execute();
      await db.schema.alterTable('messages').addColumn('cost_micros', 'bigint').execute();
      await db.schema.alterTable('messages').addColumn('cost_currency', 'text').execute();
      await db.schema.alterTable('messages').addColumn('cost_source', 'text').execute();
      // Spend per UTC day and the dimensions finance reconciles by, kept in the transactions that change a
      // message's cost or delivery, so /admin/costs reads a few rows per day instead of scanning messages. '' stands
      // for "none" in a dimension (a key column cannot be null in a primary key on both dialects).
      await db.schema
        .createTable('cost_daily')
        .addColumn('day', 'bigint', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('country', 'text', (c) => c.notNull())
        .addColumn('brand_id', 'text', (c) => c.notNull())
        .addColumn('activity_id', 'text', (c) => c.notNull())
        .addColumn('action_group_id', 'text', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('messages', 'bigint', (c) => c.notNull())
        .addColumn('segments', 'bigint', (c) => c.notNull())
        .addColumn('delivered', 'bigint', (c) => c.notNull())
        .addColumn('cost_micros', 'bigint', (c) => c.notNull())
        .addColumn('reported_micros', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('cost_daily_pk', ['day', 'provider', 'country', 'brand_id', 'activity_id', 'action_group_id', 'currency'])
        .execute();
      // One row per budget and period: every instance adds to it under its row lock, so the cap holds across them.
      await db.schema
        .createTable('budget_spend')
        .addColumn('budget', 'text', (c) => c.notNull())
        .addColumn('period_start', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('spent_micros', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('budget_spend_pk', ['budget', 'period_start'])
        .execute();
      // Messages whose price is asked of their provider after their final status (Twilio reports none in callbacks).
      await db.schema
        .createTable('price_fetches')
        .addColumn('sms_id', 'text', (c) => c.primaryKey())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('provider_message_id', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('claimed_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('done', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_error', 'text')
        .execute();
      await db.schema.createIndex('price_fetches_due').on('price_fetches').column('next_attempt_at').where(sql.ref('done'), '=', 0).execute();
    },
  },
  '2026-11-29-60-held-sends': {
    async up(db) {
      // Quiet hours: a message accepted inside its window's quiet hours is stored `held` with the time its window
      // opens (shown on the console), and owed to the provider as a row of held_sends, the held sends outbox
      // (src/sms/held-sends.ts). The row keeps the text to send (blanked once it is done, whatever sms.store_content)
      // and the time after which it is never sent.
      await db.schema.alterTable('messages').addColumn('held_until', 'bigint').execute();
      await db.schema
        .createTable('held_sends')
        .addColumn('id', idColumnType(db), (c) => c.primaryKey())
        .addColumn('sms_id', 'text', (c) => c.notNull().unique())
        .addColumn('quiet_window', 'text', (c) => c.notNull())
        .addColumn('content', 'text')
        .addColumn('release_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('claimed_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('claim_token', 'text')
        .addColumn('last_error', 'text')
        .addColumn('dead', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('done_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // The outbox looks only at rows still owed.
      await db.schema.createIndex('held_sends_due').on('held_sends').column('next_attempt_at').where(sql<boolean>`done_at is null and dead = 0`).execute();
    },
  },
  '2026-11-29-70-time-keys': {
    async up(db) {
      // A number and a provider's message id arrive in no order: keyed by them alone, each message went on a random
      // page of a tree as large as the table, a page read and a page written to the WAL each at 5 million messages,
      // nearly all of what a send cost more on a full ledger than on an empty one (bench/README.md, 2026-11-29). Led
      // by the message's UTC day, each insert lands in today's part of the tree, and retention deletes whole old days.
      // The queries name the days they look in (src/ledger/time-buckets.ts), spelled exactly as here. Plain `create
      // index`: the migrator runs in one transaction on PostgreSQL, where `concurrently` cannot, so writes to messages
      // wait while each builds (docs/deployment.md); the old indexes are dropped last, so the drop's exclusive lock
      // (which stops reads too) is held only from there to the commit.
      await db.schema.createIndex('messages_recipient_time').on('messages').expression(sql`(created_at / 86400000), recipient, created_at`).execute();
      await db.schema.createIndex('messages_provider_id_time').on('messages').expression(sql`(created_at / 86400000), provider, provider_message_id`).execute();
      // No statistics on the day (PostgreSQL): autovacuum analyses a large table every few days, and a day newer than
      // its last figures was taken for an empty one, so a receipt's lookup of today and yesterday read them through
      // messages_recipient_time, checking every row of both days for the provider id (125 ms for 20,000 rows).
      // Without figures the planner takes a day for a common value and uses the index whose other keys match.
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        await sql`alter index messages_recipient_time alter column 1 set statistics 0`.execute(db);
        await sql`alter index messages_provider_id_time alter column 1 set statistics 0`.execute(db);
      }
      await db.schema.dropIndex('messages_recipient').execute();
      await db.schema.dropIndex('messages_provider_message_id').execute();
    },
  },
  '2026-11-29-80-parked-receipt-price': {
    async up(db) {
      // The price a parked receipt reported (docs/costs.md), so that it replaces its message's estimate when the
      // message is found. Null on every other receipt: an applied receipt's price is on its message already.
      await db.schema.alterTable('receipts').addColumn('price_micros', 'bigint').execute();
      await db.schema.alterTable('receipts').addColumn('price_currency', 'text').execute();
    },
  },
  '2026-11-29-90-provider-id-only': {
    async up(db) {
      // Within its day a provider's message id still arrives in no order: the last random write of a send, and what a
      // batch on a full ledger cost more than on an empty one (bench/README.md, "2026-11-29 (day): only the messages
      // found by the provider's id"). The messages of providers whose receipts name our sms_id (SmsProvider.receiptsNameSmsId)
      // are found by it and need no entry. The column's default, 0, keeps every message sent before this in the
      // index (adding a column with a constant default rewrites no row, on either database); the claim and the
      // record write 1 for the others. The lookup spells `= 0` as a literal too (receipt-targets.ts), so a plan made
      // without the bound values can use the index.
      await db.schema
        .alterTable('messages')
        .addColumn('receipts_name_sms_id', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex('messages_provider_id_only')
        .on('messages')
        .expression(sql`(created_at / 86400000), provider, provider_message_id`)
        .where(sql.ref('receipts_name_sms_id'), '=', 0)
        .execute();
      if (db.getExecutor().adapter instanceof PostgresAdapter) await sql`alter index messages_provider_id_only alter column 1 set statistics 0`.execute(db);
      await db.schema.dropIndex('messages_provider_id_time').execute();
    },
  },
  '2026-11-29-95-recipient-messages': {
    async up(db) {
      // SQLite: the number's index leaves messages for a table of its own, whose rows are never deleted one by one.
      // Within its day a number arrives in no order, so retention, deleting messages oldest first, took each message's
      // entry out of a random page of messages_recipient_time: 4 of the 6.5 KB of WAL a deleted message wrote
      // (bench/README.md "Retention: the number's entries by the day"). Here retention deletes a day's entries
      // together once the day is past (src/ledger/retention.ts), in key order; an entry whose message is gone or
      // blanked meanwhile is skipped by every reader, which checks the message's number. A send writes the same entry
      // as before, in its own tree.
      // PostgreSQL: a delete leaves the index's entries to vacuum, which reads each index whole, so the index costs
      // retention nothing per message; a table would cost each message a heap row more (125 bytes at 30 million).
      // The same name is a view over the index there, and the same queries read it (its expression is the index's).
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        await sql`create view recipient_messages as select created_at / 86400000 as day, recipient, created_at, sms_id from messages`.execute(db);
        return;
      }
      await db.schema
        .createTable('recipient_messages')
        .addColumn('day', 'integer', (c) => c.notNull())
        .addColumn('recipient', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('sms_id', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('recipient_messages_pk', ['day', 'recipient', 'created_at', 'sms_id'])
        .modifyEnd(sql`without rowid`)
        .execute();
      // In key order (the old index yields most of it), so the table is written page after page; a blanked number
      // has nothing to find.
      await sql`insert into recipient_messages (day, recipient, created_at, sms_id)
        select created_at / 86400000, recipient, created_at, sms_id from messages where recipient <> '[blanked]'
        order by created_at / 86400000, recipient, created_at, sms_id`.execute(db);
      await db.schema.dropIndex('messages_recipient_time').execute();
    },
  },
  '2026-11-30-10-owed-by-age': {
    async up(db) {
      // The /metrics ages (the oldest conversion owed, the oldest event unsent) were a min() over every owed row, each
      // read from its table: at a backlog of a million each took a third of a second, on SQLite with the event loop
      // stopped, every scrape (bench/README.md "The outboxes' gauges at a backlog of a million"). With the time right
      // after `dead`, each age is the first entry of its state's part. The counts stay covered: `attempts` and the
      // partial index's column are still in the key.
      await db.schema.dropIndex('conversions_unposted').execute();
      await db.schema
        .createIndex('conversions_unposted')
        .on('conversions')
        .columns(['dead', 'created_at', 'attempts', 'posted_at'])
        .where(sql.ref('posted_at'), 'is', null)
        .execute();
      await db.schema.dropIndex('crm_events_unsent_state').execute();
      await db.schema
        .createIndex('crm_events_unsent_state')
        .on('crm_events')
        .columns(['dead', 'created_at', 'attempts', 'sent_at'])
        .where(sql.ref('sent_at'), 'is', null)
        .execute();
      // The event claim's heads, min(id) of each player's unsent events: SQLite reads a row for a column only the
      // partial index's predicate names, so with `dead` and `sent_at` in the key the heads come from the index alone.
      await db.schema.dropIndex('crm_events_unsent_user').execute();
      await db.schema
        .createIndex('crm_events_unsent_user')
        .on('crm_events')
        .columns(['user_id', 'id', 'dead', 'sent_at'])
        .where(sql<boolean>`sent_at is null and dead = 0`)
        .execute();
      // The held sends' backlog read the whole table, the rows done long ago included, every scrape: the same index.
      await db.schema
        .createIndex('held_sends_owed')
        .on('held_sends')
        .columns(['dead', 'created_at', 'attempts', 'done_at'])
        .where(sql.ref('done_at'), 'is', null)
        .execute();
    },
  },
  '2026-11-30-20-event-heads': {
    async up(db) {
      // The event claim found each player's oldest owed event by grouping every owed event, each round: at a million
      // owed, a third of a second a round with SQLite's event loop stopped, every relay.poll_interval (bench/README.md
      // "The event claim at a backlog of a million"). An owed row now says whether it is its player's head, once the
      // relay has decided it or the head before it has left (src/ledger/events.ts), and the claim reads the heads by
      // when they are due. The events owed now are left undecided: the relay decides them, oldest first, a slice a
      // round. Deciding them here wrote every owed row in the migration's transaction: 46 s at a million owed on
      // PostgreSQL, with the table locked by the new column all that time.
      await db.schema.alterTable('crm_events').addColumn('head', 'integer').execute();
      await db.schema
        .createIndex('crm_events_due_heads')
        .on('crm_events')
        .columns(['next_attempt_at', 'id'])
        .where(sql<boolean>`head = 1 and sent_at is null and dead = 0`)
        .execute();
      await db.schema
        .createIndex('crm_events_undecided')
        .on('crm_events')
        .column('id')
        .where(sql<boolean>`head is null and sent_at is null and dead = 0`)
        .execute();
    },
  },
  '2026-11-30-30-byte-order-text': {
    async up(db) {
      // PostgreSQL compares text by the database's collation unless a column names its own. A database made with a
      // language's locale (en_US.UTF-8: the official image's default, and Debian's initdb under that LANG) then
      // compares every key of every index through the C library's collation, which cost batches 22% of their rate
      // and the database half again its CPU a message against a database in the C locale (bench/README.md "Text
      // compared byte by byte on PostgreSQL"). Every key the ledger holds is an identifier, a number, a status or
      // a provider's text, none ordered for a reader: each text column compares byte by byte from here on, as
      // SQLite's do, whatever locale the database was made in. Every table's, so that a column compared with
      // another (a join on sms_id, a number with a number) has its collation and can use its index; a later
      // migration's text columns say `collate "C"` for the same reason (test/ledger/byte-order-text.test.ts).
      // A column's new collation rebuilds the indexes on it, not its rows.
      // SQLite compares text byte by byte already.
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      const { rows: layout } = await sql<{ partitioned: boolean }>`
        select exists (select 1 from pg_partitioned_table p join pg_class c on c.oid = p.partrelid
          where c.relname = 'messages' and c.relnamespace = current_schema()::regnamespace) as partitioned`.execute(db);
      // A ledger partitioned by day before this migration: sms_id is the partition key of messages and receipts, and
      // a partition key's collation cannot change; every other table's sms_id keeps the same collation, so that it is
      // compared as messages.sms_id is and finds messages by its index. A ledger partitioned after it takes its
      // tables' collations over (partitionByDay).
      const keep = layout[0]?.partitioned ? ['sms_id'] : [];
      const { rows } = await sql<{ table: string; column: string }>`
        select c.relname as table, a.attname as column from pg_attribute a join pg_class c on c.oid = a.attrelid
        where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
          and c.relname not like 'kysely_migration%' and a.attnum > 0 and not a.attisdropped
          and a.atttypid = 'text'::regtype and a.attcollation <> 'pg_catalog."C"'::regcollation
        order by c.relname, a.attnum`.execute(db);
      const byTable = new Map<string, string[]>();
      for (const { table, column } of rows) if (!keep.includes(column)) byTable.set(table, [...(byTable.get(table) ?? []), column]);
      // An index built again forgets its columns' statistics targets (the day's 0 of 2026-11-29-70-time-keys), and a
      // partition's index its name too: each table's or parent's target is read first, and set again after on it and
      // on every index of its partitions (each day's table was given its parent's: partitions.ts).
      const { rows: targets } = await sql<{ index: string; column: number; target: number }>`
        select c.relname as index, a.attnum as column, a.attstattarget as target from pg_attribute a join pg_class c on c.oid = a.attrelid
        where c.relnamespace = current_schema()::regnamespace and c.relkind in ('i', 'I') and not c.relispartition
          and a.attstattarget >= 0`.execute(db);
      const { rows: analysed } = await sql<{ table: string }>`
        select distinct tablename as table from pg_stats where schemaname = current_schema()`.execute(db);
      // A view's column cannot change type under it: recipient_messages is made again over the same expression.
      await sql`drop view if exists recipient_messages`.execute(db);
      for (const [table, columns] of byTable) {
        // One statement a table, so its indexes are built once.
        const changes = columns.map((column) => sql`alter column ${sql.id(column)} type text collate "C"`);
        await sql`alter table ${sql.table(table)} ${sql.join(changes)}`.execute(db);
      }
      await sql`create view recipient_messages as select created_at / 86400000 as day, recipient, created_at, sms_id from messages`.execute(db);
      for (const { index, column, target } of targets) {
        const { rows: tree } = await sql<{ name: string }>`
          select relname as name from pg_class where oid = ${index}::regclass
          union select c.relname from pg_partition_tree(${index}::regclass) t join pg_class c on c.oid = t.relid`.execute(db);
        for (const { name } of tree) {
          await sql`alter index ${sql.table(name)} alter column ${sql.raw(String(Number(column)))} set statistics ${sql.raw(String(Number(target)))}`.execute(
            db,
          );
        }
      }
      // A column's new type takes its statistics with it (without this, 25 of messages' 37 columns had none after the
      // migration at 5 million messages), and the planner would read those columns blind until autovacuum next
      // analyses the table: after a tenth of it changed, or never where it is off. Each table that had statistics is
      // sampled again, seconds at that size; one never analysed (a new ledger's) is left so.
      for (const { table } of analysed) if (byTable.has(table)) await sql`analyze ${sql.table(table)}`.execute(db);
    },
  },
  '2026-12-01-10-recent-number-entries': {
    async up(db) {
      // SQLite: a send writes its number's entry here, keyed by the hour, not into recipient_messages. Today's part of
      // that tree grows with the day's sends (about 100 MB by evening at 5 million a day) and a number arrives in no
      // order, so each entry landed on a page of its own that the writer read and wrote back: on a ledger holding a
      // day of 5 million messages, that insert was the whole of the batches' shortfall against an empty ledger
      // (bench/README.md "The number's entries by the hour"). Here the current hour's part takes the inserts, small
      // enough that a batch's entries share its pages. Once a day is over, the serving process moves its entries into
      // recipient_messages in key order, where that day's part is new: each page is filled once
      // (moveNumberEntriesOfDay). A reader seeks both (src/ledger/number-messages.ts).
      // PostgreSQL: the entries are messages' own index (recipient_messages is a view there).
      if (db.getExecutor().adapter instanceof PostgresAdapter) return;
      await db.schema
        .createTable('recipient_messages_recent')
        .addColumn('hour', 'integer', (c) => c.notNull())
        .addColumn('recipient', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('sms_id', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('recipient_messages_recent_pk', ['hour', 'recipient', 'created_at', 'sms_id'])
        .modifyEnd(sql`without rowid`)
        .execute();
    },
  },
  '2026-12-01-20-recent-player-numbers': {
    async up(db) {
      // A send records its (player, number) pair here, by the hour, not in message_user_recipients. That table's key
      // is random by player and holds every pair the ledger keeps (4.2 million at 30 million messages), so checking a
      // known pair read a page of its own for each message: on SQLite 63% of what single sends read from the file
      // at 30 million, on PostgreSQL an index and a heap page missing from shared buffers for each message
      // (bench/README.md "The players' numbers by the hour"). Here the current hour's part takes the pairs; once a
      // day is over, the serving process moves them into message_user_recipients in player order, each page read
      // once (movePlayerNumbersOfDay). The search by player reads both (src/ledger/message-search.ts).
      // Text compared byte by byte on PostgreSQL, as every text column since 2026-11-30-30-byte-order-text.
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      const text = postgres ? sql`text collate "C"` : sql`text`;
      await db.schema
        .createTable('message_user_recipients_recent')
        .addColumn('hour', 'integer', (c) => c.notNull())
        .addColumn('user_id', text, (c) => c.notNull())
        .addColumn('recipient', text, (c) => c.notNull())
        .addPrimaryKeyConstraint('message_user_recipients_recent_pk', ['hour', 'user_id', 'recipient'])
        .$call((t) => (postgres ? t : t.modifyEnd(sql`without rowid`)))
        .execute();
    },
  },
};
